#include "drover/daemons/render.h"

#include <fmt/format.h>

#include <iostream>

#include "drover/cli/text.h"
#include "drover/control/contract.h"
#include "drover/exec/kubernetes/render.h"
#include "drover/model/executor.h"
#include "drover/spec/parse.h"
#include "drover/spec/policy.h"

namespace drover::daemons {

using cli::ReadSpecFile;
using cli::ReportError;
using cli::SpecOptionsFor;

namespace {

// The same defaults as control::Options; value outputs stage where a worker can write.
constexpr int kMasterPortBase = 29'500;
constexpr int kMasterPortSpan = 10'000;
constexpr DurationMs kKillGraceMs = 10'000;
constexpr char kValueOutputsRoot[] = "/tmp/drover-outputs";

// The executor of `queue`: the policy's, with the flags laid over it.
model::ExecutorConfig ExecutorFor(const RenderFlags& flags, const model::Policy* policy,
                                  const std::string& queue) {
  model::ExecutorConfig config;
  if (policy) config = model::ExecutorOf(*policy, queue);
  if (!flags.executor.empty()) config.kind = model::ExecutorKind::kKubernetes;
  model::KubernetesQueueOptions& k = config.kubernetes;
  auto set = [](std::string& field, const std::string& flag) {
    if (!flag.empty()) field = flag;
  };
  set(k.namespace_name, flags.namespace_name);
  set(k.scheduler_name, flags.scheduler_name);
  set(k.kueue_queue, flags.kueue_queue);
  set(k.gang_scheduler_version, flags.gang_scheduler_version);
  set(k.device_class, flags.device_class);
  set(k.mig_device_class, flags.mig_device_class);
  set(k.dra_driver, flags.dra_driver);
  set(k.image, flags.image);
  set(k.service_account, flags.service_account);
  if (!flags.gang_scheduler.empty()) {
    k.gang_scheduler = flags.gang_scheduler == "none" ? "" : flags.gang_scheduler;
  }
  if (flags.dra) k.dra = true;
  return config;
}

}  // namespace

int RenderCommand(const RenderFlags& flags) {
  constexpr model::ExecutorKind kRendered = model::ExecutorKind::kKubernetes;
  if (!flags.executor.empty() && model::ParseExecutorKind(flags.executor) != kRendered) {
    std::cerr << fmt::format("drover: --executor: '{}' has no manifests to render; expected {}\n",
                             flags.executor, model::ExecutorKindName(kRendered));
    return 2;
  }
  auto text = ReadSpecFile(flags.file);
  if (!text) return ReportError(text.error());
  // Paths stay as written: they are paths inside the container, not on this machine.
  spec::ParseOptions options = SpecOptionsFor(flags.file);
  options.base_dir.clear();
  spec::ParseOutput parsed = spec::ParseDocumentsWithDiagnostics(*text, options);
  for (const spec::Diagnostic& diagnostic : parsed.diagnostics) {
    std::cerr << diagnostic.ToString() << "\n";
  }
  if (!parsed.diagnostics.empty()) return 2;
  std::vector<model::JobSpec> specs = parsed.jobs;
  for (const model::CronSpec& cron : parsed.crons) {
    specs.insert(specs.end(), cron.jobs.begin(), cron.jobs.end());
  }

  std::optional<model::Policy> policy;
  if (!flags.policy_file.empty()) {
    auto policy_text = ReadSpecFile(flags.policy_file);
    if (!policy_text) return ReportError(policy_text.error());
    auto read = spec::ParsePolicy(*policy_text, SpecOptionsFor(flags.policy_file));
    if (!read) return ReportError(read.error());
    policy = std::move(*read);
  }

  std::vector<nlohmann::json> objects;
  int errors = 0;
  for (std::size_t i = 0; i < specs.size(); ++i) {
    model::Job job;
    job.id = JobId(static_cast<std::int64_t>(i + 1));
    job.spec = specs[i];
    // With --queue every job is rendered as submitted to that queue (its executor, KAI's queue).
    if (!flags.queue.empty()) job.spec.queue = flags.queue;
    job.attempts.push_back(model::Attempt{});
    const model::ExecutorConfig executor =
        ExecutorFor(flags, policy ? &*policy : nullptr, job.spec.queue);
    if (executor.kind != model::ExecutorKind::kKubernetes) {
      std::cerr << fmt::format(
          "drover: job '{}': queue '{}' runs on the {} executor; give --executor kubernetes to "
          "render it for Kubernetes\n",
          job.spec.name, job.spec.queue, model::ExecutorKindName(executor.kind));
      ++errors;
      continue;
    }
    control::AttemptContract contract = control::ContractOf(
        job, job.spec.workers, control::MasterPort(job.id, 1, kMasterPortBase, kMasterPortSpan),
        kValueOutputsRoot);
    auto rendered = exec::kubernetes::Render(
        control::MakeExternalLaunch(job, executor, std::move(contract), kKillGraceMs));
    if (!rendered) {
      std::cerr << "drover: " << rendered.error().message << "\n";
      ++errors;
      continue;
    }
    objects.insert(objects.end(), rendered->objects.begin(), rendered->objects.end());
  }
  if (errors > 0) return 2;
  if (flags.output == "json") {
    const nlohmann::json list = {{"apiVersion", "v1"}, {"kind", "List"}, {"items", objects}};
    std::cout << list.dump(2, ' ', false, nlohmann::json::error_handler_t::replace) << "\n";
  } else {
    std::cout << exec::kubernetes::ToYaml(objects);
  }
  return 0;
}

}  // namespace drover::daemons
