#include "drover/exec/kubernetes/render.h"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <charconv>

#include "drover/common/shell.h"

namespace drover::exec::kubernetes {

using nlohmann::json;

namespace {

constexpr std::int64_t kMiB = 1024 * 1024;
// How long a finished Job (and its pods' logs) stays before the cluster deletes it.
constexpr int kFinishedJobTtlSeconds = 7 * 24 * 3600;
constexpr int kDefaultMasterPort = 29500;

// Node labels of NVIDIA GPU Feature Discovery: the product name and its memory in MiB.
constexpr char kGpuProductLabel[] = "nvidia.com/gpu.product";
constexpr char kGpuMemoryLabel[] = "nvidia.com/gpu.memory";
// The annotation an Indexed Job's pods carry their index in (downward API source of the rank).
constexpr char kCompletionIndexAnnotation[] = "batch.kubernetes.io/job-completion-index";
// How long a gang may wait to be placed before activeDeadlineSeconds, the backstop of the
// container's own deadline (Command), ends it (docs/operations.md, "Timeouts").
constexpr int kQueueAllowanceSeconds = 24 * 3600;

// What each engine reads, by the engine's source (docs/operations.md, "What each engine reads").
// KAI (github.com/kai-scheduler/KAI-Scheduler): the pod-grouper regroups every pod of a batch/v1
// Job into a PodGroup of its own with minMember 1 (pkg/podgrouper/podgrouper/plugins/
// defaultgrouper/default_grouper.go) unless the Job or the pod carries kai.scheduler/
// skip-podgrouper: "true" (pkg/podgrouper/pod_controller.go, v0.15.0+); from v0.14.1 the Job's
// annotation kai.scheduler/batch-min-member sets that PodGroup's minMember
// (pkg/podgrouper/podgrouper/plugins/job/job_grouper.go). Pods join a PodGroup by the pod
// annotation pod-group-name and a queue by the label kai.scheduler/queue
// (pkg/common/constants/constants.go).
constexpr char kKaiSkipPodGrouperAnnotation[] = "kai.scheduler/skip-podgrouper";
constexpr char kKaiBatchMinMemberAnnotation[] = "kai.scheduler/batch-min-member";
constexpr char kKaiPodGroupAnnotation[] = "pod-group-name";
constexpr char kKaiQueueLabel[] = "kai.scheduler/queue";
// Volcano (github.com/volcano-sh/volcano, v1.7.0+): its pg controller leaves a pod that names
// a PodGroup in scheduling.k8s.io/group-name alone (pkg/controllers/podgroup/pg_controller.go);
// the PodGroup's queue and minResources drive enqueueing.
constexpr char kVolcanoGroupAnnotation[] = "scheduling.k8s.io/group-name";
// scheduler-plugins' Coscheduling (github.com/kubernetes-sigs/scheduler-plugins,
// apis/scheduling/v1alpha1/types.go): the pod label naming the PodGroup, read only by a
// scheduler profile that runs the Coscheduling plugin.
constexpr char kCoschedulingLabel[] = "scheduling.x-k8s.io/pod-group";

// An engine version as (major, minor, patch) from "v0.15.0", "0.14" or "1.7.0-rc1".
struct Version {
  int parts[3] = {0, 0, 0};
  auto operator<=>(const Version&) const = default;
  std::string ToString() const { return fmt::format("v{}.{}.{}", parts[0], parts[1], parts[2]); }
};
constexpr Version kKaiExternalPodGroupsVersion{{0, 15, 0}};
constexpr Version kKaiMinMemberVersion{{0, 14, 1}};
constexpr Version kVolcanoMinimumVersion{{1, 7, 0}};

std::optional<Version> ParseVersion(std::string_view text) {
  if (!text.empty() && (text.front() == 'v' || text.front() == 'V')) text.remove_prefix(1);
  if (text.empty()) return std::nullopt;
  Version version;
  for (int i = 0; i < 3 && !text.empty(); ++i) {
    auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), version.parts[i]);
    if (ec != std::errc() || version.parts[i] < 0) return std::nullopt;
    text.remove_prefix(static_cast<std::size_t>(end - text.data()));
    if (text.empty() || text.front() == '-' || text.front() == '+') return version;
    if (text.front() != '.' || i == 2) return std::nullopt;
    text.remove_prefix(1);
  }
  return text.empty() ? std::optional<Version>(version) : std::nullopt;
}

// A label value: at most 63 of [A-Za-z0-9._-], starting and ending alphanumeric; "" if nothing
// of `text` qualifies (the label is then left out).
std::string LabelValue(std::string_view text) {
  std::string value;
  for (char c : text.substr(0, 63)) {
    value +=
        std::isalnum(static_cast<unsigned char>(c)) || c == '.' || c == '_' || c == '-' ? c : '-';
  }
  auto alnum = [](char c) { return std::isalnum(static_cast<unsigned char>(c)) != 0; };
  while (!value.empty() && !alnum(value.back())) value.pop_back();
  while (!value.empty() && !alnum(value.front())) value.erase(value.begin());
  return value;
}

// "0.25" for 250 thousandths.
std::string Fraction(int millis) {
  std::string text = fmt::format("{}.{:03d}", millis / 1000, millis % 1000);
  while (text.back() == '0') text.pop_back();
  if (text.back() == '.') text.pop_back();
  return text;
}

tl::unexpected<Error> FieldError(const model::ExternalLaunch& launch, std::string_view field,
                                 std::string_view message) {
  return InvalidArgument(
      fmt::format("job '{}' ({}): {}: {}", launch.spec.name, launch.ref.name, field, message));
}

// Which scheduler places the pods: the queue's, else the gang scheduler's own name.
std::string SchedulerName(const model::KubernetesQueueOptions& options) {
  if (!options.scheduler_name.empty()) return options.scheduler_name;
  if (options.gang_scheduler == "volcano") return "volcano";
  if (options.gang_scheduler == "kai") return "kai-scheduler";
  return "";
}

bool UnderKai(const model::KubernetesQueueOptions& options) {
  return options.gang_scheduler == "kai" || SchedulerName(options) == "kai-scheduler";
}

json Metadata(const std::string& name, const model::ExternalLaunch& launch, const json& labels) {
  return {
      {"name", name}, {"namespace", launch.executor.kubernetes.namespace_name}, {"labels", labels}};
}

json Toleration(const model::Toleration& toleration) {
  json out = json::object();
  if (!toleration.key.empty()) out["key"] = toleration.key;
  if (toleration.op == model::Toleration::Operator::kExists) {
    out["operator"] = "Exists";
  } else {
    out["operator"] = "Equal";
    out["value"] = toleration.value;
  }
  if (toleration.effect) out["effect"] = std::string(model::TaintEffectName(*toleration.effect));
  return out;
}

// The least GPU memory, in bytes, that a GPU asked for with `gpu_memory` (a whole GPU's minimum)
// may report. Memory sizes are marketed in GB and NVML reports what the driver leaves usable (an
// "80GB" H100 reports 81,559 MiB, an "80GB" A100 81,920 MiB, a "24GB" L4 23,034 MiB): the
// binary units are read as decimal ones, so 80Gi accepts every GPU of 80 GB (80e9 bytes,
// 76,294 MiB) and more.
std::int64_t MinimumGpuMemory(std::int64_t gpu_memory_bytes) {
  constexpr std::int64_t kGiB = 1024 * kMiB;
  return gpu_memory_bytes / kGiB * 1'000'000'000 +
         (gpu_memory_bytes % kGiB * 1'000'000'000 + kGiB - 1) / kGiB;
}

// Pod (anti-)affinity keeping the attempt's pods within one domain of `topology_key`.
json SameDomain(const std::string& name, const std::string& topology_key) {
  return {{"labelSelector", {{"matchLabels", {{kAttemptNameLabel, name}}}}},
          {"topologyKey", topology_key}};
}

// nodeAffinity and podAffinity from the requirements and preferences (GPU models and memory
// by GPU Feature Discovery's labels unless DRA selects the devices).
json Affinity(const model::ExternalLaunch& launch, bool devices_by_dra) {
  const model::Requirements& req = launch.spec.requirements;
  const model::Preferences& pref = launch.spec.preferences;
  const std::string& name = launch.ref.name;
  json affinity = json::object();

  json match = json::array();
  if (!devices_by_dra && !req.gpu_models.empty() && req.mig_profile.empty()) {
    match.push_back({{"key", kGpuProductLabel}, {"operator", "In"}, {"values", req.gpu_models}});
  }
  // The label is the GPU's memory in MiB as NVML reports it. A whole GPU reports at least the
  // marketed size (MinimumGpuMemory); a KAI share (gpu-fraction) gets that fraction of its GPU's
  // memory, so the GPU needs gpu_memory / fraction (KAI's binder refuses a pod with both
  // gpu-fraction and gpu-memory: pkg/binder/plugins/gpusharing/gpu-request/
  // gpu_request_validator.go).
  std::int64_t least_bytes = 0;
  if (!devices_by_dra && req.gpu_memory_bytes > 0 && req.per_worker.gpus > 0) {
    least_bytes = MinimumGpuMemory(req.gpu_memory_bytes);
  } else if (req.gpu_memory_bytes > 0 && req.gpu_share_millis > 0) {
    // gpu_memory * 1000 / share, rounded up, without overflowing.
    const std::int64_t share = req.gpu_share_millis;
    least_bytes = req.gpu_memory_bytes / share * 1000 +
                  (req.gpu_memory_bytes % share * 1000 + share - 1) / share;
  }
  if (least_bytes > 0) {
    const std::int64_t mib = (least_bytes + kMiB - 1) / kMiB;
    match.push_back({{"key", kGpuMemoryLabel},
                     {"operator", "Gt"},
                     {"values", json::array({std::to_string(mib - 1)})}});
  }
  if (!match.empty()) {
    affinity["nodeAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"] = {
        {"nodeSelectorTerms", json::array({{{"matchExpressions", match}}})}};
  }
  json preferred = json::array();
  for (const model::LabelPreference& label : pref.node_labels) {
    json expression = {
        {"key", label.key}, {"operator", "In"}, {"values", json::array({label.value})}};
    json preference = {{"matchExpressions", json::array({expression})}};
    preferred.push_back({{"weight", label.weight}, {"preference", preference}});
  }
  if (!preferred.empty()) {
    affinity["nodeAffinity"]["preferredDuringSchedulingIgnoredDuringExecution"] = preferred;
  }

  if (launch.spec.workers > 1) {
    json required = json::array();
    if (req.same_node) required.push_back(SameDomain(name, "kubernetes.io/hostname"));
    if (!req.topology_level.empty()) required.push_back(SameDomain(name, req.topology_level));
    if (!required.empty()) {
      affinity["podAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"] = required;
    }
    if (!pref.topology_level.empty()) {
      affinity["podAffinity"]["preferredDuringSchedulingIgnoredDuringExecution"] = json::array(
          {{{"weight", 100}, {"podAffinityTerm", SameDomain(name, pref.topology_level)}}});
    }
  }
  return affinity;
}

// {"spec": {"devices": {"requests": [{"name": "gpu", "exactly": EXACTLY}]}}}
json ClaimSpec(const json& exactly) {
  json request = {{"name", "gpu"}, {"exactly", exactly}};
  json devices = {{"requests", json::array({request})}};
  return {{"spec", {{"devices", devices}}}};
}

// A ResourceClaimTemplate (resource.k8s.io/v1, Kubernetes 1.34+) for one worker's devices: its
// whole GPUs of the queue's device_class, or its MIG instance of mig_device_class, with CEL
// selectors on what the DRA driver publishes. NVIDIA's (github.com/NVIDIA/k8s-dra-driver-gpu,
// cmd/gpu-kubelet-plugin/deviceinfo.go and mig.go, v25.8.0+) names its attributes in the domain
// of its driver name gpu.nvidia.com, whatever the class is called: productName is NVML's name
// with spaces ("NVIDIA H100 80GB HBM3", where GPU Feature Discovery's label has dashes), profile
// the MIG profile ("1g.10gb"), and the capacity memory is in bytes.
json DeviceClaimTemplate(const std::string& name, const model::ExternalLaunch& launch,
                         const json& labels) {
  const model::Requirements& req = launch.spec.requirements;
  const model::KubernetesQueueOptions& options = launch.executor.kubernetes;
  const bool mig = !req.mig_profile.empty();
  const std::string driver = json(options.dra_driver).dump();
  const std::string attributes = fmt::format("device.attributes[{}]", driver);
  json exactly = {{"deviceClassName", mig ? options.mig_device_class : options.device_class},
                  {"allocationMode", "ExactCount"},
                  {"count", mig ? 1 : req.per_worker.gpus}};
  json selectors = json::array();
  auto select = [&](const std::string& expression) {
    // A device of another driver has no attributes in this domain: test the driver first.
    selectors.push_back(
        {{"cel",
          {{"expression", fmt::format("device.driver == {} && ({})", driver, expression)}}}});
  };
  if (!req.gpu_models.empty()) {
    std::string expression;
    for (const std::string& model : req.gpu_models) {
      // Either spelling of the model matches: both sides lower case, spaces as dashes.
      std::string spelled = model;
      std::transform(spelled.begin(), spelled.end(), spelled.begin(), [](unsigned char c) {
        return c == ' ' ? '-' : static_cast<char>(std::tolower(c));
      });
      if (!expression.empty()) expression += " || ";
      expression += fmt::format("{}.productName.lowerAscii().replace(\" \", \"-\").contains({})",
                                attributes, json(spelled).dump());
    }
    select(expression);
  }
  if (mig) select(fmt::format("{}.profile == {}", attributes, json(req.mig_profile).dump()));
  if (!mig && req.gpu_memory_bytes > 0) {
    select(fmt::format("device.capacity[{}].memory.compareTo(quantity(\"{}\")) >= 0", driver,
                       MinimumGpuMemory(req.gpu_memory_bytes)));
  }
  if (!selectors.empty()) exactly["selectors"] = selectors;
  return {{"apiVersion", "resource.k8s.io/v1"},
          {"kind", "ResourceClaimTemplate"},
          {"metadata", Metadata(name, launch, labels)},
          {"spec", ClaimSpec(exactly)}};
}

// What the whole gang requests (minMember workers' requests), as Volcano and Coscheduling read
// a PodGroup's minResources: cpu, memory and, without DRA, nvidia.com/gpu.
json MinResources(const model::ExternalLaunch& launch, bool devices_by_dra) {
  const model::Requirements& req = launch.spec.requirements;
  const std::int64_t workers = launch.spec.workers;
  json resources = json::object();
  if (req.per_worker.cpu_millis > 0) {
    resources["cpu"] = CpuQuantity(req.per_worker.cpu_millis * workers);
  }
  if (req.per_worker.memory_bytes > 0) {
    resources["memory"] = ByteQuantity(req.per_worker.memory_bytes * workers);
  }
  if (!devices_by_dra && req.per_worker.gpus > 0) {
    resources["nvidia.com/gpu"] = std::to_string(req.per_worker.gpus * workers);
  }
  return resources;
}

// The gang's PodGroup: every engine's minMember (all workers); Volcano's and KAI's the queue
// (the Drover queue's name: create an engine queue of that name), Volcano's and Coscheduling's
// minResources.
json PodGroup(const std::string& name, const model::ExternalLaunch& launch, const json& labels,
              bool devices_by_dra) {
  const std::string& gang = launch.executor.kubernetes.gang_scheduler;
  json spec = {{"minMember", launch.spec.workers}};
  std::string api_version;
  if (gang == "kai") {
    api_version = "scheduling.run.ai/v2alpha2";
    spec["queue"] = launch.spec.queue;
  } else {
    api_version =
        gang == "volcano" ? "scheduling.volcano.sh/v1beta1" : "scheduling.x-k8s.io/v1alpha1";
    if (gang == "volcano") spec["queue"] = launch.spec.queue;
    if (json min = MinResources(launch, devices_by_dra); !min.empty()) spec["minResources"] = min;
  }
  return {{"apiVersion", api_version},
          {"kind", "PodGroup"},
          {"metadata", Metadata(name, launch, labels)},
          {"spec", spec}};
}

int MasterPort(const model::ExternalLaunch& launch) {
  auto it = launch.env.find("DROVER_MASTER_PORT");
  int port = 0;
  if (it == launch.env.end() ||
      std::from_chars(it->second.data(), it->second.data() + it->second.size(), port).ec !=
          std::errc() ||
      port <= 0 || port > 65535) {
    return kDefaultMasterPort;
  }
  return port;
}

json EnvVar(const std::string& name, const std::string& value) {
  return {{"name", name}, {"value", value}};
}

json FieldEnvVar(const std::string& name, const std::string& field_path) {
  return {{"name", name}, {"valueFrom", {{"fieldRef", {{"fieldPath", field_path}}}}}};
}

// The worker's command: `argv` itself, or under /bin/sh when the launch has directories to make
// or a timeout. The timeout is run time, enforced by the container itself: its clock starts once
// every worker of the gang has been placed (each peer's name NAME-i.NAME resolves through the
// headless Service, which publishes a pod once it has an address; an image without getent
// starts the clock at once), then SIGTERM, the kill grace, SIGKILL; the termination message
// (terminationMessagePath, read back into the pod's status) says "drover: timed out", which the
// executor reads as timed_out. The shell is PID 1: it passes SIGTERM and SIGINT on to the worker
// and waits again after a wait the signal cut short, so it exits with the worker's own status.
std::vector<std::string> Command(const model::ExternalLaunch& launch) {
  const model::JobSpec& spec = launch.spec;
  std::vector<std::string> argv =
      spec.command.empty() ? std::vector<std::string>{"/bin/sh", "-c", spec.script} : spec.command;
  if (launch.make_dirs.empty() && !spec.timeout) return argv;
  std::string script;
  if (!launch.make_dirs.empty()) {
    script = "mkdir -p --";
    for (const std::string& dir : launch.make_dirs) script += " " + ShellQuote(dir);
    script += spec.timeout ? " || exit 1\n" : " && exec \"$0\" \"$@\"";
  }
  if (spec.timeout) {
    const std::string& name = launch.ref.name;
    if (spec.workers > 1) {
      script += fmt::format(
          "n=0; while [ \"$n\" -lt {0} ]; do if command -v getent >/dev/null 2>&1 && "
          "! getent hosts \"{1}-$n.{1}\" >/dev/null 2>&1; then sleep 1; else n=$((n+1)); fi; "
          "done\n",
          spec.workers, name);
    }
    const std::string seconds = fmt::format("{:.3f}", static_cast<double>(*spec.timeout) / 1000);
    script += fmt::format(
        "\"$0\" \"$@\" & c=$!\n"
        "trap 't=1; kill -TERM \"$c\" 2>/dev/null' TERM INT\n"
        "( sleep {0}; echo '{2} after {0}s' >/dev/termination-log; "
        "kill -TERM \"$c\"; sleep {1}; kill -KILL \"$c\" ) >/dev/null 2>&1 & w=$!\n"
        "while :; do t=0; wait \"$c\"; r=$?; [ \"$t\" = 1 ] || break; done\n"
        "kill \"$w\" 2>/dev/null\n"
        "exit \"$r\"",
        seconds, fmt::format("{:.3f}", static_cast<double>(launch.kill_grace_ms) / 1000),
        kTimedOutMessage);
  }
  std::vector<std::string> wrapped = {"/bin/sh", "-c", script};
  wrapped.insert(wrapped.end(), argv.begin(), argv.end());
  return wrapped;
}

// The worker's container: the command, the environment with the rank and rank 0's address,
// resources.
json Container(const model::ExternalLaunch& launch, const std::string& image, bool devices_by_dra) {
  const model::JobSpec& spec = launch.spec;
  const model::Requirements& req = spec.requirements;
  const std::string& name = launch.ref.name;
  const bool gang = spec.workers > 1;
  const std::vector<std::string> argv = Command(launch);
  json env = json::array();
  for (const auto& [key, value] : launch.env) {
    if (key != "DROVER_WORKER_RANK" && key != "DROVER_MASTER_ADDR")
      env.push_back(EnvVar(key, value));
  }
  for (const auto& [var, secret] : spec.secret_env) {
    env.push_back(
        {{"name", var},
         {"valueFrom",
          {{"secretKeyRef", {{"name", KubernetesSecretName(spec.team)}, {"key", secret}}}}}});
  }
  if (gang) {
    env.push_back(FieldEnvVar("DROVER_WORKER_RANK", fmt::format("metadata.annotations['{}']",
                                                                kCompletionIndexAnnotation)));
    // Indexed Job pods are named NAME-INDEX in the Service's subdomain.
    env.push_back(EnvVar("DROVER_MASTER_ADDR", fmt::format("{}-0.{}", name, name)));
  } else {
    env.push_back(EnvVar("DROVER_WORKER_RANK", "0"));
    env.push_back(FieldEnvVar("DROVER_MASTER_ADDR", "status.podIP"));
  }

  json resources = {{"requests",
                     {{"cpu", CpuQuantity(req.per_worker.cpu_millis)},
                      {"memory", ByteQuantity(req.per_worker.memory_bytes)}}},
                    {"limits",
                     {{"cpu", CpuQuantity(req.per_worker.cpu_millis)},
                      {"memory", ByteQuantity(req.per_worker.memory_bytes)}}}};
  if (req.per_worker.cpu_millis <= 0) {
    resources["requests"].erase("cpu");
    resources["limits"].erase("cpu");
  }
  if (req.per_worker.memory_bytes <= 0) {
    resources["requests"].erase("memory");
    resources["limits"].erase("memory");
  }
  if (devices_by_dra) {
    resources["claims"] = json::array({{{"name", "gpu"}}});
  } else if (req.per_worker.gpus > 0) {
    resources["limits"]["nvidia.com/gpu"] = std::to_string(req.per_worker.gpus);
  }
  if (!devices_by_dra && !req.mig_profile.empty()) {
    resources["limits"]["nvidia.com/mig-" + req.mig_profile] = "1";
  }

  json container = {{"name", kContainerName},
                    {"image", image},
                    {"command", argv},
                    {"env", env},
                    {"resources", resources}};
  if (!spec.working_dir.empty() && spec.working_dir.front() == '/') {
    container["workingDir"] = spec.working_dir;
  }
  if (gang) {
    const int port = MasterPort(launch);
    container["ports"] = json::array({{{"name", "rendezvous"}, {"containerPort", port}}});
  }

  return container;
}

// How a gang is held together: nothing (one worker, or the default scheduler, which places pods
// one by one), Drover's own PodGroup, or KAI's pod-grouper told the gang's size.
enum class GangForm { kNone, kPodGroup, kKaiMinMember };

// The form the queue's engine and version honour; kInvalidArgument naming the field where none.
Result<GangForm> GangFormOf(const model::ExternalLaunch& launch) {
  const model::KubernetesQueueOptions& options = launch.executor.kubernetes;
  std::optional<Version> version;
  if (!options.gang_scheduler_version.empty()) {
    version = ParseVersion(options.gang_scheduler_version);
    if (!version) {
      return FieldError(
          launch, "executor.gang_scheduler_version",
          fmt::format("'{}' is not a version such as v0.15.0", options.gang_scheduler_version));
    }
  }
  if (launch.spec.workers <= 1) return GangForm::kNone;
  if (options.gang_scheduler == "coscheduling" && options.scheduler_name.empty()) {
    return FieldError(launch, "executor.scheduler_name",
                      "gang_scheduler: coscheduling needs the name of the scheduler profile that "
                      "runs the Coscheduling plugin: the default scheduler ignores the "
                      "scheduling.x-k8s.io/pod-group label and would start the workers one by "
                      "one");
  }
  if (options.gang_scheduler == "volcano" && version && *version < kVolcanoMinimumVersion) {
    return FieldError(launch, "executor.gang_scheduler_version",
                      fmt::format("Drover gangs under Volcano {} and later; {} is older",
                                  kVolcanoMinimumVersion.ToString(), version->ToString()));
  }
  if (UnderKai(options)) {
    if (!version || *version >= kKaiExternalPodGroupsVersion) {
      return options.gang_scheduler == "kai" ? GangForm::kPodGroup : GangForm::kKaiMinMember;
    }
    if (*version >= kKaiMinMemberVersion) return GangForm::kKaiMinMember;
    return FieldError(
        launch, "executor.gang_scheduler_version",
        fmt::format("KAI {} cannot gang a batch/v1 Job: its pod-grouper puts the Job's pods in a "
                    "PodGroup of minMember 1 ({} needs KAI {}, {} KAI {})",
                    version->ToString(), kKaiBatchMinMemberAnnotation,
                    kKaiMinMemberVersion.ToString(), kKaiSkipPodGrouperAnnotation,
                    kKaiExternalPodGroupsVersion.ToString()));
  }
  return options.gang_scheduler.empty() ? GangForm::kNone : GangForm::kPodGroup;
}

}  // namespace

std::string CpuQuantity(std::int64_t millis) {
  if (millis % 1000 == 0) return std::to_string(millis / 1000);
  return fmt::format("{}m", millis);
}

std::string ByteQuantity(std::int64_t bytes) {
  static const char* const kUnits[] = {"Pi", "Ti", "Gi", "Mi", "Ki"};
  for (int i = 0; i < 5; ++i) {
    const std::int64_t unit = std::int64_t{1} << (10 * (5 - i));
    if (bytes > 0 && bytes % unit == 0) return fmt::format("{}{}", bytes / unit, kUnits[i]);
  }
  return std::to_string(bytes);
}

std::string KubernetesSecretName(std::string_view team) {
  std::string out = "drover-";
  for (char c : team) {
    const char lower = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    out += (std::isalnum(static_cast<unsigned char>(lower)) || lower == '-' || lower == '.') ? lower
                                                                                             : '-';
  }
  return out;
}

Result<RenderedAttempt> Render(const model::ExternalLaunch& launch) {
  const model::JobSpec& spec = launch.spec;
  const model::KubernetesQueueOptions& options = launch.executor.kubernetes;
  const model::Requirements& req = spec.requirements;
  const std::string& name = launch.ref.name;

  const std::string image = spec.image.empty() ? options.image : spec.image;
  if (image.empty()) {
    return FieldError(launch, "image",
                      "required by the Kubernetes executor: give the job an image, or the queue's "
                      "executor an image option");
  }
  if (req.gpu_share_millis > 0 && !UnderKai(options)) {
    return FieldError(
        launch, "resources.gpu_share",
        "a time-sliced share of a GPU has no Kubernetes resource; run the queue under the KAI "
        "scheduler (scheduler_name: kai-scheduler, which shares GPUs by the gpu-fraction "
        "annotation), or ask for a MIG instance (resources.mig) or whole GPUs");
  }
  const bool relative_dir = !spec.working_dir.empty() && spec.working_dir.front() != '/';
  if (relative_dir && spec.working_dir != ".") {
    return FieldError(launch, "working_dir",
                      fmt::format("'{}' is relative; in a container it must be an absolute path "
                                  "(or '.' for the image's working directory)",
                                  spec.working_dir));
  }

  RenderedAttempt out;
  out.name = name;
  out.namespace_name = options.namespace_name;
  const bool gang = spec.workers > 1;
  const bool devices_by_dra = options.dra && (req.per_worker.gpus > 0 || !req.mig_profile.empty());
  DROVER_ASSIGN_OR_RETURN(const GangForm gang_form, GangFormOf(launch));

  json labels = {{kManagedByLabel, kManagedBy},
                 {kJobIdLabel, std::to_string(launch.ref.job.value())},
                 {kAttemptLabel, std::to_string(launch.ref.attempt)},
                 {kAttemptNameLabel, name}};
  if (std::string value = LabelValue(spec.name); !value.empty()) labels[kJobNameLabel] = value;

  const json container = Container(launch, image, devices_by_dra);

  // The pod.
  json pod_labels = labels;
  json pod_annotations = json::object();
  json job_annotations = json::object();
  json pod_spec = {{"restartPolicy", "Never"}, {"containers", json::array({container})}};
  pod_spec["terminationGracePeriodSeconds"] = (launch.kill_grace_ms + 999) / 1000;
  if (std::string scheduler = SchedulerName(options); !scheduler.empty()) {
    pod_spec["schedulerName"] = scheduler;
  }
  if (!options.service_account.empty()) pod_spec["serviceAccountName"] = options.service_account;
  if (!req.node_selector.empty()) pod_spec["nodeSelector"] = req.node_selector;
  if (!req.tolerations.empty()) {
    json tolerations = json::array();
    for (const model::Toleration& t : req.tolerations) tolerations.push_back(Toleration(t));
    pod_spec["tolerations"] = tolerations;
  }
  if (json affinity = Affinity(launch, devices_by_dra); !affinity.empty()) {
    pod_spec["affinity"] = affinity;
  }
  if (gang) pod_spec["subdomain"] = name;
  if (req.gpu_share_millis > 0) pod_annotations["gpu-fraction"] = Fraction(req.gpu_share_millis);
  if (UnderKai(options)) pod_labels[kKaiQueueLabel] = spec.queue;

  if (gang_form == GangForm::kPodGroup) {
    out.objects.push_back(PodGroup(name, launch, labels, devices_by_dra));
    if (options.gang_scheduler == "volcano") {
      pod_annotations[kVolcanoGroupAnnotation] = name;
    } else if (options.gang_scheduler == "kai") {
      // An external PodGroup: the pod-grouper leaves the Job's pods in it.
      pod_annotations[kKaiPodGroupAnnotation] = name;
      pod_annotations[kKaiSkipPodGrouperAnnotation] = "true";
      job_annotations[kKaiSkipPodGrouperAnnotation] = "true";
    } else {
      pod_labels[kCoschedulingLabel] = name;
    }
  } else if (gang_form == GangForm::kKaiMinMember) {
    job_annotations[kKaiBatchMinMemberAnnotation] = std::to_string(spec.workers);
  }
  if (devices_by_dra) {
    const std::string claim = name + "-gpu";
    out.objects.push_back(DeviceClaimTemplate(claim, launch, labels));
    pod_spec["resourceClaims"] =
        json::array({{{"name", "gpu"}, {"resourceClaimTemplateName", claim}}});
  }
  if (gang) {
    const int port = MasterPort(launch);
    json service_port = {{"name", "rendezvous"}, {"port", port}, {"targetPort", port}};
    json service_spec = {{"clusterIP", "None"},
                         {"selector", {{kAttemptNameLabel, name}}},
                         {"publishNotReadyAddresses", true},
                         {"ports", json::array({service_port})}};
    out.objects.push_back({{"apiVersion", "v1"},
                           {"kind", "Service"},
                           {"metadata", Metadata(name, launch, labels)},
                           {"spec", service_spec}});
  }

  json pod_metadata = {{"labels", pod_labels}};
  if (!pod_annotations.empty()) pod_metadata["annotations"] = pod_annotations;
  json job_spec = {{"backoffLimit", 0},
                   {"ttlSecondsAfterFinished", kFinishedJobTtlSeconds},
                   {"template", {{"metadata", pod_metadata}, {"spec", pod_spec}}}};
  if (gang) {
    job_spec["completionMode"] = "Indexed";
    job_spec["completions"] = spec.workers;
    job_spec["parallelism"] = spec.workers;
  }
  if (spec.timeout) {
    // Only a backstop: the container ends itself at the timeout of run time (Command). The Job's
    // clock runs from its start (under Kueue from its admission), queueing included.
    job_spec["activeDeadlineSeconds"] =
        (*spec.timeout + launch.kill_grace_ms + 999) / 1000 + 1 + kQueueAllowanceSeconds;
  }

  json job_labels = labels;
  if (!options.kueue_queue.empty()) job_labels["kueue.x-k8s.io/queue-name"] = options.kueue_queue;
  if (UnderKai(options)) job_labels[kKaiQueueLabel] = spec.queue;
  json job_metadata = Metadata(name, launch, job_labels);
  if (!job_annotations.empty()) job_metadata["annotations"] = job_annotations;
  out.objects.push_back({{"apiVersion", "batch/v1"},
                         {"kind", "Job"},
                         {"metadata", job_metadata},
                         {"spec", job_spec}});
  return out;
}

Result<std::string> CollectionPath(const json& object) {
  static const std::map<std::string, std::string> kPlurals = {
      {"Job", "jobs"},
      {"Pod", "pods"},
      {"Service", "services"},
      {"PodGroup", "podgroups"},
      {"ResourceClaimTemplate", "resourceclaimtemplates"}};
  const std::string api_version = object.value("apiVersion", "");
  const std::string kind = object.value("kind", "");
  auto plural = kPlurals.find(kind);
  if (api_version.empty() || plural == kPlurals.end()) {
    return InvalidArgument(
        fmt::format("apiVersion/kind: no collection for '{}' '{}'", api_version, kind));
  }
  std::string namespace_name = "default";
  if (auto meta = object.find("metadata"); meta != object.end() && meta->is_object()) {
    namespace_name = meta->value("namespace", namespace_name);
  }
  const std::string root = api_version.find('/') == std::string::npos ? "/api/" : "/apis/";
  return fmt::format("{}{}/namespaces/{}/{}", root, api_version, namespace_name, plural->second);
}

// ---------------------------------------------------------------------------------------------
// YAML.

namespace {

bool PlainSafe(const std::string& text) {
  if (text.empty() || text.size() > 200) return false;
  const unsigned char first = text.front();
  if (!std::isalpha(first) && first != '/' && first != '_') return false;
  if (text.back() == ':') return false;
  for (char c : text) {
    if (!std::isalnum(static_cast<unsigned char>(c)) &&
        std::string_view("._/:@+-").find(c) == std::string_view::npos) {
      return false;
    }
  }
  std::string lower = text;
  std::transform(lower.begin(), lower.end(), lower.begin(),
                 [](unsigned char c) { return std::tolower(c); });
  static const std::vector<std::string> kReserved = {"true", "false", "yes", "no",  "on",
                                                     "off",  "y",     "n",   "null"};
  return std::find(kReserved.begin(), kReserved.end(), lower) == kReserved.end();
}

std::string Scalar(const json& value) {
  if (value.is_string()) {
    const std::string& text = value.get_ref<const std::string&>();
    return PlainSafe(text) ? text : value.dump(-1, ' ', false, json::error_handler_t::replace);
  }
  return value.dump();
}

bool IsCollection(const json& value) {
  return (value.is_object() || value.is_array()) && !value.empty();
}

void Emit(const json& value, int indent, std::string& out);

// `value` after "key:" or "- ": inline when a scalar or empty, else on the following lines.
void EmitAfter(const json& value, int indent, std::string& out) {
  if (!IsCollection(value)) {
    out += ' ';
    out += value.is_object() ? "{}" : value.is_array() ? "[]" : Scalar(value);
    out += '\n';
    return;
  }
  out += '\n';
  Emit(value, indent, out);
}

void Emit(const json& value, int indent, std::string& out) {
  const std::string pad(indent, ' ');
  if (value.is_object()) {
    for (const auto& [key, item] : value.items()) {
      out += pad + Scalar(json(key)) + ':';
      EmitAfter(item, indent + 2, out);
    }
    return;
  }
  for (const json& item : value) {
    if (item.is_object() && !item.empty()) {
      // "- key: value" with the item's other keys aligned under the first.
      std::string nested;
      Emit(item, indent + 2, nested);
      out += pad + "- " + nested.substr(indent + 2);
    } else {
      out += pad + "-";
      EmitAfter(item, indent + 2, out);
    }
  }
}

}  // namespace

std::string ToYaml(const std::vector<json>& objects) {
  std::string out;
  for (std::size_t i = 0; i < objects.size(); ++i) {
    if (i > 0) out += "---\n";
    Emit(objects[i], 0, out);
  }
  return out;
}

}  // namespace drover::exec::kubernetes
