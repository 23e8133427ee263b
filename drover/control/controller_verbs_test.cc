// The job verbs (controller_verbs.cc): hold and release, update, requeue; each recorded with its
// actor, each refused naming the state where the state does not allow it.

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "drover/control/attempt_facts.h"
#include "drover/control/control_test_util.h"
#include "drover/control/controller.h"

namespace drover::control {
namespace {

using model::JobState;
using testing::Exited;
using testing::GpuNode;
using ::testing::HasSubstr;
using testing::kT0;
using testing::Launches;
using testing::Preempted;
using testing::Spec;
using testing::Started;
using testing::Stops;

class VerbsTest : public testing::ControllerFixture {
 protected:
  VerbsTest() {
    Step step;
    controller_.UpsertNode(GpuNode("node-a", 4), kT0, step);
  }

  // Submits `spec` at `now` and makes it ready (a scheduling pass at `now`).
  JobId SubmitReady(model::JobSpec spec, TimeMs now) {
    const JobId id = Submit({std::move(spec)}, now).at(0);
    last_ = Schedule(now);
    return id;
  }

  // A 4-GPU job that fills node-a, running from kT0.
  JobId RunBlocker() {
    const JobId id = SubmitReady(Spec("blocker", 4), kT0);
    EXPECT_EQ(Launches(last_).size(), 1u);
    Event(Started(id, 1, 0, kT0 + 1));
    EXPECT_EQ(State(id), JobState::kRunning);
    return id;
  }

  Status Hold(JobId id, TimeMs now, const std::string& reason = "") {
    last_ = Step();
    return controller_.HoldJob(id, "bob", reason, now, last_);
  }
  Status Release(JobId id, TimeMs now) {
    last_ = Step();
    return controller_.ReleaseJob(id, "bob", now, last_);
  }
  Status Update(JobId id, const JobUpdate& update, TimeMs now) {
    last_ = Step();
    return controller_.UpdateJob(id, update, "bob", now, last_);
  }
  Status Requeue(JobId id, TimeMs now, const std::string& reason = "") {
    last_ = Step();
    return controller_.RequeueJob(id, "bob", reason, now, last_);
  }

  Step last_;
};

// The error of `status`, which must be one.
Error ErrorOf(const Status& status) {
  EXPECT_FALSE(status.has_value());
  return status ? Error{} : status.error();
}

TEST_F(VerbsTest, AHeldJobIsSkippedAndTheNextOneTakesTheFreedCapacity) {
  const JobId blocker = RunBlocker();
  const JobId first = SubmitReady(Spec("first", 4), kT0 + 10);
  const JobId second = SubmitReady(Spec("second", 4), kT0 + 20);
  ASSERT_TRUE(Hold(first, kT0 + 30, "input data not ready"));

  Event(Exited(blocker, 1, 0, 0, kT0 + 40));
  Step pass = Schedule(kT0 + 40);
  ASSERT_EQ(Launches(pass).size(), 1u);
  EXPECT_EQ(Launches(pass)[0].spec.key.job, second);
  EXPECT_EQ(State(first), JobState::kReady);

  Result<Explanation> why = controller_.Explain(first, kT0 + 60'030);
  ASSERT_TRUE(why);
  EXPECT_EQ(why->layer, model::HoldLayer::kHeld);
  EXPECT_THAT(why->message, HasSubstr("held by bob for 1m: input data not ready"));
  EXPECT_THAT(why->message, HasSubstr("drover release"));
}

TEST_F(VerbsTest, AReleasedJobKeepsItsPlaceAheadOfJobsQueuedAfterIt) {
  const JobId blocker = RunBlocker();
  const JobId first = SubmitReady(Spec("first", 4), kT0 + 10);
  const JobId second = SubmitReady(Spec("second", 4), kT0 + 20);
  const TimeMs place = QueuedSince(*controller_.Find(first));
  ASSERT_TRUE(Hold(first, kT0 + 30));
  Schedule(kT0 + 35);  // passes while it is held do not move it
  ASSERT_TRUE(Release(first, kT0 + 50));
  EXPECT_EQ(QueuedSince(*controller_.Find(first)), place);

  Event(Exited(blocker, 1, 0, 0, kT0 + 60));
  Step pass = Schedule(kT0 + 60);
  ASSERT_EQ(Launches(pass).size(), 1u);
  EXPECT_EQ(Launches(pass)[0].spec.key.job, first);
  EXPECT_EQ(State(second), JobState::kReady);
}

TEST_F(VerbsTest, HoldAndReleaseAreRecordedWithTheirActorAndLeaveTheStateAsItWas) {
  RunBlocker();
  const JobId id = SubmitReady(Spec("train", 4), kT0 + 10);
  ASSERT_TRUE(Hold(id, kT0 + 20, "maintenance"));
  ASSERT_EQ(last_.transitions.size(), 1u);
  const model::Transition held = last_.transitions[0];
  EXPECT_EQ(held.from, JobState::kReady);
  EXPECT_EQ(held.to, JobState::kReady);
  EXPECT_EQ(held.actor, "bob");
  EXPECT_EQ(held.cause, "held: maintenance");
  EXPECT_TRUE(last_.changed.contains(id));
  const model::Job& job = *controller_.Find(id);
  ASSERT_TRUE(job.hold);
  EXPECT_EQ(*job.hold, (model::JobHold{"bob", kT0 + 20, "maintenance"}));
  EXPECT_EQ(job.status_message, "held by bob: maintenance");

  ASSERT_TRUE(Release(id, kT0 + 2'020));
  ASSERT_EQ(last_.transitions.size(), 1u);
  EXPECT_EQ(last_.transitions[0].actor, "bob");
  EXPECT_EQ(last_.transitions[0].cause, "released (held by bob for 2s)");
  EXPECT_FALSE(controller_.Find(id)->hold);
}

TEST_F(VerbsTest, APendingJobCanBeHeldAndStaysHeldWhenItsDependenciesFinish) {
  model::JobSpec up = Spec("up", 0);
  model::JobSpec down = Spec("down", 0);
  down.depends_on = {{"up", model::DependencyCondition::kSucceeded}};
  const std::vector<JobId> ids = Submit({up, down});
  ASSERT_TRUE(Hold(ids[1], kT0));
  EXPECT_EQ(State(ids[1]), JobState::kPending);
  ASSERT_EQ(Launches(Schedule(kT0 + 1)).size(), 1u);
  Event(Started(ids[0], 1, 0, kT0 + 2));
  Event(Exited(ids[0], 1, 0, 0, kT0 + 3));
  EXPECT_THAT(Launches(Schedule(kT0 + 4)), ::testing::IsEmpty());
  EXPECT_EQ(State(ids[1]), JobState::kReady);
  EXPECT_EQ(controller_.Explain(ids[1], kT0 + 4)->layer, model::HoldLayer::kHeld);
  ASSERT_TRUE(Release(ids[1], kT0 + 5));
  EXPECT_EQ(Launches(Schedule(kT0 + 6)).size(), 1u);
}

TEST_F(VerbsTest, HoldAndReleaseAreRefusedNamingTheStateAndChangeNothing) {
  const JobId running = RunBlocker();
  Error error = ErrorOf(Hold(running, kT0 + 5));
  EXPECT_EQ(error.code, ErrorCode::kFailedPrecondition);
  EXPECT_THAT(error.message, HasSubstr("job 1 is running: only a job not yet admitted"));
  EXPECT_THAT(error.message, HasSubstr("drover requeue"));
  EXPECT_TRUE(last_.empty());
  EXPECT_FALSE(controller_.Find(running)->hold);

  const JobId ready = SubmitReady(Spec("train", 4), kT0 + 10);
  error = ErrorOf(Release(ready, kT0 + 11));
  EXPECT_EQ(error.code, ErrorCode::kFailedPrecondition);
  EXPECT_EQ(error.message, "job 2 is not held (it is ready)");

  ASSERT_TRUE(Hold(ready, kT0 + 12));
  error = ErrorOf(Hold(ready, kT0 + 1'012));
  EXPECT_EQ(error.code, ErrorCode::kFailedPrecondition);
  EXPECT_EQ(error.message, "job 2 is already held (by bob, for 1s)");
  EXPECT_TRUE(last_.empty());

  EXPECT_EQ(ErrorOf(Hold(JobId(99), kT0)).code, ErrorCode::kNotFound);
  // A held job that is cancelled explains itself as cancelled, not held.
  Step cancel;
  ASSERT_TRUE(controller_.Cancel(ready, "alice", "cancelled by bob", kT0 + 13, cancel));
  EXPECT_EQ(controller_.Explain(ready, kT0 + 14)->layer, model::HoldLayer::kFinished);
  EXPECT_EQ(ErrorOf(Release(JobId(99), kT0)).code, ErrorCode::kNotFound);

  Event(Exited(running, 1, 0, 0, kT0 + 20));
  error = ErrorOf(Hold(running, kT0 + 21));
  EXPECT_THAT(error.message, HasSubstr("job 1 has succeeded"));
}

TEST_F(VerbsTest, UpdateChangesAQueuedJobsPriorityTimeoutAndQueueAsRecorded) {
  model::Policy policy;
  for (const char* name : {"default", "batch"}) {
    model::QueueConfig queue;
    queue.name = name;
    policy.queues.push_back(queue);
  }
  ASSERT_TRUE(controller_.SetPolicy(policy));
  RunBlocker();
  const JobId id = SubmitReady(Spec("train", 4), kT0 + 10);
  ASSERT_TRUE(Update(id, {"high", 2 * kMillisPerHour, "batch"}, kT0 + 20));
  const model::Job& job = *controller_.Find(id);
  EXPECT_EQ(job.spec.priority_class, "high");
  EXPECT_EQ(job.spec.timeout, 2 * kMillisPerHour);
  EXPECT_EQ(job.spec.queue, "batch");
  ASSERT_EQ(last_.transitions.size(), 1u);
  EXPECT_EQ(last_.transitions[0].actor, "bob");
  EXPECT_EQ(last_.transitions[0].from, JobState::kReady);
  EXPECT_EQ(last_.transitions[0].to, JobState::kReady);
  EXPECT_EQ(last_.transitions[0].cause,
            "updated: priority normal -> high, timeout none -> 2h, queue default -> batch");

  // Asking for what it already has records nothing.
  ASSERT_TRUE(Update(id, {"high", std::nullopt, std::nullopt}, kT0 + 30));
  EXPECT_TRUE(last_.empty());
}

TEST_F(VerbsTest, UpdateRefusesWhatASubmissionWouldRefuseNamingTheField) {
  RunBlocker();
  const JobId id = SubmitReady(Spec("train", 4), kT0 + 10);
  const model::JobSpec before = controller_.Find(id)->spec;
  const struct {
    JobUpdate update;
    std::string message;
  } cases[] = {
      {{}, "update: nothing to change"},
      {{"urgent", std::nullopt, std::nullopt},
       "priority: unknown priority class 'urgent'; the classes are critical, high, normal, low"},
      {{std::nullopt, 0, std::nullopt}, "timeout: must be greater than 0"},
      {{std::nullopt, -5, std::nullopt}, "timeout: must be greater than 0"},
      {{std::nullopt, std::nullopt, "nope"}, "queue: nope does not exist; the queues are default"},
  };
  for (const auto& c : cases) {
    const Error error = ErrorOf(Update(id, c.update, kT0 + 20));
    EXPECT_EQ(error.code, ErrorCode::kInvalidArgument) << c.message;
    EXPECT_THAT(error.message, HasSubstr(c.message));
    EXPECT_TRUE(last_.empty());
  }
  EXPECT_EQ(controller_.Find(id)->spec, before);
}

TEST_F(VerbsTest, UpdateRefusesAQueueTheJobCouldNeverStartIn) {
  model::Policy policy;
  model::QueueConfig small, big;
  small.name = "small";
  small.limits.max_resources["gpu"] = 2000;
  big.name = "default";
  policy.queues = {small, big};
  ASSERT_TRUE(controller_.SetPolicy(policy));
  const JobId id = Submit({Spec("train", 4)}).at(0);
  const Error error = ErrorOf(Update(id, {std::nullopt, std::nullopt, "small"}, kT0 + 1));
  EXPECT_EQ(error.code, ErrorCode::kInvalidArgument);
  EXPECT_THAT(error.message, HasSubstr("queue: job 1 could never start in small"));
  EXPECT_EQ(controller_.Find(id)->spec.queue, "default");
}

TEST_F(VerbsTest, ARunningJobChangesOnlyItsTimeoutWhichItsWorkersAreTold) {
  model::JobSpec spec = Spec("train", 2, 2);
  spec.timeout = kMillisPerHour;
  const JobId id = SubmitReady(spec, kT0);
  ASSERT_EQ(Launches(last_).size(), 2u);
  Event(Started(id, 1, 0, kT0 + 1));
  Event(Started(id, 1, 1, kT0 + 1));
  ASSERT_EQ(State(id), JobState::kRunning);

  Error error = ErrorOf(Update(id, {"high", 3 * kMillisPerHour, std::nullopt}, kT0 + 5));
  EXPECT_EQ(error.code, ErrorCode::kFailedPrecondition);
  EXPECT_THAT(error.message,
              HasSubstr("job 1 is running: once admitted only its timeout may change (priority"));
  error = ErrorOf(Update(id, {std::nullopt, std::nullopt, "default"}, kT0 + 5));
  EXPECT_THAT(error.message, HasSubstr("(queue is fixed until it ends"));
  EXPECT_EQ(controller_.Find(id)->spec.timeout, kMillisPerHour);

  ASSERT_TRUE(Update(id, {std::nullopt, 3 * kMillisPerHour, std::nullopt}, kT0 + 10));
  const std::vector<SetWorkerTimeout> told = testing::EffectsOf<SetWorkerTimeout>(last_);
  ASSERT_EQ(told.size(), 2u);
  for (int rank = 0; rank < 2; ++rank) {
    EXPECT_EQ(told[rank].node, NodeId("node-a"));
    EXPECT_EQ(told[rank].key, (model::WorkerKey{id, 1, rank}));
    EXPECT_EQ(told[rank].timeout_ms, 3 * kMillisPerHour);
  }
  EXPECT_EQ(controller_.Find(id)->spec.timeout, 3 * kMillisPerHour);
  ASSERT_EQ(last_.transitions.size(), 1u);
  EXPECT_EQ(last_.transitions[0].cause, "updated: timeout 1h -> 3h");
  EXPECT_EQ(last_.transitions[0].from, JobState::kRunning);

  // A shorter one, too; a finished job changes no more.
  ASSERT_TRUE(Update(id, {std::nullopt, 30 * kMillisPerMinute, std::nullopt}, kT0 + 20));
  EXPECT_EQ(testing::EffectsOf<SetWorkerTimeout>(last_).size(), 2u);
  Event(Exited(id, 1, 0, 0, kT0 + 30));
  Event(Exited(id, 1, 1, 0, kT0 + 30));
  error = ErrorOf(Update(id, {std::nullopt, kMillisPerHour, std::nullopt}, kT0 + 40));
  EXPECT_EQ(error.code, ErrorCode::kFailedPrecondition);
  EXPECT_THAT(error.message, HasSubstr("job 1 has succeeded: a finished job cannot be updated"));
}

TEST_F(VerbsTest, RequeueStopsWithNoticeAndResumesFromTheCheckpointWithoutSpendingARetry) {
  model::JobSpec spec = Spec("train", 4);
  spec.checkpoint_dir = "/ckpt";
  spec.retry.max_attempts = 2;
  const JobId id = SubmitReady(spec, kT0);
  const TimeMs place = QueuedSince(*controller_.Find(id));
  Event(Started(id, 1, 0, kT0 + 1));
  Step checkpoint;
  ASSERT_TRUE(controller_.ReportCheckpoint(id, kT0 + 100, checkpoint));

  ASSERT_TRUE(Requeue(id, kT0 + 200, "bad node"));
  ASSERT_EQ(Stops(last_).size(), 1u);
  EXPECT_TRUE(Stops(last_)[0].preempt);  // the checkpoint notice
  EXPECT_EQ(Stops(last_)[0].reason, "requeued by bob: bad node");
  ASSERT_EQ(last_.transitions.size(), 1u);
  EXPECT_EQ(last_.transitions[0].actor, "bob");
  EXPECT_EQ(last_.transitions[0].cause, "requeue requested: bad node");
  EXPECT_EQ(State(id), JobState::kRunning);  // until its workers exit

  Step exited = Event(Preempted(id, 1, 0, kT0 + 300));
  EXPECT_EQ(State(id), JobState::kReady);
  ASSERT_EQ(exited.transitions.size(), 1u);
  EXPECT_EQ(exited.transitions[0].actor, "bob");
  EXPECT_THAT(exited.transitions[0].cause,
              HasSubstr("requeued by bob: bad node; requeued to resume from its checkpoint"));
  const model::Job& job = *controller_.Find(id);
  ASSERT_EQ(job.attempts.size(), 2u);
  EXPECT_EQ(job.attempts[0].requeued_by, "bob");
  EXPECT_EQ(job.attempts[0].disruption, model::Disruption::kUserRequeue);
  EXPECT_EQ(job.attempts[0].outcome, JobState::kReady);
  EXPECT_TRUE(job.attempts[1].resumed);
  EXPECT_EQ(QueuedSince(job), place);  // its place in the queue is kept

  // Attempt 2 fails: with max_attempts 2 it still has its one retry, the requeue did not count.
  Step relaunched = Schedule(kT0 + 400);
  ASSERT_EQ(Launches(relaunched).size(), 1u);
  EXPECT_EQ(Launches(relaunched)[0].spec.env.at("DROVER_RESUME"), "1");
  Event(Started(id, 2, 0, kT0 + 401));
  Event(Exited(id, 2, 0, 3, kT0 + 500));
  EXPECT_EQ(State(id), JobState::kReady);
  EXPECT_EQ(controller_.Find(id)->attempts.size(), 3u);
}

TEST_F(VerbsTest, ARequeuedJobThatFinishesDuringTheGraceSucceeds) {
  const JobId id = SubmitReady(Spec("train", 1), kT0);
  Event(Started(id, 1, 0, kT0 + 1));
  ASSERT_TRUE(Requeue(id, kT0 + 10));
  Event(Exited(id, 1, 0, 0, kT0 + 20));
  EXPECT_EQ(State(id), JobState::kSucceeded);
  EXPECT_EQ(controller_.Find(id)->attempts.size(), 1u);
}

TEST_F(VerbsTest, RequeueIsRefusedNamingTheStateAndChangesNothing) {
  RunBlocker();
  const JobId ready = SubmitReady(Spec("train", 4), kT0 + 10);
  Error error = ErrorOf(Requeue(ready, kT0 + 20));
  EXPECT_EQ(error.code, ErrorCode::kFailedPrecondition);
  EXPECT_EQ(error.message, "job 2 is ready: only a starting or running job can be requeued");
  EXPECT_TRUE(last_.empty());

  ASSERT_TRUE(Requeue(JobId(1), kT0 + 30));
  error = ErrorOf(Requeue(JobId(1), kT0 + 31));
  EXPECT_EQ(error.code, ErrorCode::kFailedPrecondition);
  EXPECT_THAT(error.message, HasSubstr("job 1 is already stopping (requeued by bob)"));
  EXPECT_TRUE(last_.empty());
  EXPECT_EQ(ErrorOf(Requeue(JobId(99), kT0)).code, ErrorCode::kNotFound);
}

TEST_F(VerbsTest, SubmissionIsRecordedWithTheSubmitterAndSchedulingWithSystem) {
  Step step;
  ASSERT_TRUE(controller_.Submit({Spec("train", 1)}, "", "alice", kT0, step));
  ASSERT_EQ(step.transitions.size(), 1u);
  EXPECT_EQ(step.transitions[0].actor, "alice");
  Step pass = Schedule(kT0 + 1);
  ASSERT_FALSE(pass.transitions.empty());
  for (const model::Transition& transition : pass.transitions) {
    EXPECT_EQ(transition.actor, "system");
  }
}

}  // namespace
}  // namespace drover::control
