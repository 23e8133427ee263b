// The controller's side of docs/workflows.md: dependency conditions, `if`, outputs published
// only by a successful attempt, sweeps, inputs, retry versus resume, whole admission.

#include <fmt/format.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "drover/control/control_test_util.h"
#include "drover/control/controller.h"
#include "drover/workflow/rollup.h"

namespace drover::control {
namespace {

using model::DependencyCondition;
using model::JobState;
using testing::EffectsOf;
using ::testing::ElementsAre;
using testing::Exited;
using testing::GpuNode;
using ::testing::HasSubstr;
using testing::kGi;
using testing::kT0;
using testing::Launches;
using testing::Spec;
using testing::Started;

// A stage `name` of pipeline "p" that depends on `upstream` with `condition`.
model::JobSpec Stage(const std::string& name, const std::string& upstream = "",
                     DependencyCondition condition = DependencyCondition::kSucceeded) {
  model::JobSpec spec = Spec(name);
  spec.pipeline = "p";
  spec.stage = name;
  if (!upstream.empty()) spec.depends_on = {{upstream, condition}};
  return spec;
}

// Trial `index` of `count` of sweep stage "train", one GPU each.
model::JobSpec Trial(int index, int count, int concurrency) {
  model::JobSpec spec = Stage("train");
  spec.name = "train." + std::to_string(index);
  spec.requirements.per_worker.gpus = 1;
  spec.trial.index = index;
  spec.trial.count = count;
  spec.trial.concurrency = concurrency;
  spec.trial.objective = "accuracy";
  spec.outputs = {{"accuracy", ""}};
  return spec;
}

class WorkflowTest : public testing::ControllerFixture {
 protected:
  WorkflowTest() : testing::ControllerFixture() {
    Options options;
    options.value_outputs_root = "/values";
    controller_ = Controller(options);
    Step step;
    controller_.UpsertNode(GpuNode("node-a", 4), kT0, step);
  }

  // Runs the single-worker job `id` (attempt `attempt`) to an exit with `code` at `at`.
  Step RunToExit(JobId id, int code, TimeMs at, int attempt = 1) {
    Schedule(at);
    Event(Started(id, attempt, 0, at));
    return Event(Exited(id, attempt, 0, code, at));
  }

  // Answers the PublishOutputs of `id` with `outputs`.
  Step Publish(JobId id, std::map<std::string, std::string> outputs, TimeMs at, int attempt = 1) {
    Step step;
    controller_.OnOutputsPublished(id, attempt, outputs, at, step);
    return step;
  }
};

TEST_F(WorkflowTest, AFailureHandlerRunsOnlyWhenItsUpstreamFailed) {
  auto ids = Submit({Stage("train"), Stage("cleanup", "train", DependencyCondition::kFailed),
                     Stage("report", "train", DependencyCondition::kDone)});
  RunToExit(ids[0], 3, kT0 + 10);
  Step next = Schedule(kT0 + 11);
  EXPECT_EQ(State(ids[1]), JobState::kStarting);
  EXPECT_EQ(State(ids[2]), JobState::kStarting);

  auto again = Submit({Stage("train"), Stage("cleanup", "train", DependencyCondition::kFailed),
                       Stage("report", "train", DependencyCondition::kDone)});
  RunToExit(again[0], 0, kT0 + 20);
  Schedule(kT0 + 21);
  EXPECT_EQ(State(again[1]), JobState::kSkipped);
  EXPECT_THAT(controller_.Find(again[1])->status_message, HasSubstr("train"));
  EXPECT_EQ(State(again[2]), JobState::kStarting);
}

TEST_F(WorkflowTest, SkippingPropagatesAndASkippedConditionRunsTheAlternative) {
  auto ids = Submit({Stage("a"), Stage("b", "a"), Stage("c", "b"),
                     Stage("fallback", "b", DependencyCondition::kSkipped)});
  RunToExit(ids[0], 1, kT0 + 10);
  Schedule(kT0 + 11);
  EXPECT_EQ(State(ids[1]), JobState::kSkipped);
  EXPECT_EQ(State(ids[2]), JobState::kSkipped);
  EXPECT_EQ(State(ids[3]), JobState::kStarting);
  for (JobId id : ids) EXPECT_EQ(controller_.Find(id)->pipeline_run, ids[0]);
}

TEST_F(WorkflowTest, OutputsArePublishedBeforeTheJobSucceedsAndOnlyOnSuccess) {
  model::JobSpec train = Stage("train");
  train.outputs = {{"model", "/out/model.pt"}, {"accuracy", ""}};
  JobId id = Submit({train})[0];
  auto launches = Launches(Schedule(kT0));
  ASSERT_EQ(launches.size(), 1u);
  const model::LaunchSpec& launch = launches[0].spec;
  const std::string staged_model =
      fmt::format("/out/.drover-staging/job-{}.attempt-1/model.pt", id.value());
  EXPECT_EQ(launch.env.at("DROVER_OUTPUT_MODEL"), staged_model);
  EXPECT_THAT(launch.make_dirs,
              ElementsAre(fmt::format("/out/.drover-staging/job-{}.attempt-1", id.value())));
  // A value is the node's to stage (in the worker's directory) and to report with the exit.
  EXPECT_FALSE(launch.env.contains("DROVER_OUTPUT_ACCURACY"));
  EXPECT_THAT(launch.value_outputs, ElementsAre("accuracy"));
  EXPECT_EQ(launch.run_as, "alice");

  Event(Started(id, 1, 0, kT0 + 1));
  model::WorkerEvent exit = Exited(id, 1, 0, 0, kT0 + 2);
  exit.exit.output_values = {{"accuracy", "0.9"}};
  Step exited = Event(exit);
  EXPECT_EQ(State(id), JobState::kRunning);  // not succeeded until published
  auto publish = EffectsOf<PublishOutputs>(exited);
  ASSERT_EQ(publish.size(), 1u);
  EXPECT_EQ(publish[0].job, id);
  EXPECT_EQ(publish[0].run_as, "alice");  // published with the account's file permissions
  ASSERT_EQ(publish[0].outputs.size(), 2u);
  EXPECT_EQ(publish[0].outputs[0].staging, staged_model);
  EXPECT_EQ(publish[0].outputs[0].destination, "/out/model.pt");
  EXPECT_EQ(publish[0].reported_values, (std::map<std::string, std::string>{{"accuracy", "0.9"}}));
  EXPECT_FALSE(controller_.Cancel(id, "alice", "late", kT0 + 3, exited));

  Publish(id, {{"model", "/out/model.pt"}, {"accuracy", "0.9"}}, kT0 + 3);
  EXPECT_EQ(State(id), JobState::kSucceeded);
  EXPECT_EQ(controller_.Find(id)->outputs.at("accuracy"), "0.9");
}

// A gang's workers may each report values (each node reads its own worker's files): the lowest
// rank's value of each output is the one published, whatever order the exits came in.
TEST_F(WorkflowTest, TheLowestRankThatReportedAValueGivesIt) {
  model::JobSpec train = Stage("train");
  train.workers = 2;
  train.outputs = {{"accuracy", ""}, {"loss", ""}};
  JobId id = Submit({train})[0];
  ASSERT_EQ(Launches(Schedule(kT0)).size(), 2u);
  Event(Started(id, 1, 0, kT0 + 1));
  Event(Started(id, 1, 1, kT0 + 1));
  model::WorkerEvent second = Exited(id, 1, 1, 0, kT0 + 2);
  second.exit.output_values = {{"accuracy", "0.5"}, {"loss", "0.7"}};
  Event(second);
  model::WorkerEvent first = Exited(id, 1, 0, 0, kT0 + 3);
  first.exit.output_values = {{"accuracy", "0.9"}};
  auto publish = EffectsOf<PublishOutputs>(Event(first));
  ASSERT_EQ(publish.size(), 1u);
  EXPECT_EQ(publish[0].reported_values,
            (std::map<std::string, std::string>{{"accuracy", "0.9"}, {"loss", "0.7"}}));
}

TEST_F(WorkflowTest, AFailedAttemptWithOnlyValuesLeavesTheServerNothingToDiscard) {
  model::JobSpec train = Stage("train");
  train.outputs = {{"accuracy", ""}};
  JobId id = Submit({train})[0];
  Step failed = RunToExit(id, 1, kT0);
  EXPECT_EQ(State(id), JobState::kFailed);
  EXPECT_TRUE(EffectsOf<DiscardOutputs>(failed).empty());
}

TEST_F(WorkflowTest, ACheckpointReportedWhileOutputsPublishIsRecordedNotACrash) {
  // The job is running but holds nothing while its outputs publish; Track threw
  // std::out_of_range for it before the holdings had their own owner.
  model::JobSpec train = Stage("train");
  train.outputs = {{"accuracy", ""}};
  JobId id = Submit({train})[0];
  RunToExit(id, 0, kT0 + 2);
  ASSERT_EQ(State(id), JobState::kRunning);
  Step step;
  ASSERT_TRUE(controller_.ReportCheckpoint(id, kT0 + 3, step));
  EXPECT_EQ(controller_.Find(id)->current_attempt()->last_checkpoint_at, kT0 + 3);
  Publish(id, {{"accuracy", "0.9"}}, kT0 + 4);
  EXPECT_EQ(State(id), JobState::kSucceeded);
}

TEST_F(WorkflowTest, AFailedAttemptDiscardsItsStagingAndAFailedPublicationFailsTheAttempt) {
  model::JobSpec train = Stage("train");
  train.outputs = {{"model", "/out/model.pt"}, {"accuracy", ""}};
  train.retry.max_attempts = 2;
  JobId id = Submit({train})[0];
  Step failed = RunToExit(id, 1, kT0);
  EXPECT_TRUE(EffectsOf<PublishOutputs>(failed).empty());
  auto discard = EffectsOf<DiscardOutputs>(failed);
  ASSERT_EQ(discard.size(), 1u);
  // The value staged on the worker's node, in its own folder: nothing for the server to remove.
  ASSERT_EQ(discard[0].outputs.size(), 1u);
  EXPECT_EQ(discard[0].outputs[0].destination, "/out/model.pt");
  EXPECT_EQ(discard[0].run_as, "alice");  // removed with the account's file permissions
  EXPECT_EQ(State(id), JobState::kReady);

  Step second = RunToExit(id, 0, kT0 + 10, 2);
  ASSERT_EQ(EffectsOf<PublishOutputs>(second).size(), 1u);
  Step refused;
  controller_.OnOutputsPublished(id, 2, NotFound("output 'model' was not written"), kT0 + 11,
                                 refused);
  EXPECT_EQ(State(id), JobState::kFailed);
  EXPECT_THAT(controller_.Find(id)->status_message, HasSubstr("publishing outputs"));
  EXPECT_EQ(EffectsOf<DiscardOutputs>(refused).size(), 1u);
  // A failed publication's record goes too: the next attempt publishes under its own.
  auto forget = EffectsOf<ForgetPublication>(refused);
  ASSERT_EQ(forget.size(), 1u);
  EXPECT_EQ(forget[0].job, id);
  EXPECT_EQ(forget[0].attempt, 2);
}

// The driver keeps a record of a publication under way (agent::PublicationRecord) until the
// step that takes its answer is persisted: the effect that drops it comes with that step, not
// with the PublishOutputs, and only for a job with path outputs (values need none).
TEST_F(WorkflowTest, APublicationsRecordIsForgottenWithTheStepThatTakesItsAnswer) {
  model::JobSpec train = Stage("train");
  train.outputs = {{"model", "/out/model.pt"}};
  model::JobSpec score = Stage("score");
  score.outputs = {{"accuracy", ""}};
  auto ids = Submit({train, score});
  Step exited = RunToExit(ids[0], 0, kT0);
  EXPECT_EQ(EffectsOf<PublishOutputs>(exited).size(), 1u);
  EXPECT_TRUE(EffectsOf<ForgetPublication>(exited).empty());
  Step published = Publish(ids[0], {{"model", "/out/model.pt"}}, kT0 + 1);
  EXPECT_EQ(State(ids[0]), JobState::kSucceeded);
  auto forget = EffectsOf<ForgetPublication>(published);
  ASSERT_EQ(forget.size(), 1u);
  EXPECT_EQ(forget[0].job, ids[0]);
  EXPECT_EQ(forget[0].attempt, 1);

  RunToExit(ids[1], 0, kT0 + 2);
  EXPECT_TRUE(
      EffectsOf<ForgetPublication>(Publish(ids[1], {{"accuracy", "0.9"}}, kT0 + 3)).empty());
  EXPECT_EQ(State(ids[1]), JobState::kSucceeded);
}

TEST_F(WorkflowTest, IfAndTemplatesReadTheUpstreamsPublishedOutputs) {
  model::JobSpec train = Stage("train");
  train.outputs = {{"accuracy", ""}};
  model::JobSpec deploy = Stage("deploy", "train");
  deploy.run_if = "${{ stages.train.outputs.accuracy }} >= 0.5";
  deploy.command = {"deploy", "--accuracy", "${{ stages.train.outputs.accuracy }}"};
  model::JobSpec retrain = Stage("retrain", "train");
  retrain.run_if = "${{ stages.train.outputs.accuracy }} < 0.5";
  auto ids = Submit({train, deploy, retrain});
  RunToExit(ids[0], 0, kT0);
  Publish(ids[0], {{"accuracy", "0.75"}}, kT0 + 1);
  auto launches = Launches(Schedule(kT0 + 2));
  ASSERT_EQ(launches.size(), 1u);
  EXPECT_THAT(launches[0].spec.argv, ElementsAre("deploy", "--accuracy", "0.75"));
  EXPECT_EQ(State(ids[2]), JobState::kSkipped);
  EXPECT_THAT(controller_.Find(ids[2])->status_message, HasSubstr("is false"));
}

TEST_F(WorkflowTest, ASweepNeverReleasesMoreThanItsConcurrencyAndStopsEarly) {
  std::vector<model::JobSpec> specs;
  for (int i = 1; i <= 6; ++i) specs.push_back(Trial(i, 6, 2));
  for (model::JobSpec& spec : specs) spec.trial.stop_at = 0.95;
  model::JobSpec evaluate = Stage("evaluate", "train");
  evaluate.command = {"eval", "${{ stages.train.outputs.accuracy }}"};
  specs.push_back(evaluate);
  auto ids = Submit(specs);

  auto released = [&] {
    int count = 0;
    for (int i = 0; i < 6; ++i) {
      JobState state = State(ids[i]);
      count += state != JobState::kPending && !model::IsTerminal(state);
    }
    return count;
  };
  EXPECT_EQ(Launches(Schedule(kT0)).size(), 2u);  // 4 GPUs free, concurrency 2
  EXPECT_EQ(released(), 2);
  auto explained = controller_.Explain(ids[2], kT0);
  EXPECT_EQ(explained->layer, model::HoldLayer::kPipeline);
  EXPECT_THAT(explained->message, HasSubstr("concurrency 2"));

  // Trial 1 succeeds with 0.6: trial 3 takes its place.
  Event(Started(ids[0], 1, 0, kT0 + 1));
  Event(Exited(ids[0], 1, 0, 0, kT0 + 2));
  Publish(ids[0], {{"accuracy", "0.6"}}, kT0 + 2);
  EXPECT_EQ(Launches(Schedule(kT0 + 3)).size(), 1u);
  EXPECT_EQ(released(), 2);
  EXPECT_EQ(State(ids[2]), JobState::kStarting);

  // Trial 2 reaches 0.97 >= stop_at: the unfinished trials are cancelled.
  Event(Started(ids[1], 1, 0, kT0 + 4));
  Event(Exited(ids[1], 1, 0, 0, kT0 + 5));
  Step stopped = Publish(ids[1], {{"accuracy", "0.97"}}, kT0 + 5);
  EXPECT_EQ(State(ids[3]), JobState::kCancelled);
  EXPECT_THAT(controller_.Find(ids[3])->status_message, HasSubstr("early stopping"));
  EXPECT_EQ(testing::Stops(stopped).size(), 1u);  // trial 3 was running
  Event(testing::Killed(ids[2], 1, 0, kT0 + 6));
  EXPECT_EQ(State(ids[2]), JobState::kCancelled);

  // The sweep succeeded; downstream reads the best trial's output.
  auto launches = Launches(Schedule(kT0 + 7));
  ASSERT_EQ(launches.size(), 1u);
  EXPECT_EQ(launches[0].spec.key.job, ids[6]);
  EXPECT_THAT(launches[0].spec.argv, ElementsAre("eval", "0.97"));
}

TEST_F(WorkflowTest, AJobWaitsForItsInputsWithoutQueueing) {
  model::JobSpec spec = Stage("prep");
  spec.inputs = {{"/data/raw.csv", "", ""}, {"/data/_SUCCESS", "", ""}};
  JobId id = Submit({spec})[0];
  EXPECT_TRUE(Launches(Schedule(kT0)).empty());
  EXPECT_EQ(State(id), JobState::kWaiting);
  auto checks = controller_.InputsToCheck();
  ASSERT_EQ(checks.size(), 1u);
  EXPECT_THAT(checks[0].paths, ElementsAre("/data/raw.csv", "/data/_SUCCESS"));
  EXPECT_EQ(checks[0].run_as, "alice");  // looked for with the account's permissions

  Step step;
  controller_.OnInputsChecked(id, {"/data/_SUCCESS"}, kT0 + 1, step);
  EXPECT_EQ(State(id), JobState::kWaiting);
  auto explained = controller_.Explain(id, kT0 + 1);
  EXPECT_EQ(explained->layer, model::HoldLayer::kInputs);
  EXPECT_EQ(explained->message, "waiting for input /data/_SUCCESS");
  for (const QueueReport& queue : controller_.Queues(kT0 + 1)) EXPECT_EQ(queue.pending_jobs, 0);

  controller_.OnInputsChecked(id, {}, kT0 + 50, step);
  EXPECT_EQ(State(id), JobState::kReady);
  const model::Job& job = *controller_.Find(id);
  EXPECT_EQ(job.released_at, kT0);
  EXPECT_EQ(job.attempts.at(0).ready_at, kT0 + 50);
  EXPECT_TRUE(controller_.InputsToCheck().empty());
  EXPECT_EQ(Launches(Schedule(kT0 + 51)).size(), 1u);
}

TEST_F(WorkflowTest, RetryOnlyOnTheFailuresItNames) {
  model::JobSpec spec = Spec("train");
  spec.timeout = 1'000;
  spec.retry.max_attempts = 3;
  spec.retry.on = {model::FailureKind::kExit};
  JobId id = Submit({spec})[0];
  Schedule(kT0);
  model::WorkerEvent timed_out = testing::Killed(id, 1, 0, kT0 + 1'000);
  timed_out.exit.timed_out = true;
  Event(timed_out);
  EXPECT_EQ(State(id), JobState::kTimedOut);
}

TEST_F(WorkflowTest, ResumeStartsTheNextAttemptFromTheCheckpoint) {
  model::JobSpec spec = Spec("train");
  spec.checkpoint_dir = "/ckpt";
  spec.resume = true;
  spec.retry.max_attempts = 3;
  JobId id = Submit({spec})[0];
  Schedule(kT0);
  Event(Started(id, 1, 0, kT0));
  Step step;
  ASSERT_TRUE(controller_.ReportCheckpoint(id, kT0 + 5, step));
  Event(Exited(id, 1, 0, 1, kT0 + 10));
  auto relaunch = Launches(Schedule(kT0 + 11));
  ASSERT_EQ(relaunch.size(), 1u);
  EXPECT_EQ(relaunch[0].spec.env.at("DROVER_RESUME"), "1");
  EXPECT_EQ(relaunch[0].spec.env.at("DROVER_CHECKPOINT_DIR"), "/ckpt");
  EXPECT_TRUE(controller_.Find(id)->attempts.at(1).resumed);

  // Without resume the retry starts over.
  spec.name = "fresh";
  spec.resume = false;
  JobId fresh = Submit({spec})[0];
  Schedule(kT0 + 20);
  Event(Started(fresh, 1, 0, kT0 + 20));
  ASSERT_TRUE(controller_.ReportCheckpoint(fresh, kT0 + 25, step));
  Event(Exited(fresh, 1, 0, 1, kT0 + 30));
  auto retry = Launches(Schedule(kT0 + 31));
  ASSERT_EQ(retry.size(), 1u);
  EXPECT_FALSE(retry[0].spec.env.contains("DROVER_RESUME"));
}

TEST_F(WorkflowTest, WholeAdmissionRefusesAPipelineItsQueueCouldNeverHoldAndWaitsForRoom) {
  model::Policy policy;
  model::QueueConfig team;
  team.name = "team";
  team.nominal = {{"gpu", 2000}};
  policy.queues.push_back(team);
  ASSERT_TRUE(controller_.SetPolicy(policy));
  model::JobSpec wide = Stage("train");
  wide.queue = "team";
  wide.admission = model::PipelineAdmission::kWhole;
  wide.requirements.per_worker.gpus = 4;
  Step step;
  auto refused = controller_.Submit({wide}, "", "alice", kT0, step);
  ASSERT_FALSE(refused);
  EXPECT_THAT(refused.error().message, HasSubstr("can never be admitted"));

  model::JobSpec other = Spec("other", "team", 1);
  JobId busy = Submit({other})[0];
  Schedule(kT0);
  model::JobSpec prep = Stage("prep");
  prep.queue = "team";
  prep.admission = model::PipelineAdmission::kWhole;
  model::JobSpec train = Stage("train", "prep");
  train.queue = "team";
  train.admission = model::PipelineAdmission::kWhole;
  train.requirements.per_worker.gpus = 2;
  auto ids = Submit({prep, train});
  Schedule(kT0 + 1);
  EXPECT_EQ(State(ids[0]), JobState::kPending);
  EXPECT_THAT(controller_.Explain(ids[0], kT0 + 1)->message, HasSubstr("stage train"));
  Event(Started(busy, 1, 0, kT0 + 2));
  Event(Exited(busy, 1, 0, 0, kT0 + 3));
  Schedule(kT0 + 4);
  EXPECT_EQ(State(ids[0]), JobState::kStarting);
}

TEST_F(WorkflowTest, CancellingAPipelineCancelsItsUnfinishedJobs) {
  JobId alone = Submit({Spec("alone")})[0];  // in no run: pipeline_run is JobId()
  auto ids = Submit({Stage("a"), Stage("b", "a")});
  Schedule(kT0);
  Step step;
  EXPECT_FALSE(controller_.CancelPipeline(JobId(), "alice", "user", kT0 + 1, step));
  EXPECT_EQ(State(alone), JobState::kStarting);
  ASSERT_TRUE(controller_.CancelPipeline(ids[0], "alice", "user", kT0 + 1, step));
  EXPECT_EQ(State(ids[1]), JobState::kCancelled);
  EXPECT_EQ(testing::Stops(step).size(), 1u);
  EXPECT_FALSE(controller_.CancelPipeline(JobId(999), "alice", "user", kT0 + 1, step));

  // The run reads cancelling while its running stage stops, then cancelled, as do both stages.
  EXPECT_EQ(workflow::RollUp(controller_.RunJobs(ids[0])).state, workflow::RunState::kCancelling);
  model::WorkerEvent stopped = testing::Killed(ids[0], 1, 0, kT0 + 2);
  stopped.exit.cancelled = true;
  Event(stopped);
  EXPECT_EQ(State(ids[0]), JobState::kCancelled);
  const workflow::RunStatus run = workflow::RollUp(controller_.RunJobs(ids[0]));
  EXPECT_EQ(run.state, workflow::RunState::kCancelled);
  ASSERT_EQ(run.stages.size(), 2u);
  EXPECT_EQ(run.stages[0].state, workflow::StageState::kCancelled);
  EXPECT_EQ(run.stages[1].state, workflow::StageState::kCancelled);
}

TEST_F(WorkflowTest, AJobReportsWhenUsefulWorkBeganItsProgressAndThroughput) {
  JobId id = Submit({Spec("train")})[0];
  Step step;
  model::ProgressReport began;
  began.useful_work_began = true;
  EXPECT_FALSE(controller_.ReportProgress(id, began, kT0, step));  // not running
  Schedule(kT0);
  Event(Started(id, 1, 0, kT0 + 1));
  ASSERT_TRUE(controller_.ReportProgress(id, {true, 0.25, std::nullopt, ""}, kT0 + 7, step));
  ASSERT_TRUE(controller_.ReportProgress(id, {true, 0.5, 1250, "samples/s"}, kT0 + 9, step));
  // A bad report changes nothing, its valid fields included.
  EXPECT_FALSE(controller_.ReportProgress(id, {false, 1.5, 99, "samples/s"}, kT0 + 9, step));
  EXPECT_FALSE(controller_.ReportProgress(id, {false, 0.75, 99, "samples"}, kT0 + 9, step));
  const model::Attempt& attempt = controller_.Find(id)->attempts.at(0);
  EXPECT_EQ(attempt.useful_work_at, kT0 + 7);
  EXPECT_EQ(attempt.progress, 0.5);
  EXPECT_EQ(attempt.throughput, 1250);
  EXPECT_EQ(attempt.throughput_unit, "samples/s");
}

}  // namespace
}  // namespace drover::control
