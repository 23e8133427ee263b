#include "drover/control/controller.h"

#include <fmt/format.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "drover/control/control_test_util.h"

namespace drover::control {
namespace {

using model::JobState;
using ::testing::ElementsAre;
using testing::Exited;
using testing::GpuNode;
using ::testing::HasSubstr;
using testing::kGi;
using testing::Killed;
using testing::kT0;
using testing::Launches;
using testing::Spec;
using testing::Started;
using testing::Stops;

// node-a: `gpus` H100s in one topology group, 32 CPUs and 256Gi of memory.
model::Node NodeA(int gpus) { return GpuNode("node-a", gpus, 32'000, 256 * kGi, "g0"); }

class ControllerTest : public testing::ControllerFixture {
 protected:
  ControllerTest() {
    Step step;
    controller_.UpsertNode(NodeA(4), kT0, step);
  }
};

TEST(ChangedJobs, ReadsEachChangedJobOnceInIdOrder) {
  ChangedJobs changed;
  EXPECT_TRUE(changed.empty());
  for (int id : {7, 3, 3, 7, 5, 3}) changed.insert(JobId(id));
  EXPECT_FALSE(changed.empty());
  EXPECT_THAT(changed.Sorted(), ::testing::ElementsAre(JobId(3), JobId(5), JobId(7)));
  EXPECT_EQ(changed.size(), 3u);
  EXPECT_TRUE(changed.contains(JobId(5)));
  EXPECT_FALSE(changed.contains(JobId(4)));
  changed.clear();
  EXPECT_TRUE(changed.empty());
  EXPECT_TRUE(changed.Sorted().empty());
}

TEST_F(ControllerTest, RunsAJobThroughEveryLifecycleStateWithTimestamps) {
  JobId id = Submit({Spec("train", 1)})[0];
  Step scheduled = Schedule(kT0 + 5);
  ASSERT_EQ(Launches(scheduled).size(), 1u);
  EXPECT_EQ(State(id), JobState::kStarting);
  Event(Started(id, 1, 0, kT0 + 20));
  EXPECT_EQ(State(id), JobState::kRunning);
  Step finished = Event(Exited(id, 1, 0, 0, kT0 + 100));
  EXPECT_EQ(State(id), JobState::kSucceeded);

  const model::Job& job = *controller_.Find(id);
  const model::Attempt& attempt = job.attempts.at(0);
  EXPECT_EQ(job.created_at, kT0);
  EXPECT_EQ(attempt.ready_at, kT0 + 5);
  EXPECT_EQ(attempt.admitted_at, kT0 + 5);
  EXPECT_EQ(attempt.placed_at, kT0 + 5);
  EXPECT_EQ(attempt.running_at, kT0 + 20);
  EXPECT_EQ(attempt.finished_at, kT0 + 100);
  EXPECT_EQ(job.finished_at, kT0 + 100);
  ASSERT_EQ(finished.transitions.size(), 1u);
  EXPECT_EQ(finished.transitions[0].from, JobState::kRunning);
  EXPECT_EQ(finished.transitions[0].to, JobState::kSucceeded);
  EXPECT_TRUE(finished.changed.contains(id));
}

TEST_F(ControllerTest, RecordsEachTransitionInOrder) {
  Step submit;
  JobId id = controller_.Submit({Spec("a")}, "", "alice", kT0, submit)->ids[0];
  Step scheduled = Schedule(kT0);
  std::vector<JobState> to;
  for (const auto& t : submit.transitions) to.push_back(t.to);
  for (const auto& t : scheduled.transitions) to.push_back(t.to);
  EXPECT_THAT(to, ElementsAre(JobState::kPending, JobState::kReady, JobState::kAdmitted,
                              JobState::kPlaced, JobState::kStarting));
  for (const auto& t : scheduled.transitions) EXPECT_EQ(t.job, id);
}

TEST_F(ControllerTest, LaunchSpecCarriesEnvironmentAndDisjointGpusForAGang) {
  model::JobSpec spec = Spec("gang", 2, 2);
  spec.env["FOO"] = "bar";
  spec.checkpoint_dir = "/ckpt";
  JobId id = Submit({spec})[0];
  auto launches = Launches(Schedule(kT0));
  ASSERT_EQ(launches.size(), 2u);
  const auto& w0 = launches[0].spec;
  const auto& w1 = launches[1].spec;
  EXPECT_EQ(w0.env.at("FOO"), "bar");
  EXPECT_EQ(w0.env.at("DROVER_JOB_ID"), std::to_string(id.value()));
  EXPECT_EQ(w0.env.at("DROVER_WORKER_RANK"), "0");
  EXPECT_EQ(w1.env.at("DROVER_WORKER_RANK"), "1");
  EXPECT_EQ(w0.env.at("DROVER_NUM_WORKERS"), "2");
  EXPECT_EQ(w0.env.at("DROVER_CHECKPOINT_DIR"), "/ckpt");
  EXPECT_THAT(w0.make_dirs, ElementsAre("/ckpt"));  // the agent creates it
  EXPECT_EQ(w0.env.at("DROVER_MASTER_PORT"), w1.env.at("DROVER_MASTER_PORT"));
  EXPECT_EQ(w0.env.at("DROVER_MASTER_ADDR"), "127.0.0.1");
  EXPECT_EQ(w0.gpus.size(), 2u);
  EXPECT_EQ(w1.gpus.size(), 2u);
  for (int gpu : w0.gpus) EXPECT_THAT(w1.gpus, ::testing::Not(::testing::Contains(gpu)));
  EXPECT_NE(w0.env.at("CUDA_VISIBLE_DEVICES"), w1.env.at("CUDA_VISIBLE_DEVICES"));
}

// Without Options::launch_contract (the simulator) a launch names the worker, its node and GPUs
// only, and every decision and transition is what it is with the contract.
TEST(ControllerWithoutLaunchContract, LaunchesTheSameWorkersOnTheSameGpusWithoutTheirContract) {
  auto run = [](bool launch_contract) {
    Options options;
    options.launch_contract = launch_contract;
    Controller controller(options);
    Step step;
    controller.UpsertNode(NodeA(4), kT0, step);
    model::JobSpec spec = Spec("gang", 2, 2);
    spec.env["FOO"] = "bar";
    EXPECT_TRUE(controller.Submit({spec}, "", "alice", kT0, step));
    controller.Schedule(kT0 + 5, step);
    return step;
  };
  const Step with = run(true);
  const Step without = run(false);
  EXPECT_EQ(with.transitions, without.transitions);
  const auto full = Launches(with);
  const auto bare = Launches(without);
  ASSERT_EQ(bare.size(), 2u);
  ASSERT_EQ(full.size(), 2u);
  for (std::size_t i = 0; i < bare.size(); ++i) {
    EXPECT_EQ(bare[i].spec.key, full[i].spec.key);
    EXPECT_EQ(bare[i].spec.node, full[i].spec.node);
    EXPECT_EQ(bare[i].spec.gpus, full[i].spec.gpus);
    EXPECT_TRUE(bare[i].spec.env.empty());
    EXPECT_TRUE(bare[i].spec.argv.empty());
    EXPECT_EQ(full[i].spec.env.at("FOO"), "bar");
  }
}

// Jobs run as the Unix account the policy maps the submitting identity to (docs/security.md);
// root only for identities the policy lists, and for the server's own user.
TEST_F(ControllerTest, SubmitLimitsCountEachOwnersAndTeamsUnfinishedJobs) {
  model::Policy policy;
  policy.user_submit_limits.max_pending_jobs = 2;
  policy.team_submit_limits.max_submitted_jobs = 3;
  ASSERT_TRUE(controller_.SetPolicy(policy));
  auto spec = [](const std::string& name, const std::string& owner) {
    model::JobSpec out = Spec(name);
    out.owner = owner;
    out.team = "team-a";
    return out;
  };
  Step step;
  ASSERT_TRUE(
      controller_.Submit({spec("a1", "alice"), spec("a2", "alice")}, "", "alice", kT0, step));
  // A third pending job of alice's passes her limit: refused whole, naming the limit.
  auto over = controller_.Submit({spec("a3", "alice")}, "", "alice", kT0, step);
  ASSERT_FALSE(over);
  EXPECT_EQ(over.error().code, ErrorCode::kResourceExhausted);
  EXPECT_EQ(over.error().message,
            "user alice has 2 jobs not yet started and this submission adds 1; the policy's "
            "submit_limits.per_user.max_pending_jobs is 2");
  // Another user of the team: within his own limit, but the team's 3 unfinished jobs are full
  // after one more.
  ASSERT_TRUE(controller_.Submit({spec("b1", "bob")}, "", "bob", kT0, step));
  auto team_full = controller_.Submit({spec("b2", "bob")}, "", "bob", kT0, step);
  ASSERT_FALSE(team_full);
  EXPECT_THAT(team_full.error().message,
              HasSubstr("team team-a has 3 unfinished jobs and this submission adds 1; the "
                        "policy's submit_limits.per_team.max_submitted_jobs is 3"));
  // A finished job frees its place.
  const JobId first = controller_.jobs().begin()->first;
  ASSERT_TRUE(controller_.Cancel(first, "alice", "done with it", kT0, step));
  EXPECT_TRUE(controller_.Submit({spec("b2", "bob")}, "", "bob", kT0, step));
}

TEST(ControllerRunAs, TheSubmittersAccountGoesIntoTheJobAndItsLaunchSpecs) {
  Options options;
  options.server_user = "root";
  Controller controller(options);
  model::Policy policy;
  policy.accounts.map = {{"alice", "alice-unix"}, {"ops", "root"}};
  policy.accounts.allow_root = {"ops"};
  ASSERT_TRUE(controller.SetPolicy(policy));
  Step step;
  controller.UpsertNode(NodeA(4), kT0, step);
  auto submit = [&](const std::string& identity, model::JobSpec spec) {
    auto result = controller.Submit({std::move(spec)}, "", identity, kT0, step);
    EXPECT_TRUE(result) << result.error().ToString();
    return *controller.Find(result->ids.at(0));
  };
  model::JobSpec other_owner = Spec("a");
  other_owner.owner = "bob";  // a label: the account is the submitter's
  const model::Job alice = submit("alice", other_owner);
  EXPECT_EQ(alice.run_as, "alice-unix");
  EXPECT_FALSE(alice.may_run_as_root);
  const model::Job carol = submit("carol", Spec("b"));
  EXPECT_EQ(carol.run_as, "carol");  // unmapped: the same name
  EXPECT_FALSE(carol.may_run_as_root);
  const model::Job ops = submit("ops", Spec("c"));
  EXPECT_EQ(ops.run_as, "root");
  EXPECT_TRUE(ops.may_run_as_root);
  const model::Job root = submit("root", Spec("d"));  // whoever started the server
  EXPECT_EQ(root.run_as, "root");
  EXPECT_TRUE(root.may_run_as_root);
  model::JobSpec labelled = Spec("e");
  labelled.owner = "alice";
  EXPECT_EQ(submit("", labelled).run_as, "alice-unix");  // no submitter: the owner

  Step scheduled;
  controller.Schedule(kT0, scheduled);
  std::map<JobId, model::LaunchSpec> launches;
  for (const LaunchWorker& launch : Launches(scheduled))
    launches[launch.spec.key.job] = launch.spec;
  ASSERT_EQ(launches.size(), 5u);
  EXPECT_EQ(launches.at(alice.id).run_as, "alice-unix");
  EXPECT_FALSE(launches.at(alice.id).may_run_as_root);
  EXPECT_EQ(launches.at(ops.id).run_as, "root");
  EXPECT_TRUE(launches.at(ops.id).may_run_as_root);
}

TEST_F(ControllerTest, DependentStartsOnlyAfterItsDependencySucceeds) {
  model::JobSpec eval = Spec("eval");
  eval.depends_on = {{"prep"}};
  auto ids = Submit({Spec("prep"), eval});
  auto first = Launches(Schedule(kT0));
  ASSERT_EQ(first.size(), 1u);
  EXPECT_EQ(first[0].spec.key.job, ids[0]);
  EXPECT_EQ(State(ids[1]), JobState::kPending);
  auto explained = controller_.Explain(ids[1], kT0);
  ASSERT_TRUE(explained);
  EXPECT_EQ(explained->layer, model::HoldLayer::kDependency);
  EXPECT_THAT(explained->message, HasSubstr("prep"));

  Event(Exited(ids[0], 1, 0, 0, kT0 + 10));
  auto second = Launches(Schedule(kT0 + 11));
  ASSERT_EQ(second.size(), 1u);
  EXPECT_EQ(second[0].spec.key.job, ids[1]);
}

// The simulator forgets each job once it has taken its outcome (Controller::Forget); only a
// finished job that nothing looks up any more may go.
TEST_F(ControllerTest, ForgetDropsAFinishedJobOnceNoPendingJobDependsOnIt) {
  const JobId prep = Submit({Spec("prep", 1)})[0];
  model::JobSpec eval = Spec("eval", 1);
  eval.depends_on = {{fmt::format("job:{}", prep.value())}};
  const JobId eval_id = Submit({eval})[0];
  Schedule(kT0);
  Status unfinished = controller_.Forget(prep);
  ASSERT_FALSE(unfinished);
  EXPECT_EQ(unfinished.error().code, ErrorCode::kFailedPrecondition);

  Event(Started(prep, 1, 0, kT0 + 1));
  Event(Exited(prep, 1, 0, 0, kT0 + 10));
  ASSERT_EQ(State(prep), JobState::kSucceeded);
  Status depended_on = controller_.Forget(prep);  // eval is pending until the next pass
  ASSERT_FALSE(depended_on);
  EXPECT_EQ(depended_on.error().code, ErrorCode::kFailedPrecondition);
  EXPECT_THAT(depended_on.error().message, HasSubstr("pending job"));
  EXPECT_NE(controller_.Find(prep), nullptr);

  ASSERT_EQ(Launches(Schedule(kT0 + 11)).size(), 1u);
  ASSERT_TRUE(controller_.Forget(prep));
  EXPECT_EQ(controller_.Find(prep), nullptr);
  EXPECT_EQ(controller_.jobs().size(), 1u);
  Status again = controller_.Forget(prep);
  ASSERT_FALSE(again);
  EXPECT_EQ(again.error().code, ErrorCode::kNotFound);

  // A late event for the forgotten job is ignored; the rest runs on.
  Event(Exited(prep, 1, 0, 0, kT0 + 12));
  Event(Started(eval_id, 1, 0, kT0 + 12));
  Event(Exited(eval_id, 1, 0, 0, kT0 + 20));
  EXPECT_EQ(State(eval_id), JobState::kSucceeded);
}

TEST_F(ControllerTest, ForgetKeepsTheJobsOfAPipelineRun) {
  model::JobSpec second = Spec("second");
  second.depends_on = {{"first"}};
  const std::vector<JobId> ids = Submit({Spec("first"), second});
  Schedule(kT0);
  Event(Started(ids[0], 1, 0, kT0 + 1));
  Event(Exited(ids[0], 1, 0, 0, kT0 + 2));
  Schedule(kT0 + 3);
  Event(Started(ids[1], 1, 0, kT0 + 4));
  Event(Exited(ids[1], 1, 0, 0, kT0 + 5));
  ASSERT_EQ(State(ids[1]), JobState::kSucceeded);
  Status forgotten = controller_.Forget(ids[0]);
  ASSERT_FALSE(forgotten);
  EXPECT_EQ(forgotten.error().code, ErrorCode::kFailedPrecondition);
  EXPECT_EQ(controller_.RunJobs(ids[0]).size(), 2u);
}

TEST_F(ControllerTest, DependentIsSkippedWhenItsDependencyFails) {
  model::JobSpec eval = Spec("eval");
  eval.depends_on = {{"prep"}};
  auto ids = Submit({Spec("prep"), eval});
  Schedule(kT0);
  Event(Exited(ids[0], 1, 0, 3, kT0 + 10));
  EXPECT_EQ(State(ids[0]), JobState::kFailed);
  Schedule(kT0 + 11);
  EXPECT_EQ(State(ids[1]), JobState::kSkipped);
  EXPECT_THAT(controller_.Find(ids[1])->status_message, HasSubstr("prep"));
}

TEST_F(ControllerTest, RetriesAfterBackoffWithANewAttempt) {
  model::JobSpec spec = Spec("flaky", 1);
  spec.retry = {2, 10'000};
  JobId id = Submit({spec})[0];
  Schedule(kT0);
  Event(Exited(id, 1, 0, 1, kT0 + 100));
  EXPECT_EQ(State(id), JobState::kReady);
  EXPECT_TRUE(Launches(Schedule(kT0 + 5'000)).empty());
  auto explained = controller_.Explain(id, kT0 + 5'000);
  EXPECT_EQ(explained->layer, model::HoldLayer::kBackoff);
  auto relaunch = Launches(Schedule(kT0 + 10'100));
  ASSERT_EQ(relaunch.size(), 1u);
  EXPECT_EQ(relaunch[0].spec.key.attempt, 2);
  EXPECT_EQ(relaunch[0].spec.env.at("DROVER_ATTEMPT"), "2");
  Event(Exited(id, 2, 0, 1, kT0 + 20'000));
  EXPECT_EQ(State(id), JobState::kFailed);
  const model::Job& job = *controller_.Find(id);
  ASSERT_EQ(job.attempts.size(), 2u);
  EXPECT_EQ(job.attempts[0].outcome, JobState::kReady);
  EXPECT_EQ(job.attempts[1].outcome, JobState::kFailed);
}

TEST_F(ControllerTest, FailedGangWorkerStopsTheOthersAndFreesGpusWhenAllExit) {
  JobId id = Submit({Spec("gang", 2, 2)})[0];
  Schedule(kT0);
  Step failed = Event(Exited(id, 1, 1, 2, kT0 + 50));
  auto stops = Stops(failed);
  ASSERT_EQ(stops.size(), 1u);
  EXPECT_EQ(stops[0].key.rank, 0);
  EXPECT_EQ(State(id), JobState::kStarting);
  EXPECT_EQ(controller_.cluster().FreeGpus(NodeId("node-a")).size(), 0u);
  model::WorkerEvent killed = Killed(id, 1, 0, kT0 + 60);
  killed.exit.cancelled = true;
  Event(killed);
  EXPECT_EQ(State(id), JobState::kFailed);
  EXPECT_THAT(controller_.Find(id)->status_message, HasSubstr("worker 1 on node-a: exit 2"));
  EXPECT_EQ(controller_.cluster().FreeGpus(NodeId("node-a")).size(), 4u);
}

TEST_F(ControllerTest, CancelStopsRunningWorkersAndEndsCancelled) {
  JobId id = Submit({Spec("long", 1)})[0];
  Schedule(kT0);
  Event(Started(id, 1, 0, kT0 + 1));
  Step cancel;
  ASSERT_TRUE(controller_.Cancel(id, "alice", "cancelled by alice", kT0 + 2, cancel));
  EXPECT_EQ(Stops(cancel).size(), 1u);
  EXPECT_EQ(State(id), JobState::kRunning);
  // Who asked is on the record now, before the workers have stopped.
  ASSERT_EQ(cancel.transitions.size(), 1u);
  EXPECT_EQ(cancel.transitions[0].actor, "alice");
  EXPECT_EQ(cancel.transitions[0].cause, "cancel requested: cancelled by alice");
  Step again;
  ASSERT_TRUE(controller_.Cancel(id, "bob", "cancelled by bob", kT0 + 3, again));
  EXPECT_TRUE(Stops(again).empty());
  EXPECT_TRUE(again.transitions.empty());  // already stopping: the first cancel stands
  model::WorkerEvent killed = Killed(id, 1, 0, kT0 + 4);
  killed.exit.cancelled = true;
  Event(killed);
  EXPECT_EQ(State(id), JobState::kCancelled);
  EXPECT_EQ(controller_.Find(id)->attempts.at(0).disruption, model::Disruption::kUserCancel);
  Step late;
  auto error = controller_.Cancel(id, "alice", "x", kT0 + 5, late);
  ASSERT_FALSE(error);
  EXPECT_EQ(error.error().code, ErrorCode::kFailedPrecondition);
}

TEST_F(ControllerTest, CancellingAQueuedJobRecordsWhoCancelledIt) {
  JobId id = Submit({Spec("queued", 1)})[0];
  Step cancel;
  ASSERT_TRUE(controller_.Cancel(id, "alice", "cancelled by alice", kT0 + 1, cancel));
  EXPECT_EQ(State(id), JobState::kCancelled);
  ASSERT_EQ(cancel.transitions.size(), 1u);
  EXPECT_EQ(cancel.transitions[0].to, JobState::kCancelled);
  EXPECT_EQ(cancel.transitions[0].actor, "alice");
}

TEST_F(ControllerTest, TimeoutEndsTimedOutWithoutRetryBudget) {
  JobId id = Submit({Spec("slow")})[0];
  Schedule(kT0);
  model::WorkerEvent timed_out = Killed(id, 1, 0, kT0 + 1000);
  timed_out.exit.timed_out = true;
  Event(timed_out);
  EXPECT_EQ(State(id), JobState::kTimedOut);
}

// A job no node can hold, accepted to wait (Submit refuses it otherwise).
model::JobSpec Held(model::JobSpec spec) {
  spec.hold_infeasible = true;
  return spec;
}

// An agent's clock running behind cannot put a start or an end before the placement: the
// timeline stays ordered.
TEST_F(ControllerTest, AWorkerEventFromBeforeThePlacementReadsThePlacementTime) {
  JobId id = Submit({Spec("train", 1)})[0];
  ASSERT_EQ(Launches(Schedule(kT0 + 5)).size(), 1u);
  const TimeMs placed = controller_.Find(id)->current_attempt()->placed_at;
  ASSERT_GT(placed, 0);
  Event(Started(id, 1, 0, kT0 - 3'600'000));
  Event(Exited(id, 1, 0, 0, kT0 - 3'500'000));
  const model::Attempt& attempt = *controller_.Find(id)->current_attempt();
  EXPECT_EQ(attempt.running_at, placed);
  EXPECT_EQ(attempt.workers[0].started_at, placed);
  EXPECT_EQ(attempt.workers[0].finished_at, placed);
  EXPECT_GE(attempt.finished_at, placed);
  EXPECT_EQ(State(id), JobState::kSucceeded);
}

TEST_F(ControllerTest, UnplaceableJobStaysReadyWithAReason) {
  JobId id = Submit({Held(Spec("huge", 8))})[0];
  EXPECT_TRUE(Launches(Schedule(kT0)).empty());
  EXPECT_EQ(State(id), JobState::kReady);
  EXPECT_THAT(controller_.Find(id)->status_message, HasSubstr("8"));
  auto explained = controller_.Explain(id, kT0);
  ASSERT_TRUE(explained);
  // 8 GPUs on a node of 4: no node can ever hold it, and nothing bounds a start.
  EXPECT_EQ(explained->layer, model::HoldLayer::kNodeFit);
  EXPECT_TRUE(explained->placement.has_value());
  EXPECT_EQ(explained->estimated_start, std::nullopt);
}

TEST_F(ControllerTest, PassesBetweenReleasesTryOnlyNewJobsAndAFullPassRefreshesReasons) {
  JobId big = Submit({Held(Spec("big", 8))})[0];
  Schedule(kT0);
  EXPECT_THAT(controller_.Find(big)->status_message, HasSubstr("largest free block is 4 GPUs"));
  JobId small = Submit({Spec("small", 1)}, kT0 + 10)[0];
  auto launches = Launches(Schedule(kT0 + 10));
  ASSERT_EQ(launches.size(), 1u);
  EXPECT_EQ(launches[0].spec.key.job, small);
  // The big job was not tried again: nothing was freed. Its reason is refreshed by the next
  // full pass.
  EXPECT_THAT(controller_.Find(big)->status_message, HasSubstr("4 GPUs"));
  Schedule(kT0 + 10 + Options{}.full_cycle_interval_ms);
  EXPECT_THAT(controller_.Find(big)->status_message, HasSubstr("largest free block is 3 GPUs"));
  // Freed capacity makes the next pass full at once.
  Event(Exited(small, 1, 0, 0, kT0 + 2'000));
  Schedule(kT0 + 2'001);
  EXPECT_THAT(controller_.Find(big)->status_message, HasSubstr("largest free block is 4 GPUs"));
}

// Over a large backlog a full pass runs less often than every full_cycle_interval_ms: 3 ready
// jobs at 1 per ms make it every 3 ms instead of every millisecond.
class ControllerBacklogTest : public testing::ControllerFixture {
 protected:
  ControllerBacklogTest() {
    Options options;
    options.full_cycle_interval_ms = 1;
    options.full_cycle_ready_jobs_per_ms = 1;
    controller_ = Controller(options);
    Step step;
    controller_.UpsertNode(NodeA(4), kT0, step);
  }
};

TEST_F(ControllerBacklogTest, ALargeBacklogIsPassedOverFullyLessOften) {
  std::vector<JobId> big;
  for (const char* name : {"big-a", "big-b", "big-c"})
    big.push_back(Submit({Held(Spec(name, 8))})[0]);
  Schedule(kT0);  // a full pass
  EXPECT_THAT(controller_.Find(big[0])->status_message, HasSubstr("largest free block is 4 GPUs"));
  Submit({Spec("small", 1)}, kT0 + 1);
  ASSERT_EQ(Launches(Schedule(kT0 + 1)).size(), 1u);  // a pass over the new job only
  // 2 ms after the last full pass: with 1 job a full pass would be due (1 ms); with 3, not yet.
  Schedule(kT0 + 2);
  EXPECT_THAT(controller_.Find(big[0])->status_message, HasSubstr("largest free block is 4 GPUs"));
  Schedule(kT0 + 3);
  EXPECT_THAT(controller_.Find(big[0])->status_message, HasSubstr("largest free block is 3 GPUs"));
}

TEST_F(ControllerTest, SameSubmissionKeyReturnsTheSameJobs) {
  auto first = Submit({Spec("a"), Spec("b")}, kT0, "key-1");
  Step step;
  auto again = controller_.Submit({Spec("a"), Spec("b")}, "key-1", "alice", kT0 + 1, step);
  ASSERT_TRUE(again);
  EXPECT_TRUE(again->existing);
  EXPECT_EQ(again->ids, first);
  EXPECT_TRUE(step.empty());
  EXPECT_EQ(controller_.jobs().size(), 2u);
}

TEST_F(ControllerTest, SameSubmissionKeyWithAnotherRequestIsRefused) {
  Step first_step;
  auto first = controller_.Submit({Spec("a")}, "key-1", "alice", kT0, first_step, "digest-1");
  ASSERT_TRUE(first);
  EXPECT_EQ(controller_.Find(first->ids[0])->submission_hash, "digest-1");
  Step step;
  auto same = controller_.Submit({Spec("a")}, "key-1", "alice", kT0 + 1, step, "digest-1");
  ASSERT_TRUE(same);
  EXPECT_TRUE(same->existing);
  auto other = controller_.Submit({Spec("b")}, "key-1", "alice", kT0 + 2, step, "digest-2");
  ASSERT_FALSE(other);
  EXPECT_EQ(other.error().code, ErrorCode::kAlreadyExists);
  EXPECT_EQ(other.error().message,
            "Idempotency-Key 'key-1' was used by another request (jobs 1); a retry must send the "
            "same body, a new submission a new key");
  EXPECT_TRUE(step.empty());
  EXPECT_EQ(controller_.jobs().size(), 1u);
}

TEST_F(ControllerTest, RefusesAJobNoNodeCanEverHold) {
  Step step;
  auto gpus = controller_.Submit({Spec("big", 16)}, "", "alice", kT0, step);
  ASSERT_FALSE(gpus);
  EXPECT_EQ(gpus.error().code, ErrorCode::kInvalidArgument);
  EXPECT_EQ(gpus.error().message,
            "job 'big' can never start: no current node can ever hold it: needs 16 GPUs on one "
            "node; no node can ever satisfy it: 1 node is excluded by GPU count; the largest "
            "free block is 4 GPUs on node-a; set "
            "hold_infeasible: true (drover submit --hold-infeasible) to keep it waiting for the "
            "cluster to grow");
  auto workers = controller_.Submit({Spec("wide", 0, 2147483647)}, "", "alice", kT0, step);
  ASSERT_FALSE(workers);
  EXPECT_THAT(workers.error().message, HasSubstr("even with every node idle"));
  model::JobSpec memory = Spec("memory");
  memory.requirements.per_worker.memory_bytes = 8LL * 1024 * 1024 * kGi;
  EXPECT_FALSE(controller_.Submit({memory}, "", "alice", kT0, step));
  EXPECT_TRUE(step.empty());
  EXPECT_EQ(controller_.jobs().size(), 0u);
}

TEST_F(ControllerTest, HoldsAnInfeasibleJobWhenAskedAndExplainSaysWhy) {
  JobId id = Submit({Held(Spec("big", 16))})[0];
  Schedule(kT0 + 1);
  EXPECT_EQ(State(id), JobState::kReady);
  Result<Explanation> explained = controller_.Explain(id, kT0 + 2);
  ASSERT_TRUE(explained);
  EXPECT_THAT(explained->message, HasSubstr("no node can ever satisfy it"));
  // A gang larger than the idle cluster: the verdict speaks of free capacity, explain adds that
  // it can never fit.
  JobId wide_id = Submit({Held(Spec("wide", 1, 8))})[0];
  Schedule(kT0 + 3);
  explained = controller_.Explain(wide_id, kT0 + 4);
  ASSERT_TRUE(explained);
  EXPECT_THAT(explained->message,
              HasSubstr("no current node can ever hold it: needs 8 workers of 1 GPU; only 4 of 8 "
                        "workers fit in the free capacity of 1 eligible node, even with every node "
                        "idle"));
}

// Issue 17, finding 2: jobs held by a reservation or by quota were estimated to start "now".
TEST_F(ControllerTest, EstimateOfAJobHeldByTheReservationIsNotNow) {
  model::JobSpec hour = Spec("hour", 3);
  hour.timeout = 60 * 60'000;
  JobId hour_id = Submit({hour})[0];
  Schedule(kT0);
  ASSERT_EQ(State(hour_id), JobState::kStarting);
  model::JobSpec big = Spec("big", 4);
  big.timeout = 2 * 60 * 60'000;
  JobId big_id = Submit({big}, kT0 + 1)[0];
  JobId small_id = Submit({Spec("small", 1)}, kT0 + 2)[0];  // no limit: cannot backfill
  Schedule(kT0 + 5'000);  // a full pass (full_cycle_interval_ms): big reserves node-a
  Result<Explanation> small = controller_.Explain(small_id, kT0 + 5'001);
  ASSERT_TRUE(small);
  ASSERT_EQ(small->layer, model::HoldLayer::kReservation) << small->message;
  // node-a's 4 GPUs go to big from kT0 + 1h (hour's limit) until big's own limit ends.
  EXPECT_EQ(small->estimated_start, kT0 + 3 * 60 * 60'000);
  EXPECT_EQ(small->estimate_basis, fmt::format("as job {} reaches its time limit", big_id.value()));
  Result<Explanation> holder = controller_.Explain(big_id, kT0 + 5'001);
  ASSERT_TRUE(holder);
  EXPECT_EQ(holder->estimated_start, kT0 + 60 * 60'000);
}

TEST_F(ControllerTest, EstimateOfAJobHeldByQuotaWaitsForTheQueuesJobsToEnd) {
  model::Policy policy;
  model::QueueConfig team;
  team.name = "team-a";
  team.nominal["gpu"] = 2'000;
  team.borrowing_limit["gpu"] = 0;
  policy.queues = {team};
  ASSERT_TRUE(controller_.SetPolicy(policy).has_value());
  model::JobSpec half_hour = Spec("first", "team-a", 2);
  half_hour.timeout = 30 * 60'000;
  Submit({half_hour});
  Schedule(kT0);
  JobId second = Submit({Spec("second", "team-a", 1)}, kT0 + 1)[0];
  Schedule(kT0 + 2);
  Result<Explanation> explained = controller_.Explain(second, kT0 + 3);
  ASSERT_TRUE(explained);
  ASSERT_EQ(explained->layer, model::HoldLayer::kQuota) << explained->message;
  // Two of node-a's GPUs are free now; the queue's quota frees at first's limit.
  EXPECT_EQ(explained->estimated_start, kT0 + 30 * 60'000);
}

TEST(ControllerSubmit, JudgesNoNodeBeforeAnyIsAdded) {
  Controller controller;
  Step step;
  EXPECT_TRUE(controller.Submit({Spec("big", 16)}, "", "alice", kT0, step));
}

TEST_F(ControllerTest, UnknownDependencyChangesNothing) {
  model::JobSpec spec = Spec("eval");
  spec.depends_on = {{"missing"}};
  Step step;
  auto result = controller_.Submit({Spec("a"), spec}, "", "alice", kT0, step);
  ASSERT_FALSE(result);
  EXPECT_EQ(result.error().code, ErrorCode::kInvalidArgument);
  EXPECT_TRUE(step.empty());
  EXPECT_TRUE(controller_.jobs().empty());
}

TEST_F(ControllerTest, DuplicateAndStaleEventsChangeNothing) {
  JobId id = Submit({Spec("a", 1)})[0];
  Schedule(kT0);
  Event(Started(id, 1, 0, kT0 + 5));
  EXPECT_TRUE(Event(Started(id, 1, 0, kT0 + 6)).empty());  // re-reported after a restart
  Event(Exited(id, 1, 0, 0, kT0 + 10));
  EXPECT_TRUE(Event(Exited(id, 1, 0, 0, kT0 + 11)).empty());
  EXPECT_TRUE(Event(Started(id, 1, 0, kT0 + 12)).empty());
  EXPECT_TRUE(Event(Exited(id, 7, 0, 0, kT0 + 13)).empty());
  EXPECT_EQ(State(id), JobState::kSucceeded);
}

TEST(ControllerRestore, RestoredRunningJobKeepsItsGpusAndItsLiveWorkers) {
  Controller before;
  Step step;
  before.UpsertNode(NodeA(2), kT0, step);
  JobId id = before.Submit({Spec("a", 2)}, "", "alice", kT0, step)->ids[0];
  before.Schedule(kT0, step);
  before.OnWorkerEvent(Started(id, 1, 0, kT0 + 1), step);

  Controller after;
  Step restore;
  after.UpsertNode(NodeA(2), kT0 + 5, restore);
  std::vector<model::Job> stored;
  for (const auto& [job_id, job] : before.jobs()) stored.push_back(job);
  after.Restore(stored, kT0 + 5, restore);
  EXPECT_TRUE(restore.transitions.empty());
  ASSERT_EQ(after.LiveWorkers().size(), 1u);
  EXPECT_EQ(after.LiveWorkers()[0].second, (model::WorkerKey{id, 1, 0}));

  Step submit;
  JobId next = after.Submit({Spec("b", 1)}, "", "alice", kT0 + 6, submit)->ids[0];
  EXPECT_GT(next.value(), id.value());
  Step scheduled;
  after.Schedule(kT0 + 6, scheduled);
  EXPECT_TRUE(Launches(scheduled).empty());  // the restored job still holds both GPUs

  Step exited;
  after.OnWorkerEvent(Exited(id, 1, 0, 0, kT0 + 7), exited);
  EXPECT_EQ(after.Find(id)->state, JobState::kSucceeded);
  Step rescheduled;
  after.Schedule(kT0 + 8, rescheduled);
  EXPECT_EQ(Launches(rescheduled).size(), 1u);
}

TEST(ControllerRestore, RelaunchRepeatsALaunchThatNeverHappened) {
  Controller controller;
  Step step;
  controller.UpsertNode(NodeA(1), kT0, step);
  JobId id = controller.Submit({Spec("a", 1)}, "", "alice", kT0, step)->ids[0];
  controller.Schedule(kT0, step);
  Step relaunch;
  controller.Relaunch({id, 1, 0}, relaunch);
  auto launches = Launches(relaunch);
  ASSERT_EQ(launches.size(), 1u);
  EXPECT_EQ(launches[0].spec.key, (model::WorkerKey{id, 1, 0}));
}

}  // namespace
}  // namespace drover::control
