// The queue tree: its shape, quotas with borrowing and lending, limits, status, creation.

#include "drover/sched/queues.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <map>
#include <random>
#include <set>
#include <string>
#include <vector>

#include "drover/sched/queues_test_util.h"

namespace drover::sched {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

TEST(QueueTree, EmptyPolicyHasOneDefaultLeafThatAdmitsEverything) {
  QueueTree tree = MustCreate(model::Policy{});
  EXPECT_THAT(tree.LeafNames(), ElementsAre("default"));
  std::optional<int> leaf = tree.FindLeaf("default");
  ASSERT_TRUE(leaf.has_value());
  EXPECT_NE(*leaf, 0);
  EXPECT_FALSE(tree.Governs("gpu"));
  Charge big = ChargeOf(tree, "default", {{"gpu", 10'000 * kGpu}, {"cpu", 1'000'000 * kCore}});
  for (int i = 0; i < 100; ++i) MustAdd(tree, big);
  EXPECT_TRUE(tree.WithinNominal(*leaf, big.amounts));
  EXPECT_FALSE(tree.Borrowing(*leaf, "gpu"));

  QueueTree plain;
  EXPECT_THAT(plain.LeafNames(), ElementsAre("default"));
  EXPECT_EQ(plain.FindLeaf("default"), leaf);
}

TEST(QueueTree, NamesPathsAndTreeOrder) {
  QueueTree tree = MustCreate(PolicyOf({
      Queue("org", {{"gpu", 8 * kGpu}},
            {Queue("team-a", {{"gpu", 4 * kGpu}}, {Queue("train"), Queue("infer")}),
             Queue("team-b", {{"gpu", 4 * kGpu}})}),
      Queue("lab"),
  }));
  EXPECT_THAT(tree.LeafNames(), ElementsAre("train", "infer", "team-b", "lab"));
  int train = *tree.FindLeaf("train");
  EXPECT_EQ(tree.Name(train), "train");
  EXPECT_EQ(tree.Path(train), "org/team-a/train");
  EXPECT_FALSE(tree.FindLeaf("team-a").has_value());  // not a leaf
  EXPECT_FALSE(tree.FindLeaf("default").has_value());
  EXPECT_TRUE(tree.Governs("gpu"));
  EXPECT_FALSE(tree.Governs("cpu"));

  std::vector<QueueStatus> rows = tree.Status();
  std::vector<std::string> paths;
  std::vector<int> depths;
  for (const QueueStatus& row : rows) {
    paths.push_back(row.path);
    depths.push_back(row.depth);
  }
  EXPECT_THAT(paths, ElementsAre("org", "org/team-a", "org/team-a/train", "org/team-a/infer",
                                 "org/team-b", "lab"));
  EXPECT_THAT(depths, ElementsAre(0, 1, 2, 2, 1, 0));
  EXPECT_FALSE(Row(rows, "org/team-a").leaf);
  EXPECT_TRUE(Row(rows, "lab").leaf);
  // A governed resource a queue does not set is nominal 0 there.
  EXPECT_EQ(Row(rows, "lab").nominal, (model::ResourceAmounts{{"gpu", 0}}));
}

// --- Quota ---

TEST(Quota, JobWithinNominalIsAdmitted) {
  QueueTree tree = MustCreate(PolicyOf({Queue("a", {{"gpu", 4 * kGpu}})}));
  MustAdd(tree, Gpus(tree, "a", 3));
  EXPECT_TRUE(tree.CheckAdmit(Gpus(tree, "a", 1)).ok());
  AdmitVerdict over = tree.CheckAdmit(Gpus(tree, "a", 2));
  // A single root lends only to itself: the cohort under the synthetic root is its own quota.
  EXPECT_EQ(over.code, AdmitVerdict::Code::kCohort);
  EXPECT_EQ(over.scope, "cohort of a");
}

TEST(Quota, UngovernedResourceIsUnlimited) {
  QueueTree tree = MustCreate(PolicyOf({Queue("a", {{"gpu", 1 * kGpu}})}));
  MustAdd(tree, ChargeOf(tree, "a", {{"cpu", 10'000 * kCore}, {"memory", 1000 * kGi}}));
  EXPECT_TRUE(tree.CheckAdmit(ChargeOf(tree, "a", {{"cpu", 10'000 * kCore}})).ok());
}

TEST(Quota, BorrowsUpToBorrowingLimitWhenSiblingsAreIdle) {
  model::QueueConfig a = Queue("a", {{"gpu", 4 * kGpu}});
  a.borrowing_limit = {{"gpu", 2 * kGpu}};
  QueueTree tree = MustCreate(PolicyOf({a, Queue("b", {{"gpu", 4 * kGpu}})}));
  MustAdd(tree, Gpus(tree, "a", 4));
  MustAdd(tree, Gpus(tree, "a", 2));  // borrows 2 of b's idle 4
  EXPECT_TRUE(tree.Borrowing(*tree.FindLeaf("a"), "gpu"));
  AdmitVerdict verdict = tree.CheckAdmit(Gpus(tree, "a", 1));
  EXPECT_EQ(verdict, (AdmitVerdict{AdmitVerdict::Code::kQuota, "queue a", "gpu", 6 * kGpu, 1 * kGpu,
                                   6 * kGpu, 4 * kGpu, ""}));
  EXPECT_EQ(verdict.Render(),
            "queue a is using 6 GPUs, 2 of them borrowed from the other top-level queues; it may "
            "borrow no more; this job needs 1 GPU");
  // b still gets the 2 it has not lent.
  MustAdd(tree, Gpus(tree, "b", 2));
}

TEST(Quota, WithoutBorrowingLimitBorrowsEverythingSiblingsLeaveIdle) {
  QueueTree tree =
      MustCreate(PolicyOf({Queue("a", {{"gpu", 4 * kGpu}}), Queue("b", {{"gpu", 4 * kGpu}})}));
  MustAdd(tree, Gpus(tree, "a", 8));
  EXPECT_EQ(tree.CheckAdmit(Gpus(tree, "b", 1)).code, AdmitVerdict::Code::kCohort);
}

TEST(Quota, LendingLimitProtectsPartOfSiblingQuota) {
  model::QueueConfig interactive = Queue("interactive", {{"gpu", 4 * kGpu}});
  interactive.lending_limit = {{"gpu", 1 * kGpu}};  // 3 GPUs protected
  QueueTree tree = MustCreate(PolicyOf({Queue("batch", {{"gpu", 4 * kGpu}}), interactive}));
  MustAdd(tree, Gpus(tree, "batch", 5));  // its 4 + the 1 interactive lends
  AdmitVerdict verdict = tree.CheckAdmit(Gpus(tree, "batch", 1));
  EXPECT_EQ(verdict.code, AdmitVerdict::Code::kCohort);
  EXPECT_EQ(verdict.scope, "cohort of batch");
  EXPECT_EQ(verdict.used, 5 * kGpu);
  EXPECT_EQ(verdict.requested, 1 * kGpu);
  EXPECT_EQ(verdict.limit, 5 * kGpu);

  int leaf = *tree.FindLeaf("interactive");
  // The protected 3 are there at once; the 4th is lent and comes back only by preemption,
  // which WithinNominal allows.
  MustAdd(tree, Gpus(tree, "interactive", 3));
  EXPECT_EQ(tree.CheckAdmit(Gpus(tree, "interactive", 1)).code, AdmitVerdict::Code::kCohort);
  EXPECT_TRUE(tree.WithinNominal(leaf, {{"gpu", 1 * kGpu}}));
  EXPECT_FALSE(tree.WithinNominal(leaf, {{"gpu", 2 * kGpu}}));
}

TEST(Quota, CohortExhaustionGivesCohortVerdictWithNumbers) {
  QueueTree tree =
      MustCreate(PolicyOf({Queue("a", {{"gpu", 2 * kGpu}}), Queue("b", {{"gpu", 2 * kGpu}}),
                           Queue("c", {{"gpu", 2 * kGpu}})}));
  MustAdd(tree, Gpus(tree, "a", 4));
  MustAdd(tree, Gpus(tree, "b", 2));
  AdmitVerdict verdict = tree.CheckAdmit(Gpus(tree, "c", 1));
  EXPECT_EQ(verdict, (AdmitVerdict{AdmitVerdict::Code::kCohort, "cohort of c", "gpu", 6 * kGpu,
                                   1 * kGpu, 6 * kGpu, 0, ""}));
  EXPECT_EQ(verdict.Render(),
            "the top-level queues lend each other 6 GPUs: 6 borrowed now, and this job would "
            "borrow 1 more");
}

TEST(Quota, OrgQuotaCapsItsTeams) {
  model::QueueConfig org_a =
      Queue("org-a", {{"gpu", 8 * kGpu}},
            {Queue("t1", {{"gpu", 6 * kGpu}}), Queue("t2", {{"gpu", 6 * kGpu}})});
  org_a.borrowing_limit = {{"gpu", 0}};
  QueueTree tree = MustCreate(PolicyOf({org_a, Queue("org-b", {{"gpu", 8 * kGpu}})}));
  MustAdd(tree, Gpus(tree, "t1", 6));
  MustAdd(tree, Gpus(tree, "t2", 2));
  // t2 is within its own nominal, but org-a is at its 8.
  AdmitVerdict verdict = tree.CheckAdmit(Gpus(tree, "t2", 1));
  EXPECT_EQ(verdict, (AdmitVerdict{AdmitVerdict::Code::kQuota, "queue org-a", "gpu", 8 * kGpu,
                                   1 * kGpu, 8 * kGpu, 8 * kGpu, ""}));
  EXPECT_EQ(verdict.Render(),
            "queue org-a is using 8 of its 8 GPUs; it may not borrow; this job needs 1 GPU");
  EXPECT_TRUE(tree.WithinNominal(*tree.FindLeaf("t2"), {{"gpu", 1 * kGpu}}));
}

TEST(Quota, TeamsBorrowAcrossOrgsOnlyWhatTheirOwnCohortLends) {
  // A team alone under its org: its cohort's pool is its own nominal, so the org's idle
  // neighbour does not help it (the first failure from the leaf upwards is the team's cohort).
  QueueTree tree = MustCreate(PolicyOf({
      Queue("org-a", {{"gpu", 4 * kGpu}}, {Queue("t1", {{"gpu", 4 * kGpu}})}),
      Queue("org-b", {{"gpu", 4 * kGpu}}, {Queue("t2", {{"gpu", 4 * kGpu}})}),
  }));
  MustAdd(tree, Gpus(tree, "t1", 4));
  AdmitVerdict verdict = tree.CheckAdmit(Gpus(tree, "t1", 1));
  EXPECT_EQ(verdict.code, AdmitVerdict::Code::kCohort);
  EXPECT_EQ(verdict.scope, "cohort of org-a/t1");

  // Teams whose nominals add up to more than the org's: the org borrows from org-b.
  QueueTree wide = MustCreate(PolicyOf({
      Queue("org-a", {{"gpu", 4 * kGpu}}, {Queue("t1", {{"gpu", 8 * kGpu}})}),
      Queue("org-b", {{"gpu", 4 * kGpu}}),
  }));
  MustAdd(wide, Gpus(wide, "t1", 8));
  std::vector<QueueStatus> rows = wide.Status();
  EXPECT_EQ(Row(rows, "org-a").borrowed, (model::ResourceAmounts{{"gpu", 4 * kGpu}}));
  EXPECT_EQ(Row(rows, "org-b").lent, (model::ResourceAmounts{{"gpu", 4 * kGpu}}));
  EXPECT_TRUE(wide.Borrowing(*wide.FindLeaf("t1"), "gpu"));  // through org-a
  EXPECT_EQ(wide.CheckAdmit(Gpus(wide, "t1", 1)).scope, "cohort of org-a/t1");
}

TEST(Quota, GroupingQueueWithoutQuotaIsAsLargeAsItsChildren) {
  // org sets no quota: its nominal is its teams' 4 + 4, which it lends to `lab` when idle.
  QueueTree tree = MustCreate(PolicyOf({
      Queue("org", {}, {Queue("a", {{"gpu", 4 * kGpu}}), Queue("b", {{"gpu", 4 * kGpu}})}),
      Queue("lab"),
  }));
  EXPECT_EQ(Row(tree.Status(), "org").nominal, (model::ResourceAmounts{{"gpu", 8 * kGpu}}));
  EXPECT_EQ(Row(tree.Status(), "lab").nominal, (model::ResourceAmounts{{"gpu", 0}}));
  MustAdd(tree, Gpus(tree, "a", 6));    // borrows 2 of b's idle 4
  MustAdd(tree, Gpus(tree, "lab", 1));  // lab has no quota: it borrows org's idle GPUs
  AdmitVerdict verdict = tree.CheckAdmit(Gpus(tree, "b", 2));
  EXPECT_EQ(verdict.code, AdmitVerdict::Code::kCohort);
  EXPECT_EQ(verdict.scope, "cohort of org");  // b's own cohort has room; org has lent 1 to lab
  EXPECT_TRUE(tree.CheckAdmit(Gpus(tree, "b", 1)).ok());
  EXPECT_TRUE(tree.WithinNominal(*tree.FindLeaf("b"), {{"gpu", 2 * kGpu}}));
}

TEST(Quota, PerModelFlavorIsGovernedApart) {
  QueueTree tree = MustCreate(PolicyOf({Queue("a", {{"gpu", 8 * kGpu}, {"gpu:h100", 2 * kGpu}})}));
  MustAdd(tree, ChargeOf(tree, "a", {{"gpu", 2 * kGpu}, {"gpu:h100", 2 * kGpu}}));
  AdmitVerdict verdict =
      tree.CheckAdmit(ChargeOf(tree, "a", {{"gpu", 1 * kGpu}, {"gpu:h100", 1 * kGpu}}));
  EXPECT_EQ(verdict.resource, "gpu:h100");
  EXPECT_THAT(verdict.Render(), HasSubstr("lend each other 2 H100 GPUs: 2 borrowed now"));
  EXPECT_TRUE(tree.CheckAdmit(ChargeOf(tree, "a", {{"gpu", 1 * kGpu}, {"gpu:a100", kGpu}})).ok());
}

TEST(Quota, RemoveReturnsCapacity) {
  QueueTree tree =
      MustCreate(PolicyOf({Queue("a", {{"gpu", 2 * kGpu}}), Queue("b", {{"gpu", 2 * kGpu}})}));
  Charge job = Gpus(tree, "a", 4);
  MustAdd(tree, job);
  EXPECT_FALSE(tree.CheckAdmit(Gpus(tree, "b", 1)).ok());
  tree.Remove(job);
  EXPECT_TRUE(tree.CheckAdmit(Gpus(tree, "b", 2)).ok());
  EXPECT_TRUE(tree.CheckAdmit(Gpus(tree, "a", 4)).ok());
  std::vector<QueueStatus> rows = tree.Status();
  EXPECT_EQ(Row(rows, "a").usage, (model::ResourceAmounts{{"gpu", 0}}));
  EXPECT_EQ(Row(rows, "a").running_jobs, 0);
  // Removing a charge never added does not drive usage below zero.
  tree.Remove(job);
  EXPECT_EQ(tree.Status()[0].usage.at("gpu"), 0);
  MustAdd(tree, Gpus(tree, "a", 4));
}

TEST(Quota, WithinNominalAndBorrowing) {
  QueueTree tree = MustCreate(PolicyOf(
      {Queue("a", {{"gpu", 2 * kGpu}, {"cpu", 8 * kCore}}), Queue("b", {{"gpu", 2 * kGpu}})}));
  int a = *tree.FindLeaf("a");
  EXPECT_TRUE(tree.WithinNominal(a, {{"gpu", 2 * kGpu}}));
  EXPECT_FALSE(tree.WithinNominal(a, {{"gpu", 3 * kGpu}}));
  EXPECT_TRUE(tree.WithinNominal(a, {{"memory", 100 * kGi}}));  // not governed
  EXPECT_FALSE(tree.Borrowing(a, "gpu"));
  MustAdd(tree, ChargeOf(tree, "a", {{"gpu", 3 * kGpu}}));
  EXPECT_TRUE(tree.Borrowing(a, "gpu"));
  EXPECT_FALSE(tree.Borrowing(a, "cpu"));
  EXPECT_FALSE(tree.Borrowing(a, "memory"));
  // Borrowing GPUs does not stop a CPU-only job from being within nominal.
  EXPECT_TRUE(tree.WithinNominal(a, {{"cpu", 8 * kCore}}));
  EXPECT_FALSE(tree.WithinNominal(a, {{"gpu", 1}}));
}

// --- Concurrency limits ---

TEST(Limit, MaxRunningJobsOfAQueue) {
  model::QueueConfig a = Queue("a");
  a.limits.max_running_jobs = 2;
  QueueTree tree = MustCreate(PolicyOf({a}));
  MustAdd(tree, Gpus(tree, "a", 1));
  MustAdd(tree, Gpus(tree, "a", 1));
  AdmitVerdict verdict = tree.CheckAdmit(Gpus(tree, "a", 1));
  EXPECT_EQ(verdict, (AdmitVerdict{AdmitVerdict::Code::kLimit, "queue a", "jobs", 2, 1, 2, 0, ""}));
  EXPECT_EQ(verdict.Render(), "queue a is running 2 of at most 2 jobs");
}

TEST(Limit, MaxResourcesAtAParentCapsTheSubtree) {
  model::QueueConfig org = Queue("org", {}, {Queue("t1"), Queue("t2")});
  org.limits.max_resources = {{"memory", 64 * kGi}};
  QueueTree tree = MustCreate(PolicyOf({org}));
  MustAdd(tree, ChargeOf(tree, "t1", {{"memory", 48 * kGi}}));
  AdmitVerdict verdict = tree.CheckAdmit(ChargeOf(tree, "t2", {{"memory", 32 * kGi}}));
  EXPECT_EQ(verdict.code, AdmitVerdict::Code::kLimit);
  EXPECT_EQ(verdict.scope, "queue org");
  EXPECT_EQ(verdict.Render(),
            "queue org is using 48Gi of at most 64Gi of memory; this job needs 32Gi of memory");
}

TEST(Limit, UserLimitsApplyToEachUserWithinTheSubtree) {
  model::QueueConfig org = Queue("org", {}, {Queue("t1"), Queue("t2")});
  org.user_limits.max_resources = {{"gpu", 4 * kGpu}};
  QueueTree tree = MustCreate(PolicyOf({org}));
  MustAdd(tree, Gpus(tree, "t1", 3, "alice"));
  AdmitVerdict verdict = tree.CheckAdmit(Gpus(tree, "t2", 2, "alice"));
  EXPECT_EQ(verdict, (AdmitVerdict{AdmitVerdict::Code::kLimit, "user alice in queue org", "gpu",
                                   3 * kGpu, 2 * kGpu, 4 * kGpu, 0, ""}));
  EXPECT_EQ(verdict.Render(),
            "user alice in queue org is using 3 of at most 4 GPUs; this job needs 2 GPUs");
  EXPECT_TRUE(tree.CheckAdmit(Gpus(tree, "t2", 4, "bob")).ok());
  EXPECT_TRUE(tree.CheckAdmit(Gpus(tree, "t2", 1, "alice")).ok());
}

TEST(Limit, UserMaxRunningJobsInALeaf) {
  model::QueueConfig a = Queue("a");
  a.user_limits.max_running_jobs = 1;
  QueueTree tree = MustCreate(PolicyOf({a}));
  Charge first = Gpus(tree, "a", 1, "alice");
  MustAdd(tree, first);
  EXPECT_EQ(tree.CheckAdmit(Gpus(tree, "a", 1, "alice")).scope, "user alice in queue a");
  MustAdd(tree, Gpus(tree, "a", 1, "bob"));
  tree.Remove(first);
  EXPECT_TRUE(tree.CheckAdmit(Gpus(tree, "a", 1, "alice")).ok());
}

TEST(Limit, PipelineLimitsCountAcrossQueues) {
  model::Policy policy = PolicyOf({Queue("a"), Queue("b")});
  policy.pipeline_limits.max_running_jobs = 1;
  policy.pipeline_limits.max_resources = {{"cpu", 4 * kCore}};
  QueueTree tree = MustCreate(policy);
  MustAdd(tree, ChargeOf(tree, "a", {{"cpu", 2 * kCore}}, "alice", "nightly"));
  AdmitVerdict verdict =
      tree.CheckAdmit(ChargeOf(tree, "b", {{"cpu", 1 * kCore}}, "bob", "nightly"));
  EXPECT_EQ(verdict,
            (AdmitVerdict{AdmitVerdict::Code::kLimit, "pipeline nightly", "jobs", 1, 1, 1, 0, ""}));
  EXPECT_TRUE(tree.CheckAdmit(ChargeOf(tree, "b", {{"cpu", 1 * kCore}}, "bob", "weekly")).ok());
  // A job without a pipeline is not limited by pipeline limits.
  EXPECT_TRUE(tree.CheckAdmit(ChargeOf(tree, "b", {{"cpu", 64 * kCore}}, "bob", "")).ok());
  AdmitVerdict cpu = tree.CheckAdmit(ChargeOf(tree, "b", {{"cpu", 8 * kCore}}, "bob", "weekly"));
  EXPECT_EQ(cpu.Render(), "pipeline weekly is using 0 of at most 4 CPUs; this job needs 8 CPUs");
}

TEST(Limit, QuotaIsCheckedBeforeLimits) {
  model::QueueConfig a = Queue("a", {{"gpu", 1 * kGpu}});
  a.borrowing_limit = {{"gpu", 0}};
  a.limits.max_running_jobs = 0;
  QueueTree tree = MustCreate(PolicyOf({a}));
  EXPECT_EQ(tree.CheckAdmit(Gpus(tree, "a", 2)).code, AdmitVerdict::Code::kQuota);
  EXPECT_EQ(tree.CheckAdmit(Gpus(tree, "a", 1)).code, AdmitVerdict::Code::kLimit);
}

// --- Status ---

TEST(QueueStatus, ReportsUsageBorrowedLentShareAndJobs) {
  model::QueueConfig b = Queue("b", {{"gpu", 4 * kGpu}});
  b.lending_limit = {{"gpu", 2 * kGpu}};
  QueueTree tree =
      MustCreate(PolicyOf({Queue("a", {{"gpu", 4 * kGpu}}), b, Queue("c", {{"gpu", 2 * kGpu}})}));
  tree.Advance(0, {{"gpu", 10 * kGpu}});
  MustAdd(tree, Gpus(tree, "a", 4));
  MustAdd(tree, ChargeOf(tree, "a", {{"gpu", 3 * kGpu}, {"cpu", 4 * kCore}}));
  std::vector<QueueStatus> rows = tree.Status();
  ASSERT_EQ(rows.size(), 3u);
  const QueueStatus& a = Row(rows, "a");
  EXPECT_EQ(a.usage, (model::ResourceAmounts{{"gpu", 7 * kGpu}, {"cpu", 4 * kCore}}));
  EXPECT_EQ(a.nominal, (model::ResourceAmounts{{"gpu", 4 * kGpu}}));
  EXPECT_EQ(a.borrowed, (model::ResourceAmounts{{"gpu", 3 * kGpu}}));
  EXPECT_TRUE(a.lent.empty());
  EXPECT_EQ(a.running_jobs, 2);
  EXPECT_DOUBLE_EQ(a.share, 0.7);
  // b lends at most 2 (lending limit) and c 2 (its whole nominal): the 3 borrowed split evenly.
  EXPECT_EQ(Row(rows, "b").lent, (model::ResourceAmounts{{"gpu", 1500}}));
  EXPECT_EQ(Row(rows, "c").lent, (model::ResourceAmounts{{"gpu", 1500}}));
  EXPECT_TRUE(Row(rows, "b").borrowed.empty());
  EXPECT_EQ(Row(rows, "c").running_jobs, 0);
}

TEST(QueueStatus, LentIsSplitInProportionToUnusedLendableQuota) {
  QueueTree tree =
      MustCreate(PolicyOf({Queue("a", {{"gpu", 2 * kGpu}}), Queue("b", {{"gpu", 6 * kGpu}}),
                           Queue("c", {{"gpu", 3 * kGpu}})}));
  MustAdd(tree, Gpus(tree, "a", 6));  // borrows 4
  MustAdd(tree, Gpus(tree, "c", 1));  // c has 2 unused, b 6
  std::vector<QueueStatus> rows = tree.Status();
  EXPECT_EQ(Row(rows, "b").lent.at("gpu"), 3 * kGpu);  // 4 * 6 / 8
  EXPECT_EQ(Row(rows, "c").lent.at("gpu"), 1 * kGpu);  // 4 * 2 / 8
  EXPECT_EQ(Row(rows, "c").usage.at("gpu"), 1 * kGpu);
}

// --- Rendering, amounts, validation ---

TEST(AdmitVerdictRender, Sentences) {
  EXPECT_EQ(AdmitVerdict{}.Render(), "admitted");
  AdmitVerdict fractional{
      AdmitVerdict::Code::kQuota, "queue team-a", "gpu", 2000, 500, 2000, 1500, ""};
  EXPECT_EQ(fractional.Render(),
            "queue team-a is using 2 GPUs, 500m of them borrowed from the other top-level queues; "
            "it may borrow no more; this job needs 500m GPUs");
  // The sentence of issue 18: a team at its quota that may borrow from its org.
  AdmitVerdict team{
      AdmitVerdict::Code::kQuota, "queue org/team-b", "gpu", 7000, 2000, 8000, 7000, "org"};
  EXPECT_EQ(team.Render(),
            "queue org/team-b is using 7 of its 7 GPUs; it may borrow 1 more from org; this job "
            "needs 2 GPUs");
  AdmitVerdict one{
      AdmitVerdict::Code::kLimit, "user bob in queue x", "gpu:h100", 0, 1000, 0, 0, ""};
  EXPECT_EQ(one.Render(),
            "user bob in queue x is using 0 of at most 0 H100 GPUs; this job needs 1 H100 GPU");
  AdmitVerdict cpu{AdmitVerdict::Code::kLimit, "queue x", "cpu", 7500, 500, 7500, 0, ""};
  EXPECT_EQ(cpu.Render(), "queue x is using 7500m of at most 7500m CPUs; this job needs 500m CPUs");
  AdmitVerdict job{AdmitVerdict::Code::kLimit, "pipeline nightly", "jobs", 0, 1, 0, 0, ""};
  EXPECT_EQ(job.Render(), "pipeline nightly is running 0 of at most 0 jobs");
  AdmitVerdict memory{AdmitVerdict::Code::kCohort,
                      "cohort of org/a",
                      "memory",
                      64 * kGi,
                      8 * kGi,
                      64 * kGi,
                      0,
                      "org"};
  EXPECT_EQ(memory.Render(),
            "the queues under org lend each other 64Gi of memory: 64Gi borrowed now, and this job "
            "would borrow 8Gi more");
}

TEST(ChargeAmountsOf, WorkersTimesPerWorkerAmounts) {
  model::JobSpec spec;
  spec.workers = 4;
  spec.requirements.per_worker = {2 * kCore, 16 * kGi, 2};
  EXPECT_EQ(
      ChargeAmounts(spec, "H100"),
      (FlatAmounts{
          {"cpu", 8 * kCore}, {"memory", 64 * kGi}, {"gpu", 8 * kGpu}, {"gpu:h100", 8 * kGpu}}));
  EXPECT_EQ(ChargeAmounts(spec, ""),
            (FlatAmounts{{"cpu", 8 * kCore}, {"memory", 64 * kGi}, {"gpu", 8 * kGpu}}));

  model::JobSpec shared;
  shared.workers = 3;
  shared.requirements.per_worker = {500, 0, 0};
  shared.requirements.gpu_share_millis = 250;
  EXPECT_EQ(ChargeAmounts(shared, "A100"),
            (FlatAmounts{{"cpu", 1500}, {"gpu", 750}, {"gpu:a100", 750}}));

  model::JobSpec mig;
  mig.requirements.mig_profile = "3g.71gb";
  EXPECT_EQ(ChargeAmounts(mig, "H100"), (FlatAmounts{{"gpu", 428}, {"gpu:h100", 428}}));
  mig.workers = 2;
  mig.requirements.mig_profile = "1g.10gb";
  EXPECT_EQ(ChargeAmounts(mig, "").at("gpu"), 2 * 142);

  model::JobSpec cpu_only;
  cpu_only.requirements.per_worker = {1000, kGi, 0};
  EXPECT_EQ(ChargeAmounts(cpu_only, "H100"), (FlatAmounts{{"cpu", 1000}, {"memory", kGi}}));
}

std::string CreateError(const model::Policy& policy) {
  Result<QueueTree> tree = QueueTree::Create(policy);
  if (tree.has_value()) return "ok";
  EXPECT_EQ(tree.error().code, ErrorCode::kInvalidArgument);
  return tree.error().message;
}

TEST(QueueCreate, RejectsMalformedPolicies) {
  EXPECT_EQ(CreateError(PolicyOf({Queue("org", {}, {Queue("x")}), Queue("lab", {}, {Queue("x")})})),
            "queue lab/x: name: duplicate leaf name (queue org/x has it too; leaf names are "
            "unique in the whole tree)");
  EXPECT_EQ(CreateError(PolicyOf({Queue("org", {}, {Queue("x"), Queue("x")})})),
            "queue org/x: name: duplicate name: two queues under org have it");
  EXPECT_EQ(CreateError(PolicyOf({Queue("")})), "queue at the top level: name: must not be empty");

  model::QueueConfig weightless = Queue("w");
  weightless.weight = 0;
  EXPECT_EQ(CreateError(PolicyOf({Queue("org", {}, {weightless})})),
            "queue org/w: weight: must be above 0 (is 0)");

  EXPECT_EQ(CreateError(PolicyOf({Queue("a", {{"gpu", -1}})})),
            "queue a: nominal.gpu: must not be negative (is -1)");

  model::QueueConfig lender = Queue("a", {{"gpu", 4 * kGpu}});
  lender.lending_limit = {{"gpu", 5 * kGpu}};
  EXPECT_EQ(CreateError(PolicyOf({Queue("org", {}, {lender})})),
            "queue org/a: lending_limit.gpu: 5 is above the nominal 4");
  model::QueueConfig cpu_lender = Queue("a", {{"gpu", 4 * kGpu}});
  cpu_lender.lending_limit = {{"cpu", 500}};
  EXPECT_EQ(CreateError(PolicyOf({cpu_lender})),
            "queue a: lending_limit.cpu: 500m is above the nominal 0");

  model::QueueConfig negative_borrow = Queue("a", {{"gpu", 4 * kGpu}});
  negative_borrow.borrowing_limit = {{"gpu", -2}};
  EXPECT_THAT(CreateError(PolicyOf({negative_borrow})),
              HasSubstr("queue a: borrowing_limit.gpu: must not be negative"));

  model::QueueConfig group = Queue("org", {}, {Queue("a", {{"gpu", 4 * kGpu}})});
  group.lending_limit = {{"gpu", 5 * kGpu}};
  EXPECT_EQ(CreateError(PolicyOf({group})),
            "queue org: lending_limit.gpu: 5 is above the nominal 4 (the sum of its children's)");
  model::QueueConfig zero_lender = Queue("a", {{"gpu", 4 * kGpu}});
  zero_lender.lending_limit = {{"cpu", 0}};
  EXPECT_EQ(CreateError(PolicyOf({zero_lender})), "ok");

  model::QueueConfig ungoverned_borrow = Queue("a", {{"gpu", 4 * kGpu}});
  ungoverned_borrow.borrowing_limit = {{"cpu", 2 * kCore}};
  EXPECT_THAT(CreateError(PolicyOf({ungoverned_borrow})),
              HasSubstr("queue a: borrowing_limit.cpu: no queue sets a nominal amount"));

  EXPECT_THAT(CreateError(PolicyOf({Queue("a", {{"gpu:H100", 4 * kGpu}})})),
              HasSubstr("queue a: nominal.gpu:H100: unknown resource"));

  model::QueueConfig limited = Queue("a");
  limited.user_limits.max_running_jobs = -1;
  EXPECT_EQ(CreateError(PolicyOf({Queue("org", {}, {limited})})),
            "queue org/a: user_limits.max_running_jobs: must not be negative (is -1)");
  model::QueueConfig limited_gpu = Queue("a");
  limited_gpu.limits.max_resources = {{"gpu", -1000}};
  EXPECT_THAT(CreateError(PolicyOf({limited_gpu})),
              HasSubstr("queue a: limits.max_resources.gpu: must not be negative"));

  model::Policy pipelines;
  pipelines.pipeline_limits.max_running_jobs = -3;
  EXPECT_EQ(CreateError(pipelines),
            "pipeline_limits.max_running_jobs: must not be negative (is -3)");

  EXPECT_EQ(CreateError(PolicyOf({Queue("org", {{"gpu", 0}}, {Queue("x")})})), "ok");
}

}  // namespace
}  // namespace drover::sched
