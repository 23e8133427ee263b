// What each engine reads (render.cc, docs/operations.md "What each engine reads"): one test per
// defect of issue 19, each failing on the renderer before it. The rules themselves are checked
// over every rendered example by tests/kubernetes/engine_rules.mjs.

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "drover/exec/kubernetes/render.h"

namespace drover::exec::kubernetes {
namespace {

using nlohmann::json;
using ::testing::HasSubstr;

model::ExternalLaunch Gang(int workers, const std::string& gang_scheduler) {
  model::ExternalLaunch launch;
  launch.ref.job = JobId(5);
  launch.ref.attempt = 1;
  launch.ref.executor = model::ExecutorKind::kKubernetes;
  launch.ref.name = "drover-5-1";
  launch.executor.kind = model::ExecutorKind::kKubernetes;
  launch.executor.kubernetes.gang_scheduler = gang_scheduler;
  launch.spec.name = "train";
  launch.spec.queue = "research";
  launch.spec.image = "pytorch:24.05";
  launch.spec.command = {"torchrun", "train.py"};
  launch.spec.workers = workers;
  launch.spec.requirements.per_worker = {.cpu_millis = 4000, .memory_bytes = 32LL << 30, .gpus = 8};
  launch.kill_grace_ms = 10'000;
  return launch;
}

const json& JobOf(const RenderedAttempt& rendered) { return rendered.objects.back(); }
const json& Template(const RenderedAttempt& rendered) {
  return JobOf(rendered)["spec"]["template"];
}
const json* Find(const RenderedAttempt& rendered, const std::string& kind) {
  for (const json& object : rendered.objects) {
    if (object["kind"] == kind) return &object;
  }
  return nullptr;
}
std::string Selectors(const RenderedAttempt& rendered) {
  const json* claim = Find(rendered, "ResourceClaimTemplate");
  if (!claim) return "";
  return (*claim)["spec"]["spec"]["devices"]["requests"][0]["exactly"]
      .value("selectors", json())
      .dump();
}

// 1. KAI's pod-grouper regroups a Job's pods unless told not to (v0.15.0+), or is told the
// gang's size (v0.14.1+); older releases cannot gang a batch/v1 Job.
TEST(RenderEngines, KaiKeepsDroversPodGroupAsAnExternalOne) {
  auto rendered = Render(Gang(4, "kai"));
  ASSERT_TRUE(rendered) << rendered.error().ToString();
  ASSERT_NE(Find(*rendered, "PodGroup"), nullptr);
  EXPECT_EQ(JobOf(*rendered)["metadata"]["annotations"]["kai.scheduler/skip-podgrouper"], "true");
  EXPECT_EQ(Template(*rendered)["metadata"]["annotations"]["kai.scheduler/skip-podgrouper"],
            "true");
  EXPECT_EQ(Template(*rendered)["metadata"]["annotations"]["pod-group-name"], "drover-5-1");
}

TEST(RenderEngines, OlderKaiIsToldTheGangsSizeOrRefused) {
  model::ExternalLaunch launch = Gang(4, "kai");
  launch.executor.kubernetes.gang_scheduler_version = "v0.14.1";
  auto rendered = Render(launch);
  ASSERT_TRUE(rendered) << rendered.error().ToString();
  EXPECT_EQ(Find(*rendered, "PodGroup"), nullptr);  // the pod-grouper makes it
  EXPECT_EQ(JobOf(*rendered)["metadata"]["annotations"]["kai.scheduler/batch-min-member"], "4");
  EXPECT_EQ(JobOf(*rendered)["metadata"]["labels"]["kai.scheduler/queue"], "research");

  launch.executor.kubernetes.gang_scheduler_version = "0.13.2";
  auto refused = Render(launch);
  ASSERT_FALSE(refused);
  EXPECT_EQ(refused.error().code, ErrorCode::kInvalidArgument);
  EXPECT_THAT(refused.error().message,
              HasSubstr("executor.gang_scheduler_version: KAI v0.13.2 cannot gang a batch/v1 "
                        "Job"));
  launch.spec.workers = 1;  // one worker needs no gang
  EXPECT_TRUE(Render(launch));

  launch.executor.kubernetes.gang_scheduler_version = "v";
  EXPECT_FALSE(Render(launch));
  launch.executor.kubernetes.gang_scheduler_version = "latest";
  auto unreadable = Render(launch);
  ASSERT_FALSE(unreadable);
  EXPECT_THAT(unreadable.error().message,
              HasSubstr("executor.gang_scheduler_version: 'latest' is not a version"));
}

TEST(RenderEngines, TheKaiSchedulerWithoutAGangSchedulerStillGangs) {
  model::ExternalLaunch launch = Gang(3, "");
  launch.executor.kubernetes.scheduler_name = "kai-scheduler";
  auto rendered = Render(launch);
  ASSERT_TRUE(rendered) << rendered.error().ToString();
  EXPECT_EQ(JobOf(*rendered)["metadata"]["annotations"]["kai.scheduler/batch-min-member"], "3");
}

// 2. The NVIDIA DRA driver publishes NVML's product name (with spaces) in its driver's domain.
TEST(RenderEngines, DraModelSelectorsMatchNvmlNamesInTheDriversDomain) {
  model::ExternalLaunch launch = Gang(1, "");
  launch.executor.kubernetes.dra = true;
  launch.executor.kubernetes.device_class = "h100-class";
  launch.spec.requirements.gpu_models = {"NVIDIA-H100-80GB-HBM3"};
  auto rendered = Render(launch);
  ASSERT_TRUE(rendered) << rendered.error().ToString();
  const std::string selectors = Selectors(*rendered);
  EXPECT_THAT(selectors, HasSubstr(R"(device.attributes[\"gpu.nvidia.com\"].productName)"));
  EXPECT_THAT(selectors,
              HasSubstr(R"(.replace(\" \", \"-\").contains(\"nvidia-h100-80gb-hbm3\"))"));
  EXPECT_THAT(selectors, ::testing::Not(HasSubstr("h100-class")));
  launch.executor.kubernetes.dra_driver = "gpu.example.com";
  EXPECT_THAT(Selectors(*Render(launch)), HasSubstr(R"(device.attributes[\"gpu.example.com\"])"));
}

// 3. Without a scheduler name the default scheduler places the pods and ignores the label.
TEST(RenderEngines, CoschedulingWithoutASchedulerNameIsRefused) {
  auto refused = Render(Gang(2, "coscheduling"));
  ASSERT_FALSE(refused);
  EXPECT_EQ(refused.error().code, ErrorCode::kInvalidArgument);
  EXPECT_THAT(refused.error().message,
              HasSubstr("job 'train' (drover-5-1): executor.scheduler_name: gang_scheduler: "
                        "coscheduling needs the name of the scheduler profile"));
  model::ExternalLaunch launch = Gang(2, "coscheduling");
  launch.executor.kubernetes.scheduler_name = "scheduler-plugins-scheduler";
  auto rendered = Render(launch);
  ASSERT_TRUE(rendered) << rendered.error().ToString();
  EXPECT_EQ(Template(*rendered)["spec"]["schedulerName"], "scheduler-plugins-scheduler");
  EXPECT_EQ(Template(*rendered)["metadata"]["labels"]["scheduling.x-k8s.io/pod-group"],
            "drover-5-1");
}

// 4. The timeout is run time: the container ends the worker once every worker runs; the Job's
// activeDeadlineSeconds, which counts queueing, is only a backstop a day later.
TEST(RenderEngines, TheTimeoutIsRunTimeEnforcedByTheContainer) {
  for (const std::string gang : {"", "volcano", "kai"}) {
    SCOPED_TRACE(gang);
    model::ExternalLaunch launch = Gang(2, gang);
    launch.spec.timeout = 90'000;
    auto rendered = Render(launch);
    ASSERT_TRUE(rendered) << rendered.error().ToString();
    EXPECT_EQ(JobOf(*rendered)["spec"]["activeDeadlineSeconds"], 90 + 10 + 1 + 24 * 3600);
    const json& command = Template(*rendered)["spec"]["containers"][0]["command"];
    ASSERT_EQ(command.size(), 5u);
    EXPECT_EQ(command[0], "/bin/sh");
    const std::string script = command[2];
    // The clock starts once both workers' names resolve, then TERM, grace, KILL.
    EXPECT_THAT(script, HasSubstr(R"(getent hosts "drover-5-1-$n.drover-5-1")"));
    EXPECT_THAT(script, HasSubstr("sleep 90.000; echo 'drover: timed out after 90.000s' "
                                  ">/dev/termination-log; kill -TERM \"$c\"; sleep 10.000; "
                                  "kill -KILL \"$c\""));
    EXPECT_THAT(script, HasSubstr("trap 't=1; kill -TERM \"$c\" 2>/dev/null' TERM INT"));
    EXPECT_EQ(command[3], "torchrun");
  }
}

// 5. The smaller ones.
TEST(RenderEngines, VolcanoPodGroupsCarryTheQueueAndMinResources) {
  auto rendered = Render(Gang(4, "volcano"));
  ASSERT_TRUE(rendered) << rendered.error().ToString();
  const json& spec = (*Find(*rendered, "PodGroup"))["spec"];
  EXPECT_EQ(spec["queue"], "research");
  EXPECT_EQ(spec["minResources"],
            json::parse(R"({"cpu": "16", "memory": "128Gi", "nvidia.com/gpu": "32"})"));
  model::ExternalLaunch old = Gang(4, "volcano");
  old.executor.kubernetes.gang_scheduler_version = "v1.6.0";
  ASSERT_FALSE(Render(old));
}

TEST(RenderEngines, EightyGigabyteGpusQualifyForEightyGi) {
  model::ExternalLaunch launch = Gang(1, "");
  launch.spec.requirements.gpu_memory_bytes = 80LL << 30;
  auto rendered = Render(launch);
  ASSERT_TRUE(rendered) << rendered.error().ToString();
  const json& expression = Template(*rendered)["spec"]["affinity"]["nodeAffinity"]
                                              ["requiredDuringSchedulingIgnoredDuringExecution"]
                                              ["nodeSelectorTerms"][0]["matchExpressions"][0];
  EXPECT_EQ(expression["key"], "nvidia.com/gpu.memory");
  // An 80 GB H100 reports 81,559 MiB (GPU Feature Discovery's label): Gt 76293 admits it.
  const int least = std::stoi(expression["values"][0].get<std::string>()) + 1;
  EXPECT_LE(least, 81'559);
  EXPECT_EQ(least, 76'294);  // 80 GB
}

TEST(RenderEngines, KaiSharesKeepTheirGpuMemory) {
  model::ExternalLaunch launch = Gang(1, "kai");
  launch.spec.requirements.per_worker.gpus = 0;
  launch.spec.requirements.gpu_share_millis = 250;
  launch.spec.requirements.gpu_memory_bytes = 8LL << 30;
  auto rendered = Render(launch);
  ASSERT_TRUE(rendered) << rendered.error().ToString();
  EXPECT_EQ(Template(*rendered)["metadata"]["annotations"]["gpu-fraction"], "0.25");
  // A quarter of the GPU holds 8 GiB on a GPU of at least 32 GiB (KAI refuses gpu-memory next
  // to gpu-fraction).
  EXPECT_EQ(Template(*rendered)["spec"]["affinity"]["nodeAffinity"]
                               ["requiredDuringSchedulingIgnoredDuringExecution"]
                               ["nodeSelectorTerms"][0]["matchExpressions"],
            json::parse(R"([{"key": "nvidia.com/gpu.memory", "operator": "Gt",
                             "values": ["32767"]}])"));
}

TEST(RenderEngines, MigOnDraIsAClaimOfTheMigClassNotAnExtendedResource) {
  model::ExternalLaunch launch = Gang(1, "");
  launch.executor.kubernetes.dra = true;
  launch.spec.requirements.per_worker.gpus = 0;
  launch.spec.requirements.mig_profile = "1g.10gb";
  auto rendered = Render(launch);
  ASSERT_TRUE(rendered) << rendered.error().ToString();
  const json& limits = Template(*rendered)["spec"]["containers"][0]["resources"]["limits"];
  EXPECT_FALSE(limits.contains("nvidia.com/mig-1g.10gb"));
  const json* claim = Find(*rendered, "ResourceClaimTemplate");
  ASSERT_NE(claim, nullptr);
  const json& exactly = (*claim)["spec"]["spec"]["devices"]["requests"][0]["exactly"];
  EXPECT_EQ(exactly["deviceClassName"], "mig.nvidia.com");
  EXPECT_EQ(exactly["count"], 1);
  EXPECT_THAT(Selectors(*rendered),
              HasSubstr(R"(device.attributes[\"gpu.nvidia.com\"].profile == \"1g.10gb\")"));
}

}  // namespace
}  // namespace drover::exec::kubernetes
