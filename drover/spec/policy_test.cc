#include "drover/spec/policy.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <fstream>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "drover/spec/spec_test_util.h"

namespace drover::spec {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

constexpr std::int64_t kGi = 1LL << 30;

ParseOptions Options() {
  ParseOptions options;
  options.file_name = "policy.yaml";
  return options;
}

// Every diagnostic of `text` as "FILE:LINE:COL: error: FIELD: message".
std::vector<std::string> Errors(std::string_view text) {
  PolicyParseOutput out = ParsePolicyWithDiagnostics(text, Options());
  std::vector<std::string> lines;
  for (const Diagnostic& d : out.diagnostics) lines.push_back(d.ToString());
  if (!lines.empty()) {
    EXPECT_FALSE(out.policy.has_value());
  }
  return lines;
}

model::Policy ParseOk(std::string_view text) {
  Result<model::Policy> policy = ParsePolicy(text, Options());
  if (!policy) {
    ADD_FAILURE() << policy.error().ToString();
    return {};
  }
  return *policy;
}

// The example of policy.h and docs/scheduling-policy-file.md.
constexpr std::string_view kDocumented = R"(kind: Policy
queues:
  - name: org
    limits: {max_running_jobs: 100, gpu: 64}
    children:
      - name: team-a
        weight: 2
        quota: {gpu: 4, cpu: 64, memory: 512Gi, gpu_models: {H100: 4}}
        borrowing_limit: {gpu: 4}
        lending_limit: {gpu: 2}
        user_limits: {max_running_jobs: 4, gpu: 2}
      - name: team-b
        weight: 0.5
        quota: {gpu: 2500m}
pipeline_limits: {max_running_jobs: 2}
fair_share: {half_life: 2h}
aging: {interval: 10m, step: 50, max: 500}
scoring: fragmentation
order: las
las: {thresholds: [600, 3600]}
preemption: {enabled: false, min_run_time: 5m, grace_period: 45s}
backfill: {enabled: false}
accounts:
  map: {alice: alice-unix, bob: shared-gpu}
  allow_root: [ops-admin]
)";

TEST(ParsePolicy, ReadsEveryField) {
  model::QueueConfig team_a;
  team_a.name = "team-a";
  team_a.weight = 2;
  team_a.nominal = {{"gpu", 4000}, {"cpu", 64000}, {"memory", 512 * kGi}, {"gpu:h100", 4000}};
  team_a.borrowing_limit = {{"gpu", 4000}};
  team_a.lending_limit = {{"gpu", 2000}};
  team_a.user_limits.max_running_jobs = 4;
  team_a.user_limits.max_resources = {{"gpu", 2000}};
  model::QueueConfig team_b;
  team_b.name = "team-b";
  team_b.weight = 0.5;
  team_b.nominal = {{"gpu", 2500}};
  model::QueueConfig org;
  org.name = "org";
  org.limits.max_running_jobs = 100;
  org.limits.max_resources = {{"gpu", 64000}};
  org.children = {team_a, team_b};

  model::Policy expected;
  expected.queues = {org};
  expected.pipeline_limits.max_running_jobs = 2;
  expected.fair_share_half_life = 2 * 3'600'000;
  expected.aging_interval = 10 * 60'000;
  expected.aging_step = 50;
  expected.aging_max = 500;
  expected.scoring = model::Scoring::kFragmentation;
  expected.order = model::QueueOrder::kLas;
  expected.las_thresholds = {600, 3600};
  expected.preemption = false;
  expected.min_run_time = 5 * 60'000;
  expected.preemption_grace = 45'000;
  expected.backfill = false;
  expected.accounts.map = {{"alice", "alice-unix"}, {"bob", "shared-gpu"}};
  expected.accounts.allow_root = {"ops-admin"};
  EXPECT_EQ(ParseOk(kDocumented), expected);
}

TEST(ParsePolicy, AppliesDefaults) {
  EXPECT_EQ(ParseOk("kind: Policy\n"), model::Policy{});
  EXPECT_EQ(ParseOk("---\n# comment\n---\nkind: Policy\nqueues: []\n---\n"), model::Policy{});
  model::Policy policy = ParseOk("kind: Policy\nqueues: [{name: a}]\nscoring: spread\n");
  ASSERT_EQ(policy.queues.size(), 1u);
  EXPECT_EQ(policy.queues[0].weight, 1.0);
  EXPECT_TRUE(policy.queues[0].nominal.empty());
  EXPECT_TRUE(policy.queues[0].limits.empty());
  EXPECT_EQ(policy.scoring, model::Scoring::kSpread);
}

TEST(ParsePolicy, ReadsEachQueueOrder) {
  EXPECT_EQ(ParseOk("kind: Policy\n").order, model::QueueOrder::kFairShare);
  for (model::QueueOrder order : {model::QueueOrder::kFairShare, model::QueueOrder::kFifo,
                                  model::QueueOrder::kSjf, model::QueueOrder::kLas}) {
    const std::string text =
        "kind: Policy\norder: " + std::string(model::QueueOrderName(order)) + "\n";
    EXPECT_EQ(ParseOk(text).order, order) << text;
  }
  // Thresholds may be set under any order; a list replaces the default whole.
  model::Policy policy = ParseOk(
      "kind: Policy\nlas:\n  thresholds:\n    - 60\n    - 3600\n"
      "    - 86400\n");
  EXPECT_EQ(policy.order, model::QueueOrder::kFairShare);
  EXPECT_EQ(policy.las_thresholds, (std::vector<std::int64_t>{60, 3600, 86400}));
  EXPECT_EQ(ParseOk("kind: Policy\norder: las\nlas:\n").las_thresholds,
            (std::vector<std::int64_t>{3250, 7200}));
}

TEST(ParsePolicy, ReportsBadOrdersAndThresholdsWithTheirPositions) {
  EXPECT_THAT(Errors("kind: Policy\norder: lass\n"),
              ElementsAre("policy.yaml:2:8: error: order: unknown order 'lass' (did you mean "
                          "'las'?); expected one of fair-share, fifo, sjf, las"));
  EXPECT_THAT(Errors("kind: Policy\norder: [fifo]\n"),
              ElementsAre(HasSubstr("policy.yaml:2:8: error: order: ")));
  EXPECT_THAT(
      Errors("kind: Policy\norder: las\nlas: {thresholds: [3250, 0, 100, 7200.5, x, 50]}\n"),
      ElementsAre("policy.yaml:3:26: error: las.thresholds[1]: must be at least 1",
                  "policy.yaml:3:29: error: las.thresholds[2]: must be greater than the threshold "
                  "before it (3250), found 100; thresholds are ascending",
                  "policy.yaml:3:34: error: las.thresholds[3]: GPU-seconds are whole numbers: "
                  "write 3250, not 3250.5",
                  "policy.yaml:3:42: error: las.thresholds[4]: expected a whole number, found 'x'",
                  "policy.yaml:3:45: error: las.thresholds[5]: must be greater than the threshold "
                  "before it (100), found 50; thresholds are ascending"));
  EXPECT_THAT(Errors("kind: Policy\nlas: {thresholds: [60, 60]}\n"),
              ElementsAre("policy.yaml:2:24: error: las.thresholds[1]: must be greater than the "
                          "threshold before it (60), found 60; thresholds are ascending"));
  EXPECT_THAT(Errors("kind: Policy\nlas: {thresholds: []}\n"),
              ElementsAre("policy.yaml:2:19: error: las.thresholds: must list at least one "
                          "threshold in GPU-seconds (such as [3250, 7200])"));
  EXPECT_THAT(Errors("kind: Policy\nlas: {thresholds: 3250}\n"),
              ElementsAre("policy.yaml:2:19: error: las.thresholds: expected a list of "
                          "GPU-seconds such as [3250, 7200], found '3250'"));
  EXPECT_THAT(Errors("kind: Policy\nlas: {threshold: [1]}\nthresholds: [2]\n"),
              ElementsAre("policy.yaml:2:7: error: las.threshold: unknown field 'threshold'; did "
                          "you mean 'thresholds'?",
                          "policy.yaml:3:1: error: thresholds: unknown field 'thresholds'; did "
                          "you mean 'las.thresholds'?"));
  EXPECT_THAT(Errors("kind: Policy\nlas: fifo\n"),
              ElementsAre("policy.yaml:2:6: error: las: expected a mapping, found 'fifo'"));
}

TEST(ParsePolicy, ReadsQueueExecutors) {
  model::Policy policy = ParseOk(R"(kind: Policy
queues:
  - name: hpc
    executor: {kind: slurm, partition: gpu, qos: high, account: ml}
  - name: cloud
    executor:
      kind: kubernetes
      namespace: ml
      scheduler_name: kai-scheduler
      kueue_queue: team-a
      gang_scheduler: volcano
      gang_scheduler_version: v1.12.0
      dra: true
      mig_device_class: mig.example.com
      dra_driver: gpu.example.com
      image: python:3.12
    children:
      - name: cloud-a
  - name: here
    executor: local
)");
  ASSERT_EQ(policy.queues.size(), 3u);
  const model::ExecutorConfig hpc = model::ExecutorOf(policy, "hpc");
  EXPECT_EQ(hpc.kind, model::ExecutorKind::kSlurm);
  EXPECT_EQ(hpc.slurm, (model::SlurmQueueOptions{"gpu", "high", "ml"}));
  const model::ExecutorConfig cloud = model::ExecutorOf(policy, "cloud-a");  // inherited
  EXPECT_EQ(cloud.kind, model::ExecutorKind::kKubernetes);
  EXPECT_EQ(cloud.kubernetes.namespace_name, "ml");
  EXPECT_EQ(cloud.kubernetes.scheduler_name, "kai-scheduler");
  EXPECT_EQ(cloud.kubernetes.kueue_queue, "team-a");
  EXPECT_EQ(cloud.kubernetes.gang_scheduler, "volcano");
  EXPECT_EQ(cloud.kubernetes.gang_scheduler_version, "v1.12.0");
  EXPECT_TRUE(cloud.kubernetes.dra);
  EXPECT_EQ(cloud.kubernetes.device_class, "gpu.nvidia.com");  // the default
  EXPECT_EQ(cloud.kubernetes.mig_device_class, "mig.example.com");
  EXPECT_EQ(cloud.kubernetes.dra_driver, "gpu.example.com");
  EXPECT_EQ(cloud.kubernetes.image, "python:3.12");
  EXPECT_EQ(model::ExecutorOf(policy, "here").kind, model::ExecutorKind::kLocal);
}

TEST(ParsePolicy, ReportsBadExecutorsWithTheirPositions) {
  EXPECT_THAT(Errors("kind: Policy\nqueues:\n  - name: a\n    executor: slrum\n"),
              ElementsAre("policy.yaml:4:15: error: queues[0].executor: unknown executor "
                          "'slrum' (did you mean 'slurm'?); expected one of local, slurm, "
                          "kubernetes"));
  EXPECT_THAT(Errors("kind: Policy\nqueues:\n  - name: a\n    executor: {partition: gpu}\n"),
              ElementsAre(HasSubstr("queues[0].executor.kind: required field is missing")));
  EXPECT_THAT(
      Errors("kind: Policy\nqueues:\n  - name: a\n    executor: {kind: slurm, namespace: x}\n"),
      ElementsAre("policy.yaml:4:40: error: queues[0].executor.namespace: is an option of the "
                  "kubernetes executor, not of slurm"));
  EXPECT_THAT(Errors("kind: Policy\nqueues:\n  - name: a\n    executor: {kind: slurm, "
                     "dra_driver: x}\n"),
              ElementsAre(HasSubstr("queues[0].executor.dra_driver: is an option of the "
                                    "kubernetes executor, not of slurm")));
  EXPECT_THAT(Errors("kind: Policy\nqueues:\n  - name: a\n    executor: {kind: kubernetes, "
                     "gang_scheduler: yunikorn}\n"),
              ElementsAre(HasSubstr("unknown gang scheduler 'yunikorn'")));
}

TEST(ParsePolicy, ReadsGpuAmountsInMilliGpus) {
  model::Policy policy = ParseOk(
      "kind: Policy\nqueues:\n  - name: a\n"
      "    quota: {gpu: 0.5, gpu_models: {H100: 2, a100: 250m, RTX4090: 0}, cpu: 1, memory: 1}\n"
      "    borrowing_limit: {gpu: 2500m, cpu: 500m, memory: 1.5Gi}\n");
  ASSERT_EQ(policy.queues.size(), 1u);
  EXPECT_EQ(policy.queues[0].nominal, (model::ResourceAmounts{{"gpu", 500},
                                                              {"gpu:h100", 2000},
                                                              {"gpu:a100", 250},
                                                              {"gpu:rtx4090", 0},
                                                              {"cpu", 1000},
                                                              {"memory", 1}}));
  EXPECT_EQ(policy.queues[0].borrowing_limit,
            (model::ResourceAmounts{{"gpu", 2500}, {"cpu", 500}, {"memory", 3 * kGi / 2}}));
}

TEST(ParsePolicy, AcceptsJson) {
  model::Policy policy = ParseOk(
      R"({"kind": "Policy", "queues": [{"name": "a", "quota": {"gpu": 8}}], "scoring": "spread"})");
  ASSERT_EQ(policy.queues.size(), 1u);
  EXPECT_EQ(policy.queues[0].nominal, (model::ResourceAmounts{{"gpu", 8000}}));
  EXPECT_EQ(policy.scoring, model::Scoring::kSpread);
}

TEST(ParsePolicy, ReportsEveryErrorWithItsPosition) {
  constexpr std::string_view kText = R"(kind: Policy
queues:
  - name: org
    wieght: 2
    children:
      - name: team-a
        weight: 0
        quota: {gpu: 4, memory: 16Gb}
        lending_limit: {gpu: 6, cpu: 1}
      - name: team-b
        quota: {gpu: -1, gpu_models: {H100: 2, h100: 1}}
        limits: {max_running_jobs: -2, gpus: 1}
      - name: Team-C
      - weight: 1
  - name: team-a
pipeline_limits: {max_running_jobs: two}
fair_share: {half_life: soon}
aging: {interval: 10m, step: 0}
scoring: binpak
preemption: {enabled: yes, grace: 1s}
backfill: true
)";
  Result<model::Policy> policy = ParsePolicy(kText, Options());
  ASSERT_FALSE(policy);
  EXPECT_EQ(policy.error().code, ErrorCode::kInvalidArgument);
  EXPECT_EQ(policy.error().message, "19 errors in policy.yaml");
  EXPECT_THAT(
      policy.error().details,
      ElementsAre(
          "policy.yaml:4:5: error: queues[0].wieght: unknown field 'wieght'; did you mean "
          "'weight'?",
          "policy.yaml:7:17: error: queues[0].children[0].weight: must be greater than zero, "
          "found 0",
          "policy.yaml:8:33: error: queues[0].children[0].quota.memory: unknown memory unit 'Gb' "
          "(use Ki, Mi, Gi, Ti for powers of 1024 or K, M, G, T for powers of 1000)",
          "policy.yaml:9:30: error: queues[0].children[0].lending_limit.gpu: must not exceed the "
          "queue's quota of gpu (4), found 6",
          "policy.yaml:9:38: error: queues[0].children[0].lending_limit.cpu: must not exceed the "
          "queue's quota of cpu (0), found 1",
          "policy.yaml:11:22: error: queues[0].children[1].quota.gpu: must not be negative",
          "policy.yaml:11:48: error: queues[0].children[1].quota.gpu_models.h100: duplicate GPU "
          "model 'h100'; it is already set at line 11 (models are compared without case)",
          "policy.yaml:12:36: error: queues[0].children[1].limits.max_running_jobs: must not be "
          "negative",
          "policy.yaml:12:40: error: queues[0].children[1].limits.gpus: unknown field 'gpus'; did "
          "you mean 'gpu'?",
          "policy.yaml:13:15: error: queues[0].children[2].name: invalid queue name 'Team-C': use "
          "1 to 63 lowercase letters, digits, '.', '_' or '-', starting with a letter or digit",
          "policy.yaml:14:9: error: queues[0].children[3].name: required field is missing",
          "policy.yaml:15:11: error: queues[1].name: duplicate leaf queue name 'team-a'; the "
          "first is at line 6 (jobs name leaf queues, so their names are unique in the whole "
          "tree)",
          "policy.yaml:16:37: error: pipeline_limits.max_running_jobs: expected a whole number, "
          "found 'two'",
          "policy.yaml:17:25: error: fair_share.half_life: expected a number",
          "policy.yaml:18:30: error: aging.step: must be at least 1",
          "policy.yaml:19:10: error: scoring: unknown scoring 'binpak' (did you mean "
          "'binpack'?); expected one of binpack, spread, fragmentation, random, best-fit, "
          "dot-product, gpu-packing, gpu-clustering",
          "policy.yaml:20:23: error: preemption.enabled: expected true or false, found 'yes'",
          "policy.yaml:20:28: error: preemption.grace: unknown field 'grace'; did you mean "
          "'grace_period'?",
          "policy.yaml:21:11: error: backfill: expected a mapping, found 'true'"));
}

TEST(ParsePolicy, ChecksTheDocument) {
  EXPECT_THAT(Errors(""), ElementsAre("policy.yaml:1:1: error: no policy found; write a mapping "
                                      "with kind: Policy"));
  EXPECT_THAT(Errors("queues: []\n"),
              ElementsAre("policy.yaml:1:1: error: kind: required field is missing (write kind: "
                          "Policy)"));
  EXPECT_THAT(Errors("kind: Job\n"),
              ElementsAre("policy.yaml:1:7: error: kind: unsupported kind 'Job'; expected "
                          "'Policy'"));
  EXPECT_THAT(Errors("kind: Policy\n---\nkind: Policy\n"),
              ElementsAre("policy.yaml:3:1: error: a policy file holds one policy; this is a "
                          "second document"));
  EXPECT_THAT(Errors("- kind: Policy\n"),
              ElementsAre("policy.yaml:1:1: error: expected a policy (a mapping with kind: "
                          "Policy), found a list"));
  EXPECT_THAT(Errors("kind: Policy\nqueues: {name: a}\n"),
              ElementsAre("policy.yaml:2:9: error: queues: expected a list of queues, found a "
                          "mapping"));
  EXPECT_THAT(Errors("kind: Policy\nqueues: [a: b: c]\n"),
              ElementsAre(HasSubstr("policy.yaml:2:")));
  EXPECT_THAT(Errors("kind: Policy\nqueues:\n  - {name: a, quota: {gpu_models: [H100]}}\n"),
              ElementsAre("policy.yaml:3:35: error: queues[0].quota.gpu_models: expected a "
                          "mapping of GPU models to amounts (gpu_models: {H100: 4}), found a "
                          "list"));
}

TEST(ParsePolicy, ChecksLendingAgainstPerModelQuota) {
  EXPECT_THAT(Errors("kind: Policy\nqueues:\n  - name: a\n    quota: {gpu_models: {H100: 2}}\n"
                     "    lending_limit: {gpu_models: {H100: 3}}\n"),
              ElementsAre("policy.yaml:5:40: error: queues[0].lending_limit.gpu_models.H100: must "
                          "not exceed the queue's quota of gpu:h100 (2), found 3"));
  EXPECT_THAT(Errors("kind: Policy\nqueues:\n  - name: a\n    quota: {memory: 1Gi}\n"
                     "    lending_limit: {memory: 2Gi}\n"),
              ElementsAre("policy.yaml:5:29: error: queues[0].lending_limit.memory: must not "
                          "exceed the queue's quota of memory (1Gi), found 2Gi"));
}

TEST(ParsePolicy, ComparesAGroupingQueuesLendingWithItsChildrensQuotas) {
  constexpr std::string_view kTree =
      "kind: Policy\nqueues:\n  - name: org\n    lending_limit: {gpu: LEND}\n    children:\n"
      "      - {name: a, quota: {gpu: 2}}\n      - {name: b, quota: {gpu: 3}}\n";
  auto with = [&](std::string_view lend) {
    std::string text(kTree);
    text.replace(text.find("LEND"), 4, lend);
    return text;
  };
  EXPECT_THAT(Errors(with("5")), ::testing::IsEmpty());
  EXPECT_THAT(Errors(with("6")),
              ElementsAre("policy.yaml:4:26: error: queues[0].lending_limit.gpu: must not exceed "
                          "the queue's quota of gpu (5, the sum of its children's), found 6"));
}

TEST(ParsePolicy, RejectsBorrowingLimitsOfUngovernedResources) {
  EXPECT_THAT(Errors("kind: Policy\nqueues:\n  - {name: a, quota: {gpu: 2}}\n"
                     "  - {name: b, borrowing_limit: {gpu: 1, cpu: 4}}\n"),
              ElementsAre("policy.yaml:4:46: error: queues[1].borrowing_limit.cpu: no queue sets a "
                          "quota of cpu, so quotas do not limit it and this borrowing limit would "
                          "limit nothing; set a quota of cpu or remove this"));
}

TEST(ParsePolicy, ChecksQueueNames) {
  // Siblings differ; leaves are unique in the tree; grouping queues may share a name with
  // queues elsewhere.
  EXPECT_THAT(
      Errors("kind: Policy\nqueues:\n"
             "  - name: org-a\n    children:\n      - name: ml\n        children: [{name: x}]\n"
             "      - name: ml\n        children: [{name: y}]\n"
             "  - name: org-b\n    children:\n      - name: ml\n        children: [{name: x}]\n"
             "  - name: z\n  - name: z\n"),
      ElementsAre("policy.yaml:7:15: error: queues[0].children[1].name: duplicate queue name 'ml' "
                  "among its siblings; the first is at line 5",
                  "policy.yaml:12:27: error: queues[1].children[0].children[0].name: duplicate "
                  "leaf queue name 'x'; the first is at line 6 (jobs name leaf queues, so their "
                  "names are unique in the whole tree)",
                  "policy.yaml:14:11: error: queues[3].name: duplicate queue name 'z' among its "
                  "siblings; the first is at line 13"));
}

TEST(ParsePolicy, ReadsTheExampleFile) {
  std::ifstream in(std::string(DROVER_SOURCE_DIR) + "/examples/policy.yaml");
  ASSERT_TRUE(in) << "examples/policy.yaml";
  std::stringstream text;
  text << in.rdbuf();
  model::Policy policy = ParseOk(text.str());
  ASSERT_EQ(policy.queues.size(), 1u);
  const model::QueueConfig& org = policy.queues[0];
  ASSERT_EQ(org.children.size(), 3u);
  EXPECT_EQ(org.children[0].name, "team-a");
  EXPECT_EQ(org.children[0].nominal.at("gpu"), 4000);
  EXPECT_EQ(org.children[0].lending_limit.at("gpu"), 3000);
  ASSERT_EQ(org.children[0].children.size(), 2u);
  EXPECT_EQ(org.children[0].children[1].lending_limit.at("gpu"), 0);
  EXPECT_EQ(org.children[1].name, "team-b");
  EXPECT_EQ(org.children[1].borrowing_limit.at("gpu"), 4000);
  EXPECT_EQ(policy.pipeline_limits.max_running_jobs, 2);
}

TEST(ParsePolicy, MapsIdentitiesToUnixAccounts) {
  const model::Policy policy = ParseOk(kDocumented);
  EXPECT_EQ(model::UnixAccountFor(policy, "alice"), "alice-unix");
  EXPECT_EQ(model::UnixAccountFor(policy, "carol"), "carol");  // unmapped: the same name
  EXPECT_EQ(model::UnixAccountFor(policy, ""), "");
  EXPECT_TRUE(model::MayRunAsRoot(policy, "ops-admin"));
  EXPECT_FALSE(model::MayRunAsRoot(policy, "alice"));
  EXPECT_FALSE(model::MayRunAsRoot(policy, ""));
  EXPECT_EQ(ParseOk("kind: Policy\naccounts: {}\n").accounts, model::Accounts{});
}

TEST(ParsePolicy, ReportsBadAccountsWithTheirPositions) {
  EXPECT_THAT(
      Errors("kind: Policy\naccounts:\n  map: {alice: -rf, bob: 'a b', carol: root}\n"),
      ElementsAre("policy.yaml:3:16: error: accounts.map.alice: invalid Unix account name '-rf': "
                  "use 1 to 32 letters, digits, '.', '_' or '-', not starting with '-'",
                  "policy.yaml:3:26: error: accounts.map.bob: invalid Unix account name 'a b': "
                  "use 1 to 32 letters, digits, '.', '_' or '-', not starting with '-'"));
  EXPECT_THAT(Errors("kind: Policy\naccounts: {map: {a/b: x}}\n"),
              ElementsAre(HasSubstr("policy.yaml:2:18: error: accounts.map.a/b: invalid identity "
                                    "'a/b'")));
  EXPECT_THAT(Errors("kind: Policy\naccounts: {allow_root: [ok, 'x y', [z]]}\n"),
              ElementsAre(HasSubstr("policy.yaml:2:29: error: accounts.allow_root[1]: invalid "
                                    "identity 'x y'"),
                          HasSubstr("policy.yaml:2:36: error: accounts.allow_root[2]: ")));
  EXPECT_THAT(Errors("kind: Policy\naccounts: {allow_roots: [a]}\n"),
              ElementsAre(HasSubstr("policy.yaml:2:12: error: accounts.allow_roots: unknown field "
                                    "'allow_roots'; did you mean 'allow_root'?")));
  EXPECT_THAT(Errors("kind: Policy\naccounts: [a]\n"),
              ElementsAre(HasSubstr("policy.yaml:2:11: error: accounts: expected a mapping")));
}

TEST(ParsePolicy, NeverCrashesOnGarbage) {
  std::mt19937 rng(7);
  const std::string alphabet = "kind:Policy name-[]{}\"',\n\t #&*!|>?%@`\\0.5m\x01\xff";
  const std::string valid(kDocumented);
  for (int round = 0; round < 2000; ++round) {
    const std::string text = testing::Mutate(valid, alphabet, rng);
    PolicyParseOutput out = ParsePolicyWithDiagnostics(text, Options());
    for (const Diagnostic& d : out.diagnostics) {
      EXPECT_GE(d.line, 1);
      EXPECT_GE(d.column, 1);
    }
    EXPECT_NE(out.diagnostics.empty(), !out.policy.has_value());
  }
}

}  // namespace

TEST(ParsePolicy, ReadsAccessGrantsPrivateDataAndSubmitLimits) {
  auto policy = ParsePolicy(R"(kind: Policy
private_data: true
submit_limits:
  per_user: {max_pending_jobs: 100, max_submitted_jobs: 200}
  per_team: {max_submitted_jobs: 1000}
queues:
  - name: research
    access: {team-a: [submit, cancel, logs], "*": [submit]}
    children:
      - name: gpu-a
      - name: gpu-b
        access: {team-b: [submit, hold]}
)",
                            Options());
  ASSERT_TRUE(policy) << policy.error().ToString();
  EXPECT_TRUE(policy->private_data);
  EXPECT_EQ(policy->user_submit_limits.max_pending_jobs, 100);
  EXPECT_EQ(policy->user_submit_limits.max_submitted_jobs, 200);
  EXPECT_EQ(policy->team_submit_limits.max_pending_jobs, std::nullopt);
  EXPECT_EQ(policy->team_submit_limits.max_submitted_jobs, 1000);
  const model::QueueConfig& research = policy->queues.at(0);
  ASSERT_TRUE(research.access);
  EXPECT_THAT(research.access->at("team-a"),
              ElementsAre(model::Verb::kSubmit, model::Verb::kCancel, model::Verb::kLogs));
  EXPECT_THAT(research.access->at("*"), ElementsAre(model::Verb::kSubmit));
  EXPECT_FALSE(research.children.at(0).access);
  EXPECT_THAT(research.children.at(1).access->at("team-b"),
              ElementsAre(model::Verb::kSubmit, model::Verb::kHold));
}

TEST(ParsePolicy, ReportsBadGrantsWithTheirPositions) {
  EXPECT_THAT(Errors(R"(kind: Policy
queues:
  - name: q
    access: {team-a: [submit, details, cancle], "bad team": [submit], team-c: submit}
)"),
              ElementsAre(HasSubstr("policy.yaml:4:"), HasSubstr("policy.yaml:4:"),
                          HasSubstr("policy.yaml:4:"), HasSubstr("policy.yaml:4:")));
  const std::vector<std::string> errors = Errors(R"(kind: Policy
queues:
  - name: q
    access: {team-a: [details]}
)");
  ASSERT_EQ(errors.size(), 1u);
  EXPECT_THAT(errors[0], HasSubstr("queues[0].access.team-a[0]: 'details' is not a verb a queue "
                                   "grants"));
  EXPECT_THAT(errors[0], HasSubstr("submit, cancel, hold, logs"));
  EXPECT_THAT(Errors("kind: Policy\nsubmit_limits: {per_user: {max_pending_jobs: -1}}\n"),
              ElementsAre(HasSubstr("submit_limits.per_user.max_pending_jobs")));
  EXPECT_THAT(Errors("kind: Policy\nprivate_data: maybe\n"),
              ElementsAre(HasSubstr("private_data")));
}

}  // namespace drover::spec
