// The Store contract (store.h), run against every implementation.

// Batches and filters below are written as C++20 designated initializers naming only the fields
// that matter; g++ 12 flags the omitted ones, which is exactly the intent here.
#pragma GCC diagnostic ignored "-Wmissing-field-initializers"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <stdlib.h>

#include <atomic>
#include <filesystem>
#include <functional>
#include <limits>
#include <memory>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "drover/codec/sample_values.h"
#include "drover/store/postgres_store.h"
#include "drover/store/sqlite_store.h"
#include "drover/store/store.h"
#include "drover/store/test_util.h"
#include "drover/testing/postgres_cluster.h"

namespace drover::store {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::IsEmpty;

struct StoreFactory {
  std::string name;
  // Opens a store kept in `dir` (ignored by in-memory stores).
  std::function<Result<std::unique_ptr<Store>>(const std::string& dir)> open;
};

class StoreContractTest : public ::testing::TestWithParam<StoreFactory> {
 protected:
  void SetUp() override {
    auto store = GetParam().open(dir_.path());
    ASSERT_TRUE(store.has_value()) << store.error().ToString();
    store_ = std::move(*store);
  }

  // Applies `batch`, failing the test on error.
  void MustApply(const Batch& batch) {
    Status status = store_->Apply(batch);
    ASSERT_TRUE(status.has_value()) << status.error().ToString();
  }

  void MustPutAgent(const AgentRecord& agent) {
    Status status = store_->PutAgent(agent);
    ASSERT_TRUE(status.has_value()) << status.error().ToString();
  }
  std::vector<AgentRecord> ListAgents() {
    auto agents = store_->ListAgents();
    EXPECT_TRUE(agents.has_value()) << agents.error().ToString();
    return agents ? *agents : std::vector<AgentRecord>{};
  }

  std::vector<std::int64_t> ListIds(const JobFilter& filter) {
    auto jobs = store_->ListJobs(filter);
    EXPECT_TRUE(jobs.has_value()) << jobs.error().ToString();
    std::vector<std::int64_t> ids;
    if (jobs.has_value()) {
      for (const auto& job : *jobs) ids.push_back(job.id.value());
    }
    return ids;
  }

  TempDir dir_;
  std::unique_ptr<Store> store_;
};

TEST_P(StoreContractTest, EmptyStoreHasNothing) {
  EXPECT_EQ(store_->MaxJobId().value(), 0);
  EXPECT_THAT(ListIds({}), IsEmpty());
  auto job = store_->GetJob(JobId(1));
  ASSERT_FALSE(job.has_value());
  EXPECT_EQ(job.error().code, ErrorCode::kNotFound);
  EXPECT_THAT(store_->ListTransitions(JobId(1)).value(), IsEmpty());
  EXPECT_THAT(store_->FindSubmission("k").value(), IsEmpty());
  EXPECT_THAT(store_->ListDecisions(JobId(1)).value(), IsEmpty());
  EXPECT_TRUE(store_->Apply(Batch{}).has_value());
}

TEST_P(StoreContractTest, AppliedJobReadsBackEqual) {
  const model::Job job = codec::testing::SampleJob(7);
  const model::Transition transition = codec::testing::SampleTransition(7);
  MustApply({.jobs = {job}, .transitions = {transition}});
  auto stored = store_->GetJob(JobId(7));
  ASSERT_TRUE(stored.has_value()) << stored.error().ToString();
  EXPECT_EQ(*stored, job);
  EXPECT_THAT(store_->ListTransitions(JobId(7)).value(), ElementsAre(transition));
  EXPECT_EQ(store_->MaxJobId().value(), 7);
}

TEST_P(StoreContractTest, ReplacesSnapshotsById) {
  model::Job job = MakeJob(1, "a");
  MustApply({.jobs = {job}});
  job.state = model::JobState::kRunning;
  job.spec.owner = "bob";
  job.status_message = "running on 2 nodes";
  job.attempts.push_back(codec::testing::SampleAttempt(1));
  MustApply({.jobs = {job}});
  EXPECT_EQ(store_->GetJob(JobId(1)).value(), job);
  EXPECT_THAT(ListIds({}), ElementsAre(1));
  // Indexed columns follow the snapshot.
  EXPECT_THAT(ListIds({.state = model::JobState::kRunning}), ElementsAre(1));
  EXPECT_THAT(ListIds({.state = model::JobState::kPending}), IsEmpty());
  EXPECT_THAT(ListIds({.owner = "bob"}), ElementsAre(1));
  EXPECT_THAT(ListIds({.owner = "alice"}), IsEmpty());
}

TEST_P(StoreContractTest, LaterSnapshotInOneBatchWins) {
  model::Job first = MakeJob(1, "a");
  model::Job second = first;
  second.state = model::JobState::kReady;
  MustApply({.jobs = {first, second}});
  EXPECT_EQ(store_->GetJob(JobId(1)).value(), second);
}

TEST_P(StoreContractTest, FiltersJobs) {
  std::vector<model::Job> jobs;
  for (int id = 1; id <= 6; ++id) jobs.push_back(MakeJob(id, "job-" + std::to_string(id)));
  jobs[0].spec.owner = "bob";
  jobs[1].spec.team = "infra";
  jobs[2].spec.queue = "batch";
  jobs[3].state = model::JobState::kSucceeded;
  jobs[4].state = model::JobState::kRunning;
  jobs[5].state = model::JobState::kCancelled;
  jobs[5].spec.owner = "bob";
  MustApply({.jobs = jobs});

  EXPECT_THAT(ListIds({}), ElementsAre(1, 2, 3, 4, 5, 6));
  EXPECT_THAT(ListIds({.state = model::JobState::kRunning}), ElementsAre(5));
  EXPECT_THAT(ListIds({.state = model::JobState::kPending}), ElementsAre(1, 2, 3));
  EXPECT_THAT(ListIds({.owner = "bob"}), ElementsAre(1, 6));
  EXPECT_THAT(ListIds({.team = "infra"}), ElementsAre(2));
  EXPECT_THAT(ListIds({.queue = "batch"}), ElementsAre(3));
  EXPECT_THAT(ListIds({.name = "job-4"}), ElementsAre(4));
  EXPECT_THAT(ListIds({.name = "nope"}), IsEmpty());
  EXPECT_THAT(ListIds({.active_only = true}), ElementsAre(1, 2, 3, 5));
  EXPECT_THAT(ListIds({.owner = "bob", .active_only = true}), ElementsAre(1));
  EXPECT_THAT(ListIds({.state = model::JobState::kPending, .owner = "alice", .team = "research"}),
              ElementsAre(3));
}

// Active means not finished as model::IsTerminal says: a skipped job (it never ran) is finished
// like a succeeded one, in every store.
TEST_P(StoreContractTest, ActiveJobsAreTheUnfinishedOnesSkippedIsFinished) {
  std::vector<model::Job> jobs;
  for (model::JobState state : model::kJobStateNames.Values()) {
    model::Job job = MakeJob(static_cast<std::int64_t>(jobs.size()) + 1,
                             std::string(model::JobStateName(state)));
    job.state = state;
    jobs.push_back(std::move(job));
  }
  MustApply({.jobs = jobs});
  // 1-6: pending..running, 7-10: succeeded..timed_out, 11: waiting, 12: skipped.
  EXPECT_THAT(ListIds({.active_only = true}), ElementsAre(1, 2, 3, 4, 5, 6, 11));
  EXPECT_THAT(ListIds({.active_only = true, .limit = 1}), ElementsAre(11));
  EXPECT_THAT(ListIds({.state = model::JobState::kSkipped}), ElementsAre(12));
  EXPECT_THAT(ListIds({.state = model::JobState::kSkipped, .active_only = true}), IsEmpty());
}

TEST_P(StoreContractTest, LimitReturnsNewestFirst) {
  std::vector<model::Job> jobs;
  for (int id = 1; id <= 5; ++id) jobs.push_back(MakeJob(id, "j"));
  jobs[4].state = model::JobState::kFailed;
  MustApply({.jobs = jobs});
  EXPECT_THAT(ListIds({.limit = 2}), ElementsAre(5, 4));
  EXPECT_THAT(ListIds({.limit = 10}), ElementsAre(5, 4, 3, 2, 1));
  EXPECT_THAT(ListIds({.active_only = true, .limit = 2}), ElementsAre(4, 3));
  auto bad = store_->ListJobs({.limit = -1});
  ASSERT_FALSE(bad.has_value());
  EXPECT_EQ(bad.error().code, ErrorCode::kInvalidArgument);
}

TEST_P(StoreContractTest, TransitionsKeepAppliedOrderPerJob) {
  MustApply({.jobs = {MakeJob(1, "a"), MakeJob(2, "b")}});
  std::vector<model::Transition> one;
  std::vector<model::Transition> two;
  for (int i = 0; i < 5; ++i) {
    model::Transition t{.job = JobId(1 + i % 2),
                        .attempt = i,
                        .from = model::JobState::kPending,
                        .to = model::JobState::kReady,
                        .at = 1000 - i,
                        .cause = "step " + std::to_string(i)};
    (i % 2 == 0 ? one : two).push_back(t);
    MustApply({.transitions = {t}});
  }
  // Applied in a later batch, at an earlier time: order is application order, not time.
  model::Transition late{.job = JobId(1),
                         .attempt = 9,
                         .from = model::JobState::kReady,
                         .to = model::JobState::kCancelled,
                         .at = 1,
                         .cause = "cancel"};
  MustApply({.transitions = {late}});
  one.push_back(late);
  EXPECT_EQ(store_->ListTransitions(JobId(1)).value(), one);
  EXPECT_EQ(store_->ListTransitions(JobId(2)).value(), two);
  EXPECT_THAT(store_->ListTransitions(JobId(3)).value(), IsEmpty());
}

TEST_P(StoreContractTest, TransitionMayNameJobInSameBatch) {
  MustApply({.jobs = {MakeJob(3, "c")}, .transitions = {codec::testing::SampleTransition(3)}});
  EXPECT_EQ(store_->ListTransitions(JobId(3)).value().size(), 1u);
}

TEST_P(StoreContractTest, NodeAdminIsWrittenWithTheBatchAndReplacedByNode) {
  EXPECT_THAT(store_->ListNodeAdmin().value(), IsEmpty());
  model::NodeAdmin cordoned;
  cordoned.cordoned = true;
  cordoned.cordoned_at = 1'700'000'000'000;
  cordoned.cordoned_by = "root (admin)";
  cordoned.reason = "disk swap";
  model::NodeAdmin windowed;
  windowed.maintenance =
      model::MaintenanceWindow{1'700'000'100'000, 1'700'000'200'000, "root (admin)", 5, "bios"};
  MustApply({.jobs = {MakeJob(1, "a")},
             .nodes = {{NodeId("node-b"), windowed}, {NodeId("node-a"), cordoned}}});
  EXPECT_THAT(store_->ListNodeAdmin().value(),
              ElementsAre(NodeAdminRecord{NodeId("node-a"), cordoned},
                          NodeAdminRecord{NodeId("node-b"), windowed}));
  model::NodeAdmin draining = cordoned;
  draining.draining = true;
  draining.drain_deadline = 1'700'000'300'000;
  MustApply({.nodes = {{NodeId("node-a"), draining}}});
  EXPECT_THAT(store_->ListNodeAdmin().value(),
              ElementsAre(NodeAdminRecord{NodeId("node-a"), draining},
                          NodeAdminRecord{NodeId("node-b"), windowed}));
}

TEST_P(StoreContractTest, BatchWithUnknownJobStoresNothing) {
  MustApply({.jobs = {MakeJob(1, "a")}});
  model::Job changed = MakeJob(1, "a");
  changed.state = model::JobState::kReady;
  Batch bad{
      .jobs = {changed, MakeJob(2, "b")},
      .transitions = {codec::testing::SampleTransition(1), codec::testing::SampleTransition(99)}};
  Status status = store_->Apply(bad);
  ASSERT_FALSE(status.has_value());
  EXPECT_EQ(status.error().code, ErrorCode::kInvalidArgument);
  EXPECT_THAT(status.error().message, ::testing::HasSubstr("transitions[1]"));
  EXPECT_THAT(status.error().message, ::testing::HasSubstr("99"));
  // Nothing of the batch is visible.
  EXPECT_EQ(store_->GetJob(JobId(1)).value(), MakeJob(1, "a"));
  EXPECT_EQ(store_->GetJob(JobId(2)).error().code, ErrorCode::kNotFound);
  EXPECT_THAT(store_->ListTransitions(JobId(1)).value(), IsEmpty());
  EXPECT_EQ(store_->MaxJobId().value(), 1);
  // The store still works afterwards.
  MustApply({.transitions = {codec::testing::SampleTransition(1)}});
  EXPECT_EQ(store_->ListTransitions(JobId(1)).value().size(), 1u);
}

TEST_P(StoreContractTest, RejectsJobIdsBelowOne) {
  Status status = store_->Apply({.jobs = {MakeJob(0, "zero")}});
  ASSERT_FALSE(status.has_value());
  EXPECT_EQ(status.error().code, ErrorCode::kInvalidArgument);
  EXPECT_EQ(store_->MaxJobId().value(), 0);
}

TEST_P(StoreContractTest, FindsSubmissionsByKey) {
  model::Job a = MakeJob(1, "a");
  model::Job b = MakeJob(2, "b");
  model::Job c = MakeJob(3, "c");
  model::Job d = MakeJob(4, "d");
  a.submission_key = "key-1";
  b.submission_key = "key-2";
  c.submission_key = "key-1";
  MustApply({.jobs = {c, b, a, d}});
  EXPECT_THAT(store_->FindSubmission("key-1").value(), ElementsAre(JobId(1), JobId(3)));
  EXPECT_THAT(store_->FindSubmission("key-2").value(), ElementsAre(JobId(2)));
  EXPECT_THAT(store_->FindSubmission("key-3").value(), IsEmpty());
  EXPECT_THAT(store_->FindSubmission("").value(), IsEmpty());
  // A replacement that changes the key moves the job.
  b.submission_key = "key-1";
  MustApply({.jobs = {b}});
  EXPECT_THAT(store_->FindSubmission("key-1").value(), ElementsAre(JobId(1), JobId(2), JobId(3)));
  EXPECT_THAT(store_->FindSubmission("key-2").value(), IsEmpty());
}

TEST_P(StoreContractTest, MaxJobIdIsLargestStored) {
  MustApply({.jobs = {MakeJob(5, "a"), MakeJob(3, "b")}});
  EXPECT_EQ(store_->MaxJobId().value(), 5);
  MustApply({.jobs = {MakeJob(12, "c")}});
  EXPECT_EQ(store_->MaxJobId().value(), 12);
}

TEST_P(StoreContractTest, DecisionsAreListedForTheirJobAndForTheirVictims) {
  using Kind = model::Decision::Kind;
  MustApply({.jobs = {MakeJob(1, "a"), MakeJob(2, "b"), MakeJob(3, "c")}});
  const model::Decision placed = MakeDecision(1, Kind::kPlaced);
  // Job 3 preempts 1 and 2 (2 named twice: it is still listed once), then 1 learns it was evicted.
  const model::Decision preempted = MakeDecision(3, Kind::kPreempted, {1, 2, 2});
  const model::Decision evicted = MakeDecision(1, Kind::kEvicted);
  MustApply({.decisions = {placed}});
  MustApply({.decisions = {preempted, evicted}});
  EXPECT_THAT(store_->ListDecisions(JobId(1)).value(), ElementsAre(placed, preempted, evicted));
  EXPECT_THAT(store_->ListDecisions(JobId(2)).value(), ElementsAre(preempted));
  EXPECT_THAT(store_->ListDecisions(JobId(3)).value(), ElementsAre(preempted));
  EXPECT_THAT(store_->ListDecisions(JobId(4)).value(), IsEmpty());
}

TEST_P(StoreContractTest, DecisionsMayNameJobsOfTheSameBatch) {
  const model::Decision placed = MakeDecision(5, model::Decision::Kind::kPlaced);
  MustApply({.jobs = {MakeJob(5, "e")}, .decisions = {placed}});
  EXPECT_THAT(store_->ListDecisions(JobId(5)).value(), ElementsAre(placed));
}

TEST_P(StoreContractTest, DecisionAboutAnUnknownJobStoresNothing) {
  MustApply({.jobs = {MakeJob(1, "a")}});
  Status status = store_->Apply({.jobs = {MakeJob(2, "b")},
                                 .decisions = {MakeDecision(1, model::Decision::Kind::kPlaced),
                                               MakeDecision(7, model::Decision::Kind::kPlaced)}});
  ASSERT_FALSE(status.has_value());
  EXPECT_EQ(status.error().code, ErrorCode::kInvalidArgument);
  EXPECT_THAT(status.error().message, ::testing::HasSubstr("decisions[1]"));
  EXPECT_THAT(store_->ListDecisions(JobId(1)).value(), IsEmpty());
  EXPECT_EQ(store_->GetJob(JobId(2)).error().code, ErrorCode::kNotFound);
  // A batch that fails on a transition leaves no decision behind either.
  status = store_->Apply({.transitions = {codec::testing::SampleTransition(8)},
                          .decisions = {MakeDecision(1, model::Decision::Kind::kPlaced)}});
  ASSERT_FALSE(status.has_value());
  EXPECT_THAT(store_->ListDecisions(JobId(1)).value(), IsEmpty());
}

TEST_P(StoreContractTest, ReadsRunConcurrentlyWithOneWriter) {
  constexpr int kJobs = 200;
  std::atomic<bool> done = false;
  std::atomic<int> read_errors = 0;
  std::vector<std::thread> readers;
  for (int r = 0; r < 4; ++r) {
    readers.emplace_back([&] {
      while (!done) {
        auto jobs = store_->ListJobs({.active_only = true, .limit = 10});
        auto max = store_->MaxJobId();
        if (!jobs || !max) ++read_errors;
        if (max && *max > 0 && !store_->GetJob(JobId(*max))) ++read_errors;
      }
    });
  }
  for (int id = 1; id <= kJobs; ++id) {
    MustApply(
        {.jobs = {MakeJob(id, "j")}, .transitions = {{.job = JobId(id), .cause = "submitted"}}});
  }
  done = true;
  for (auto& thread : readers) thread.join();
  EXPECT_EQ(read_errors.load(), 0);
  EXPECT_EQ(store_->MaxJobId().value(), kJobs);
  EXPECT_EQ(ListIds({}).size(), static_cast<std::size_t>(kJobs));
}

// A cron job running the sample job spec every 5 minutes in Berlin.
CronRecord SampleCron(const std::string& name) {
  CronRecord cron;
  cron.spec.name = name;
  cron.spec.schedule = "*/5 * * * *";
  cron.spec.time_zone = "Europe/Berlin";
  cron.spec.concurrency_policy = model::ConcurrencyPolicy::kForbid;
  cron.spec.starting_deadline = 60'000;
  cron.spec.jobs = {codec::testing::SampleJobSpec()};
  cron.owner = "alice";
  cron.team = "team-a";
  cron.created_at = 1'700'000'000'000;
  cron.last_handled = cron.created_at;
  return cron;
}

TEST_P(StoreContractTest, CronJobsArePutReplacedListedAndDeleted) {
  EXPECT_THAT(store_->ListCrons().value(), IsEmpty());
  CronRecord b = SampleCron("b");
  CronRecord a = SampleCron("a");
  a.spec.starting_deadline.reset();
  ASSERT_TRUE(store_->PutCron(b).has_value());
  ASSERT_TRUE(store_->PutCron(a).has_value());
  EXPECT_THAT(store_->ListCrons().value(), ElementsAre(a, b));

  b.last_handled += 300'000;
  b.spec.suspend = true;
  ASSERT_TRUE(store_->PutCron(b).has_value());
  EXPECT_THAT(store_->ListCrons().value(), ElementsAre(a, b));

  ASSERT_TRUE(store_->DeleteCron("a").has_value());
  EXPECT_THAT(store_->ListCrons().value(), ElementsAre(b));
  Status again = store_->DeleteCron("a");
  ASSERT_FALSE(again.has_value());
  EXPECT_EQ(again.error().code, ErrorCode::kNotFound);
}

// A service of the sample job spec with every optional part set.
ServiceRecord SampleService(const std::string& name) {
  ServiceRecord service;
  service.spec.name = name;
  service.spec.models = {"llama-3-8b", "llama-3-8b-instruct"};
  service.spec.replica = codec::testing::SampleJobSpec();
  service.spec.replica.service = name;
  service.spec.min_replicas = 2;
  service.spec.max_replicas = 5;
  service.spec.readiness = model::ProbeSpec{"/ready", 2'000, 500, 2, 3'000};
  service.spec.autoscaling = {8, 1'000, 60'000};
  service.owner = "alice";
  service.team = "team-a";
  service.created_at = 1'700'000'000'000;
  service.updated_at = service.created_at + 5;
  service.generation = 3;
  service.desired = 4;
  return service;
}

TEST_P(StoreContractTest, ServicesArePutReplacedListedAndDeleted) {
  EXPECT_THAT(store_->ListServices().value(), IsEmpty());
  ServiceRecord b = SampleService("b");
  ServiceRecord a = SampleService("a");
  a.spec.readiness.reset();
  a.spec.liveness = model::ProbeSpec{};
  ASSERT_TRUE(store_->PutService(b).has_value());
  ASSERT_TRUE(store_->PutService(a).has_value());
  EXPECT_THAT(store_->ListServices().value(), ElementsAre(a, b));

  b.desired = 5;
  b.generation = 4;
  b.spec.replica.env["NEW"] = "1";
  ASSERT_TRUE(store_->PutService(b).has_value());
  EXPECT_THAT(store_->ListServices().value(), ElementsAre(a, b));

  ASSERT_TRUE(store_->DeleteService("a").has_value());
  EXPECT_THAT(store_->ListServices().value(), ElementsAre(b));
  Status again = store_->DeleteService("a");
  ASSERT_FALSE(again.has_value());
  EXPECT_EQ(again.error().code, ErrorCode::kNotFound);
  Status unnamed = store_->PutService(ServiceRecord{});
  ASSERT_FALSE(unnamed.has_value());
  EXPECT_EQ(unnamed.error().code, ErrorCode::kInvalidArgument);
}

TEST_P(StoreContractTest, AgentRecordsArePutReplacedAndListedWithTheirOrphans) {
  EXPECT_THAT(ListAgents(), IsEmpty());
  AgentRecord b{NodeId("gpu-b"), std::string(64, 'b'), 1'700'000'000'000, std::nullopt};
  AgentRecord a{NodeId("gpu-a"), std::string(64, 'a'), 1'700'000'000'001, std::nullopt};
  MustPutAgent(b);
  MustPutAgent(a);
  EXPECT_THAT(ListAgents(), ElementsAre(a, b));

  b.lost = AgentRecord::Lost{1'700'000'060'000,
                             "node gpu-b stopped answering for 31 s",
                             {model::WorkerKey{JobId(4), 1, 0}, model::WorkerKey{JobId(9), 2, 3}}};
  MustPutAgent(b);
  EXPECT_THAT(ListAgents(), ElementsAre(a, b));

  b.lost.reset();
  b.credential_hash = std::string(64, 'c');
  MustPutAgent(b);
  EXPECT_THAT(ListAgents(), ElementsAre(a, b));

  Status unnamed = store_->PutAgent(AgentRecord{});
  ASSERT_FALSE(unnamed.has_value());
  EXPECT_EQ(unnamed.error().code, ErrorCode::kInvalidArgument);
}

TEST_P(StoreContractTest, TokensArePutReplacedAndListedById) {
  EXPECT_THAT(store_->ListTokens().value(), IsEmpty());
  TokenRecord b{.id = "tok-bbbbbbbbbbbb",
                .hash = std::string(64, 'b'),
                .identity = {.user = "bob",
                             .team = "team-b",
                             .role = model::Role::kMember,
                             .queues = {"gpu", "cpu"},
                             .token_id = "tok-bbbbbbbbbbbb"},
                .created_by = "ops (admin)",
                .created_at = 1'700'000'000'000,
                .expires_at = 1'700'086'400'000};
  TokenRecord a{.id = "tok-aaaaaaaaaaaa",
                .hash = std::string(64, 'a'),
                .identity = model::AdminIdentity("ops"),
                .created_at = 1'700'000'000'001};
  a.identity.token_id = a.id;
  ASSERT_TRUE(store_->PutToken(b).has_value());
  ASSERT_TRUE(store_->PutToken(a).has_value());
  EXPECT_THAT(store_->ListTokens().value(), ElementsAre(a, b));

  b.revoked_at = 1'700'000'100'000;
  ASSERT_TRUE(store_->PutToken(b).has_value());
  EXPECT_THAT(store_->ListTokens().value(), ElementsAre(a, b));

  for (TokenRecord bad : {TokenRecord{.hash = "x"}, TokenRecord{.id = "tok-1"}}) {
    Status status = store_->PutToken(bad);
    ASSERT_FALSE(status.has_value());
    EXPECT_EQ(status.error().code, ErrorCode::kInvalidArgument);
  }
  EXPECT_EQ(store_->ListTokens().value().size(), 2u);
}

TEST_P(StoreContractTest, FairShareHistoryIsReplacedWholeAndReadBackSorted) {
  EXPECT_EQ(store_->GetFairShare().value(), model::FairShareHistory{});
  model::FairShareHistory history;
  history.advanced_at = 1'700'000'000'000;
  history.entries = {{"org/team-b", "", {{"gpu", 2.5e9}}},
                     {"org", "", {{"gpu", 7.25e9}, {"cpu", 1.0 / 3.0}}},
                     {"org/team-b", "alice", {{"gpu:h100", 1e-3}}}};
  ASSERT_TRUE(store_->PutFairShare(history).has_value());
  model::FairShareHistory sorted = history;
  std::swap(sorted.entries[0], sorted.entries[1]);  // by (queue, user)
  EXPECT_EQ(store_->GetFairShare().value(), sorted);

  // A later save replaces everything, the time included.
  model::FairShareHistory later;
  later.advanced_at = 1'700'000'060'000;
  later.entries = {{"org", "", {{"gpu", 1.0}}}};
  ASSERT_TRUE(store_->PutFairShare(later).has_value());
  EXPECT_EQ(store_->GetFairShare().value(), later);
  ASSERT_TRUE(store_->PutFairShare(model::FairShareHistory{}).has_value());
  EXPECT_EQ(store_->GetFairShare().value(), model::FairShareHistory{});
  ASSERT_TRUE(store_->PutFairShare(later).has_value());

  // Malformed histories save nothing and name the entry and field.
  const double nan = std::numeric_limits<double>::quiet_NaN();
  const std::vector<std::pair<model::FairShareHistory, std::string>> bad = {
      {{1, {{"", "", {{"gpu", 1.0}}}}}, "entries[0].queue"},
      {{1, {{"a", "", {{"gpu", 1.0}}}, {"a", "", {{"cpu", 1.0}}}}}, "entries[1]: a second"},
      {{1, {{"a", "", {{"", 1.0}}}}}, "entries[0].usage: empty"},
      {{1, {{"a", "bob", {{"gpu", -1.0}}}}}, "entries[0].usage.gpu"},
      {{1, {{"a", "", {{"gpu", nan}}}}}, "entries[0].usage.gpu"},
      {{1, {{"a", "", {{"gpu", std::numeric_limits<double>::infinity()}}}}},
       "entries[0].usage.gpu"},
  };
  for (const auto& [history, field] : bad) {
    Status status = store_->PutFairShare(history);
    ASSERT_FALSE(status.has_value()) << field;
    EXPECT_EQ(status.error().code, ErrorCode::kInvalidArgument);
    EXPECT_THAT(status.error().message, HasSubstr(field));
  }
  EXPECT_EQ(store_->GetFairShare().value(), later);
}

AuditRecord SampleAudit(TimeMs at, std::string user, std::string team, std::optional<JobId> job) {
  return AuditRecord{.at = at,
                     .user = user,
                     .team = team,
                     .caller = user + " (member of " + team + ")",
                     .action = "POST /v1/jobs",
                     .target = job ? "job " + std::to_string(job->value()) : "",
                     .job = job,
                     .status = job ? 200 : 403,
                     .code = job ? "" : "permission_denied",
                     .address = "10.0.0.7"};
}

TEST_P(StoreContractTest, AuditRecordsGetSeqInAppendOrderAndFilter) {
  EXPECT_THAT(store_->ListAudit({}).value(), IsEmpty());
  ASSERT_TRUE(store_->AppendAudit({}).has_value());
  std::vector<AuditRecord> first = {SampleAudit(1000, "ann", "team-a", JobId(1)),
                                    SampleAudit(2000, "bob", "team-b", std::nullopt)};
  first[1].seq = 77;  // ignored: the store assigns seq
  ASSERT_TRUE(store_->AppendAudit(first).has_value());
  ASSERT_TRUE(store_->AppendAudit({SampleAudit(3000, "ann", "team-a", JobId(2))}).has_value());

  auto all = store_->ListAudit({}).value();
  ASSERT_EQ(all.size(), 3u);
  for (std::size_t i = 0; i < all.size(); ++i) EXPECT_EQ(all[i].seq, static_cast<int>(i) + 1);
  AuditRecord expected = first[0];
  expected.seq = 1;
  EXPECT_EQ(all[0], expected);
  EXPECT_EQ(all[1].job, std::nullopt);
  EXPECT_EQ(all[1].code, "permission_denied");

  auto seqs = [&](const AuditFilter& filter) {
    std::vector<std::int64_t> out;
    auto records = store_->ListAudit(filter);
    EXPECT_TRUE(records.has_value()) << records.error().ToString();
    if (records) {
      for (const AuditRecord& record : *records) out.push_back(record.seq);
    }
    return out;
  };
  EXPECT_THAT(seqs({.since = 2000}), ElementsAre(2, 3));
  EXPECT_THAT(seqs({.user = "ann"}), ElementsAre(1, 3));
  EXPECT_THAT(seqs({.team = "team-b"}), ElementsAre(2));
  EXPECT_THAT(seqs({.job = JobId(2)}), ElementsAre(3));
  EXPECT_THAT(seqs({.limit = 2}), ElementsAre(2, 3));
  EXPECT_THAT(seqs({.user = "ann", .limit = 1}), ElementsAre(3));
  auto negative = store_->ListAudit({.limit = -1});
  ASSERT_FALSE(negative.has_value());
  EXPECT_EQ(negative.error().code, ErrorCode::kInvalidArgument);
}

TEST_P(StoreContractTest, UsageIsReplacedPerAttemptAndBucketsPerStart) {
  EXPECT_TRUE(store_->ListUsage(JobId(3)).value().empty());
  EXPECT_TRUE(store_->GetUsageSeries(JobId(3), 1).value().empty());
  model::AttemptUsage first;
  first.job = JobId(3);  // the job need not be stored
  first.attempt = 1;
  first.summary.first_at = 10'000;
  first.summary.gpu_util.Add(40);
  first.summary.gpu_util_p95 = 40;
  first.summary.peak_gpu_memory_bytes = 2'271'084'544;
  first.summary.peak_process_gpu_memory_bytes = 1'616'904'192;
  first.summary.peak_other_gpu_processes = 3;
  first.util_histogram[40] = 1;
  first.summary.gpus = {{"GPU-a", 3, {}}, {"GPU-b", 0, {}}};
  first.summary.gpus[0].util.Add(40);
  first.energy_mj["GPU-a"] = {100, 900};
  first.last_process[0].worker = {JobId(3), 1, 0};
  first.last_process[0].cpu_ms = 50;
  first.last_process_at[0] = 10'500;
  first.buckets = 2;
  model::UsageBucket a;
  a.start = 10'000;
  a.gpu_util.Add(40);
  model::UsageBucket b;
  b.start = 20'000;
  b.rss.Add(1e9);
  auto put = store_->PutUsage(first, {b, a});
  ASSERT_TRUE(put.has_value()) << put.error().ToString();
  model::AttemptUsage second = first;
  second.attempt = 2;
  ASSERT_TRUE(store_->PutUsage(second, {}).has_value());
  // A later write replaces the record and the bucket of the same start.
  first.summary.gpu_util.Add(60);
  a.gpu_util.Add(60);
  ASSERT_TRUE(store_->PutUsage(first, {a}).has_value());

  auto listed = store_->ListUsage(JobId(3));
  ASSERT_TRUE(listed.has_value()) << listed.error().ToString();
  EXPECT_THAT(*listed, ElementsAre(first, second));
  auto series = store_->GetUsageSeries(JobId(3), 1);
  ASSERT_TRUE(series.has_value()) << series.error().ToString();
  EXPECT_THAT(*series, ElementsAre(a, b));
  EXPECT_TRUE(store_->GetUsageSeries(JobId(3), 2).value().empty());
  EXPECT_TRUE(store_->ListUsage(JobId(4)).value().empty());

  model::AttemptUsage bad = first;
  bad.attempt = 0;
  EXPECT_EQ(store_->PutUsage(bad, {}).error().code, ErrorCode::kInvalidArgument);
  model::UsageBucket misaligned;
  misaligned.start = 10'001;
  auto refused = store_->PutUsage(first, {misaligned});
  ASSERT_FALSE(refused.has_value());
  EXPECT_THAT(refused.error().message, HasSubstr("buckets[0].start_at"));
}

INSTANTIATE_TEST_SUITE_P(
    AllStores, StoreContractTest,
    ::testing::Values(
        StoreFactory{
            "Memory",
            [](const std::string&) -> Result<std::unique_ptr<Store>> { return NewMemoryStore(); }},
        StoreFactory{"Sqlite",
                     [](const std::string& dir) { return OpenSqliteStore(dir + "/drover.db"); }},
        StoreFactory{"SqliteInMemory",
                     [](const std::string&) { return OpenSqliteStore(":memory:"); }},
        // A fresh database of the test program's throwaway cluster for each test.
        StoreFactory{"Postgres",
                     [](const std::string&) -> Result<std::unique_ptr<Store>> {
                       DROVER_ASSIGN_OR_RETURN(
                           auto uri, testing::PostgresCluster::Shared().NewDatabase("contract"));
                       return OpenPostgresStore(uri);
                     }}),
    [](const ::testing::TestParamInfo<StoreFactory>& info) { return info.param.name; });

}  // namespace
}  // namespace drover::store
