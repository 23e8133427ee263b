#include "drover/exec/kubernetes/render.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <yaml-cpp/yaml.h>

#include <regex>

namespace drover::exec::kubernetes {
namespace {

using nlohmann::json;
using ::testing::HasSubstr;

model::ExternalLaunch Launch(int workers = 1) {
  model::ExternalLaunch launch;
  launch.ref.job = JobId(12);
  launch.ref.attempt = 2;
  launch.ref.executor = model::ExecutorKind::kKubernetes;
  launch.ref.name = "drover-12-2";
  launch.executor.kind = model::ExecutorKind::kKubernetes;
  launch.executor.kubernetes.namespace_name = "ml";
  launch.spec.name = "train";
  launch.spec.queue = "research";
  launch.spec.image = "nvcr.io/nvidia/pytorch:24.05-py3";
  launch.spec.command = {"python", "train.py", "--epochs", "3"};
  launch.spec.workers = workers;
  launch.spec.min_workers = workers;
  launch.spec.requirements.per_worker = {.cpu_millis = 8500, .memory_bytes = 64LL << 30, .gpus = 4};
  launch.spec.timeout = 3'600'500;
  launch.env = {{"DROVER_JOB_ID", "12"},
                {"DROVER_ATTEMPT", "2"},
                {"DROVER_NUM_WORKERS", std::to_string(workers)},
                {"DROVER_MASTER_PORT", "31234"},
                {"EPOCHS", "3"}};
  launch.kill_grace_ms = 15'000;
  return launch;
}

const json& JobOf(const RenderedAttempt& rendered) { return rendered.objects.back(); }
const json& PodSpec(const RenderedAttempt& rendered) {
  return JobOf(rendered)["spec"]["template"]["spec"];
}
const json& Container(const RenderedAttempt& rendered) {
  return PodSpec(rendered)["containers"][0];
}

json EnvNamed(const json& container, const std::string& name) {
  for (const json& var : container["env"]) {
    if (var["name"] == name) return var;
  }
  return nullptr;
}

TEST(Render, SecretEnvRefersToTheTeamsKubernetesSecretWithoutItsValue) {
  model::ExternalLaunch launch = Launch();
  launch.spec.team = "Team_A@x";
  launch.spec.secret_env = {{"WANDB_API_KEY", "wandb-key"}};
  auto rendered = Render(launch);
  ASSERT_TRUE(rendered) << rendered.error().ToString();
  EXPECT_EQ(EnvNamed(Container(*rendered), "WANDB_API_KEY"),
            (json{{"name", "WANDB_API_KEY"},
                  {"valueFrom",
                   {{"secretKeyRef", {{"name", "drover-team-a-x"}, {"key", "wandb-key"}}}}}}));
  EXPECT_EQ(KubernetesSecretName("team-a"), "drover-team-a");
}

TEST(Render, OneWorkerIsABatchJobWithWholeGpuLimits) {
  auto rendered = Render(Launch());
  ASSERT_TRUE(rendered) << rendered.error().ToString();
  ASSERT_EQ(rendered->objects.size(), 1u);
  const json& job = JobOf(*rendered);
  EXPECT_EQ(job["apiVersion"], "batch/v1");
  EXPECT_EQ(job["kind"], "Job");
  EXPECT_EQ(job["metadata"]["name"], "drover-12-2");
  EXPECT_EQ(job["metadata"]["namespace"], "ml");
  EXPECT_EQ(job["metadata"]["labels"]["drover.dev/job"], "12");
  EXPECT_EQ(job["metadata"]["labels"]["drover.dev/attempt"], "2");
  EXPECT_EQ(job["metadata"]["labels"]["app.kubernetes.io/managed-by"], "drover");
  EXPECT_EQ(job["spec"]["backoffLimit"], 0);
  // The backstop: timeout and kill grace rounded up, a second, the queue allowance of a day.
  EXPECT_EQ(job["spec"]["activeDeadlineSeconds"], 3617 + 24 * 3600);
  EXPECT_FALSE(job["spec"].contains("completionMode"));
  const json& pod = PodSpec(*rendered);
  EXPECT_EQ(pod["restartPolicy"], "Never");
  EXPECT_EQ(pod["terminationGracePeriodSeconds"], 15);
  const json& container = Container(*rendered);
  EXPECT_EQ(container["image"], "nvcr.io/nvidia/pytorch:24.05-py3");
  ASSERT_EQ(container["command"].size(), 7u);  // the deadline's shell, then the command
  EXPECT_EQ(container["command"][0], "/bin/sh");
  EXPECT_EQ(json(std::vector<json>(container["command"].begin() + 3, container["command"].end())),
            json({"python", "train.py", "--epochs", "3"}));
  EXPECT_EQ(container["resources"]["limits"]["nvidia.com/gpu"], "4");
  EXPECT_EQ(container["resources"]["requests"]["cpu"], "8500m");
  EXPECT_EQ(container["resources"]["limits"]["memory"], "64Gi");
  EXPECT_EQ(EnvNamed(container, "EPOCHS")["value"], "3");
  EXPECT_EQ(EnvNamed(container, "DROVER_WORKER_RANK")["value"], "0");
  EXPECT_EQ(EnvNamed(container, "DROVER_MASTER_ADDR")["valueFrom"]["fieldRef"]["fieldPath"],
            "status.podIP");
}

TEST(Render, AGangIsAnIndexedJobWithAHeadlessServiceForRankZero) {
  auto rendered = Render(Launch(4));
  ASSERT_TRUE(rendered) << rendered.error().ToString();
  ASSERT_EQ(rendered->objects.size(), 2u);
  const json& service = rendered->objects[0];
  EXPECT_EQ(service["kind"], "Service");
  EXPECT_EQ(service["spec"]["clusterIP"], "None");
  EXPECT_EQ(service["spec"]["selector"]["drover.dev/attempt-name"], "drover-12-2");
  EXPECT_EQ(service["spec"]["ports"][0]["port"], 31234);
  const json& job = JobOf(*rendered);
  EXPECT_EQ(job["spec"]["completionMode"], "Indexed");
  EXPECT_EQ(job["spec"]["completions"], 4);
  EXPECT_EQ(job["spec"]["parallelism"], 4);
  EXPECT_EQ(PodSpec(*rendered)["subdomain"], "drover-12-2");
  const json& container = Container(*rendered);
  EXPECT_EQ(EnvNamed(container, "DROVER_WORKER_RANK")["valueFrom"]["fieldRef"]["fieldPath"],
            "metadata.annotations['batch.kubernetes.io/job-completion-index']");
  EXPECT_EQ(EnvNamed(container, "DROVER_MASTER_ADDR")["value"], "drover-12-2-0.drover-12-2");
  EXPECT_EQ(container["ports"][0]["containerPort"], 31234);
}

TEST(Render, QueueOptionsAddSchedulerKueueAndServiceAccount) {
  model::ExternalLaunch launch = Launch();
  launch.executor.kubernetes.scheduler_name = "my-scheduler";
  launch.executor.kubernetes.kueue_queue = "team-a";
  launch.executor.kubernetes.service_account = "trainer";
  launch.spec.requirements.node_selector = {{"pool", "a100"}};
  launch.spec.requirements.tolerations = {
      {.key = "gpu",
       .op = model::Toleration::Operator::kEqual,
       .value = "reserved",
       .effect = model::TaintEffect::kNoSchedule},
      {.key = "", .op = model::Toleration::Operator::kExists, .value = "", .effect = std::nullopt}};
  auto rendered = Render(launch);
  ASSERT_TRUE(rendered) << rendered.error().ToString();
  EXPECT_EQ(JobOf(*rendered)["metadata"]["labels"]["kueue.x-k8s.io/queue-name"], "team-a");
  const json& pod = PodSpec(*rendered);
  EXPECT_EQ(pod["schedulerName"], "my-scheduler");
  EXPECT_EQ(pod["serviceAccountName"], "trainer");
  EXPECT_EQ(pod["nodeSelector"], json({{"pool", "a100"}}));
  EXPECT_EQ(pod["tolerations"],
            json::parse(R"([{"key": "gpu", "operator": "Equal", "value": "reserved",
                             "effect": "NoSchedule"}, {"operator": "Exists"}])"));
}

TEST(Render, GpuModelAndMemoryBecomeNodeAffinityOnFeatureDiscoveryLabels) {
  model::ExternalLaunch launch = Launch();
  launch.spec.requirements.gpu_models = {"NVIDIA-H100-80GB-HBM3"};
  launch.spec.requirements.gpu_memory_bytes = 40LL << 30;
  auto rendered = Render(launch);
  ASSERT_TRUE(rendered) << rendered.error().ToString();
  const json& terms =
      PodSpec(*rendered)["affinity"]["nodeAffinity"]
                        ["requiredDuringSchedulingIgnoredDuringExecution"]["nodeSelectorTerms"];
  EXPECT_EQ(terms, json::parse(R"([{"matchExpressions": [
      {"key": "nvidia.com/gpu.product", "operator": "In", "values": ["NVIDIA-H100-80GB-HBM3"]},
      {"key": "nvidia.com/gpu.memory", "operator": "Gt", "values": ["38146"]}]}])"));
}

TEST(Render, GangPlacementBecomesPodAffinity) {
  model::ExternalLaunch launch = Launch(2);
  launch.spec.requirements.same_node = true;
  launch.spec.preferences.topology_level = "rack";
  auto rendered = Render(launch);
  ASSERT_TRUE(rendered) << rendered.error().ToString();
  const json& affinity = PodSpec(*rendered)["affinity"]["podAffinity"];
  EXPECT_EQ(affinity["requiredDuringSchedulingIgnoredDuringExecution"][0]["topologyKey"],
            "kubernetes.io/hostname");
  EXPECT_EQ(affinity["preferredDuringSchedulingIgnoredDuringExecution"][0]["podAffinityTerm"]
                    ["topologyKey"],
            "rack");
}

TEST(Render, DraAsksForGpusThroughAResourceClaimTemplate) {
  model::ExternalLaunch launch = Launch();
  launch.executor.kubernetes.dra = true;
  launch.spec.requirements.gpu_models = {"H100"};
  launch.spec.requirements.gpu_memory_bytes = 80LL << 30;
  auto rendered = Render(launch);
  ASSERT_TRUE(rendered) << rendered.error().ToString();
  ASSERT_EQ(rendered->objects.size(), 2u);
  const json& claim = rendered->objects[0];
  EXPECT_EQ(claim["apiVersion"], "resource.k8s.io/v1");
  EXPECT_EQ(claim["kind"], "ResourceClaimTemplate");
  EXPECT_EQ(claim["metadata"]["name"], "drover-12-2-gpu");
  const json& request = claim["spec"]["spec"]["devices"]["requests"][0];
  EXPECT_EQ(request["name"], "gpu");
  EXPECT_EQ(request["exactly"]["deviceClassName"], "gpu.nvidia.com");
  EXPECT_EQ(request["exactly"]["count"], 4);
  EXPECT_EQ(request["exactly"]["selectors"][0]["cel"]["expression"],
            "device.driver == \"gpu.nvidia.com\" && (device.attributes[\"gpu.nvidia.com\"]."
            "productName.lowerAscii().replace(\" \", \"-\").contains(\"h100\"))");
  EXPECT_EQ(request["exactly"]["selectors"][1]["cel"]["expression"],
            "device.driver == \"gpu.nvidia.com\" && (device.capacity[\"gpu.nvidia.com\"].memory."
            "compareTo(quantity(\"80000000000\")) >= 0)");
  EXPECT_EQ(PodSpec(*rendered)["resourceClaims"],
            json::parse(R"([{"name": "gpu", "resourceClaimTemplateName": "drover-12-2-gpu"}])"));
  const json& resources = Container(*rendered)["resources"];
  EXPECT_EQ(resources["claims"], json::parse(R"([{"name": "gpu"}])"));
  EXPECT_FALSE(resources["limits"].contains("nvidia.com/gpu"));
  EXPECT_FALSE(PodSpec(*rendered).contains("affinity"));  // DRA selects the devices
}

TEST(Render, GangSchedulersGetTheirPodGroups) {
  struct Case {
    std::string gang, api_version, scheduler;
  };
  for (const Case& c :
       {Case{"volcano", "scheduling.volcano.sh/v1beta1", "volcano"},
        Case{"kai", "scheduling.run.ai/v2alpha2", "kai-scheduler"},
        Case{"coscheduling", "scheduling.x-k8s.io/v1alpha1", "scheduler-plugins"}}) {
    SCOPED_TRACE(c.gang);
    model::ExternalLaunch launch = Launch(3);
    launch.executor.kubernetes.gang_scheduler = c.gang;
    if (c.gang == "coscheduling") launch.executor.kubernetes.scheduler_name = c.scheduler;
    auto rendered = Render(launch);
    ASSERT_TRUE(rendered) << rendered.error().ToString();
    const json& group = rendered->objects[0];
    EXPECT_EQ(group["apiVersion"], c.api_version);
    EXPECT_EQ(group["kind"], "PodGroup");
    EXPECT_EQ(group["metadata"]["name"], "drover-12-2");
    EXPECT_EQ(group["spec"]["minMember"], 3);
    const json& pod = JobOf(*rendered)["spec"]["template"];
    EXPECT_EQ(PodSpec(*rendered).value("schedulerName", ""), c.scheduler);
    if (c.gang == "volcano") {
      EXPECT_EQ(pod["metadata"]["annotations"]["scheduling.k8s.io/group-name"], "drover-12-2");
    } else if (c.gang == "kai") {
      EXPECT_EQ(pod["metadata"]["annotations"]["pod-group-name"], "drover-12-2");
      EXPECT_EQ(group["spec"]["queue"], "research");
      EXPECT_EQ(pod["metadata"]["labels"]["kai.scheduler/queue"], "research");
    } else {
      EXPECT_EQ(pod["metadata"]["labels"]["scheduling.x-k8s.io/pod-group"], "drover-12-2");
    }
  }
  // One worker needs no group.
  model::ExternalLaunch single = Launch(1);
  single.executor.kubernetes.gang_scheduler = "volcano";
  EXPECT_EQ(Render(single)->objects.size(), 1u);
}

TEST(Render, MigInstancesAndKaiFractionsAreExtendedResourcesAndAnnotations) {
  model::ExternalLaunch mig = Launch();
  mig.spec.requirements.per_worker.gpus = 0;
  mig.spec.requirements.mig_profile = "1g.10gb";
  auto rendered = Render(mig);
  ASSERT_TRUE(rendered) << rendered.error().ToString();
  EXPECT_EQ(Container(*rendered)["resources"]["limits"]["nvidia.com/mig-1g.10gb"], "1");
  EXPECT_FALSE(Container(*rendered)["resources"]["limits"].contains("nvidia.com/gpu"));

  model::ExternalLaunch share = Launch();
  share.spec.requirements.per_worker.gpus = 0;
  share.spec.requirements.gpu_share_millis = 250;
  auto refused = Render(share);
  ASSERT_FALSE(refused);
  EXPECT_EQ(refused.error().code, ErrorCode::kInvalidArgument);
  EXPECT_THAT(refused.error().message,
              HasSubstr("job 'train' (drover-12-2): resources.gpu_share: a time-sliced share"));
  share.executor.kubernetes.scheduler_name = "kai-scheduler";
  rendered = Render(share);
  ASSERT_TRUE(rendered) << rendered.error().ToString();
  EXPECT_EQ(JobOf(*rendered)["spec"]["template"]["metadata"]["annotations"]["gpu-fraction"],
            "0.25");
}

TEST(Render, ErrorsNameTheField) {
  model::ExternalLaunch launch = Launch();
  launch.spec.image.clear();
  auto missing = Render(launch);
  ASSERT_FALSE(missing);
  EXPECT_EQ(missing.error().message,
            "job 'train' (drover-12-2): image: required by the Kubernetes executor: give the job "
            "an image, or the queue's executor an image option");
  launch.executor.kubernetes.image = "busybox:1.36";  // the queue's default
  ASSERT_TRUE(Render(launch));
  EXPECT_EQ(Container(*Render(launch))["image"], "busybox:1.36");

  launch.spec.working_dir = "src";
  auto relative = Render(launch);
  ASSERT_FALSE(relative);
  EXPECT_THAT(relative.error().message, HasSubstr("working_dir: 'src' is relative"));
  launch.spec.working_dir = ".";  // the image's own
  EXPECT_FALSE(Container(*Render(launch)).contains("workingDir"));
  launch.spec.working_dir = "/workspace";
  EXPECT_EQ(Container(*Render(launch))["workingDir"], "/workspace");
}

TEST(Render, ScriptsRunUnderAShellThatFirstMakesTheDirectories) {
  model::ExternalLaunch launch = Launch();
  launch.spec.command.clear();
  launch.spec.script = "echo hi > $DROVER_OUTPUT_X";
  launch.spec.timeout.reset();
  launch.make_dirs = {"/ckpt/a b", "/out/it's"};
  auto rendered = Render(launch);
  ASSERT_TRUE(rendered) << rendered.error().ToString();
  EXPECT_EQ(Container(*rendered)["command"],
            json({"/bin/sh", "-c", "mkdir -p -- '/ckpt/a b' '/out/it'\\''s' && exec \"$0\" \"$@\"",
                  "/bin/sh", "-c", "echo hi > $DROVER_OUTPUT_X"}));
}

TEST(Render, CollectionPaths) {
  EXPECT_EQ(*CollectionPath(json::parse(
                R"({"apiVersion": "batch/v1", "kind": "Job", "metadata": {"namespace": "ml"}})")),
            "/apis/batch/v1/namespaces/ml/jobs");
  EXPECT_EQ(*CollectionPath(json::parse(R"({"apiVersion": "v1", "kind": "Service",
                                             "metadata": {"namespace": "ml"}})")),
            "/api/v1/namespaces/ml/services");
  EXPECT_FALSE(CollectionPath(json::parse(R"({"apiVersion": "v1", "kind": "Secret"})")));
}

TEST(Render, Quantities) {
  EXPECT_EQ(CpuQuantity(500), "500m");
  EXPECT_EQ(CpuQuantity(2000), "2");
  EXPECT_EQ(ByteQuantity(16LL << 30), "16Gi");
  EXPECT_EQ(ByteQuantity(1536LL << 20), "1536Mi");
  EXPECT_EQ(ByteQuantity(1000), "1000");
}

// YAML read back by yaml-cpp with the YAML 1.2 core schema: plain scalars that look like
// numbers, booleans or null are those; quoted scalars are strings.
json FromYaml(const YAML::Node& node) {
  switch (node.Type()) {
    case YAML::NodeType::Map: {
      json out = json::object();
      for (const auto& item : node) out[item.first.Scalar()] = FromYaml(item.second);
      return out;
    }
    case YAML::NodeType::Sequence: {
      json out = json::array();
      for (const auto& item : node) out.push_back(FromYaml(item));
      return out;
    }
    case YAML::NodeType::Scalar: {
      const std::string& text = node.Scalar();
      if (node.Tag() == "!") return text;  // quoted
      if (text == "true" || text == "false") return text == "true";
      if (text == "null") return nullptr;
      if (std::regex_match(text, std::regex("-?[0-9]+"))) return std::stoll(text);
      return text;
    }
    default:
      return nullptr;
  }
}

TEST(Render, YamlReadsBackAsTheSameJson) {
  model::ExternalLaunch launch = Launch(2);
  launch.executor.kubernetes.gang_scheduler = "volcano";
  launch.executor.kubernetes.dra = true;
  launch.env["TRICKY"] = "yes";
  launch.env["NUMBER"] = "0755";
  launch.env["EMPTY"] = "";
  launch.env["MULTI"] = "line one\nline: two # not a comment";
  launch.env["UNICODE"] = "caf\xc3\xa9 \xe2\x9c\x93";
  launch.spec.command = {"python", "-c", "print('x: y')", "--flag=true", "null", "- dash"};
  auto rendered = Render(launch);
  ASSERT_TRUE(rendered) << rendered.error().ToString();
  const std::string yaml = ToYaml(rendered->objects);
  std::vector<YAML::Node> documents = YAML::LoadAll(yaml);
  ASSERT_EQ(documents.size(), rendered->objects.size()) << yaml;
  for (std::size_t i = 0; i < documents.size(); ++i) {
    EXPECT_EQ(FromYaml(documents[i]), rendered->objects[i]) << yaml;
  }
}

}  // namespace
}  // namespace drover::exec::kubernetes
