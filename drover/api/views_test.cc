// The API's pipeline, goodput and job-cost views over hand-built jobs.

#include "drover/api/views.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "drover/codec/json.h"
#include "drover/model/metrics.h"

namespace drover::api {
namespace {

using model::Job;
using model::JobState;
using nlohmann::json;

constexpr TimeMs kT0 = 1'000'000;

// A job of pipeline run 1 that was created at kT0, released at `released`, queued 10 ms, placed
// and running 5 ms later on `gpus` GPUs, and finished at `finished` in `state`.
Job RanJob(std::int64_t id, const std::string& stage, TimeMs released, TimeMs finished,
           JobState state, int gpus = 1) {
  Job job;
  job.id = JobId(id);
  job.pipeline_run = JobId(1);
  job.spec.name = stage;
  job.spec.stage = stage;
  job.spec.pipeline = "tune";
  job.spec.team = "vision";
  job.created_at = kT0;
  job.released_at = released;
  job.state = state;
  job.finished_at = finished;
  model::Attempt attempt;
  attempt.ready_at = released;
  attempt.dequeued_at = released + 10;
  attempt.admitted_at = released + 10;
  attempt.placed_at = released + 12;
  attempt.workers_started_at = released + 13;
  attempt.running_at = released + 15;
  attempt.finished_at = finished;
  attempt.outcome = state;
  model::Worker worker;
  for (int gpu = 0; gpu < gpus; ++gpu) worker.gpus.push_back(gpu);
  attempt.workers.push_back(worker);
  job.attempts.push_back(attempt);
  return job;
}

Job Trial(std::int64_t id, int index, const std::string& lr, TimeMs released, TimeMs finished,
          JobState state) {
  Job job = RanJob(id, "train", released, finished, state);
  job.spec.name = "train." + std::to_string(index);
  job.spec.trial.index = index;
  job.spec.trial.count = 2;
  job.spec.trial.params = {{"lr", lr}};
  job.spec.depends_on = {{"prep", model::DependencyCondition::kSucceeded}};
  job.dependencies = {JobId(1)};
  return job;
}

// prep (1) -> train.1 (2), train.2 (3) -> evaluate (4, skipped by its `if`).
std::vector<Job> FinishedRun() {
  std::vector<Job> run;
  run.push_back(RanJob(1, "prep", kT0, kT0 + 100, JobState::kSucceeded, 0));
  run.back().outputs = {{"dataset", "/data/out"}};
  run.push_back(Trial(2, 1, "0.1", kT0 + 120, kT0 + 400, JobState::kSucceeded));
  run.push_back(Trial(3, 2, "0.01", kT0 + 400, kT0 + 700, JobState::kFailed));
  Job evaluate;
  evaluate.id = JobId(4);
  evaluate.pipeline_run = JobId(1);
  evaluate.spec.name = evaluate.spec.stage = "evaluate";
  evaluate.spec.pipeline = "tune";
  evaluate.spec.depends_on = {{"train", model::DependencyCondition::kSucceeded}};
  evaluate.spec.run_if = "${{ stages.train.outputs.accuracy }} > 0.5";
  evaluate.dependencies = {JobId(2), JobId(3)};
  evaluate.created_at = kT0;
  evaluate.state = JobState::kSkipped;
  evaluate.finished_at = kT0 + 750;
  evaluate.status_message = "if is false";
  run.push_back(evaluate);
  return run;
}

std::int64_t SumOfPhases(const json& split) {
  std::int64_t sum = 0;
  for (const auto& [name, ms] : split.items()) sum += ms.get<std::int64_t>();
  return sum;
}

TEST(PipelineDetail, RollsUpStagesWithTheirTrialsAndOutputs) {
  const json run = PipelineDetail(FinishedRun(), kT0 + 5000, Disclosure::kFull);
  EXPECT_EQ(run["id"], 1);
  EXPECT_EQ(run["name"], "tune");
  // A sweep with one trial that succeeded succeeded; a skipped stage does not fail the run.
  EXPECT_EQ(run["state"], "succeeded");
  EXPECT_EQ(run["finished_at"], kT0 + 750);
  EXPECT_EQ(run["wall_ms"], 750);
  EXPECT_EQ(run["stages_total"], 3);
  EXPECT_EQ(run["stages_done"], 3);
  EXPECT_EQ(run["jobs"], (json{{"succeeded", 2}, {"failed", 1}, {"skipped", 1}}));
  const json& stages = run["stages"];
  ASSERT_EQ(stages.size(), 3u);
  EXPECT_EQ(stages[0]["name"], "prep");
  EXPECT_EQ(stages[0]["jobs"][0]["outputs"], (json{{"dataset", "/data/out"}}));
  EXPECT_TRUE(stages[0]["jobs"][0]["trial"].is_null());
  EXPECT_EQ(stages[1]["name"], "train");
  EXPECT_EQ(stages[1]["state"], "succeeded");
  EXPECT_EQ(stages[1]["depends_on"],
            (json::array({{{"stage", "prep"}, {"condition", "succeeded"}}})));
  ASSERT_EQ(stages[1]["jobs"].size(), 2u);
  EXPECT_EQ(stages[1]["jobs"][1]["trial"]["index"], 2);
  EXPECT_EQ(stages[1]["jobs"][1]["trial"]["params"], (json{{"lr", "0.01"}}));
  EXPECT_EQ(stages[1]["jobs"][1]["state"], "failed");
  EXPECT_EQ(stages[1]["started_at"], kT0 + 135);
  EXPECT_EQ(stages[1]["finished_at"], kT0 + 700);
  EXPECT_EQ(stages[1]["queue_wait_ms"], 20);
  EXPECT_EQ(stages[2]["state"], "skipped");
  EXPECT_EQ(stages[2]["if"], "${{ stages.train.outputs.accuracy }} > 0.5");
  EXPECT_EQ(run["goodput"]["jobs"], 4);
  EXPECT_EQ(run["goodput"]["succeeded"], 2);
}

TEST(PipelineDetail, SplitAddsUpToTheWallTime) {
  const json finished = PipelineDetail(FinishedRun(), kT0 + 5000, Disclosure::kFull);
  EXPECT_EQ(SumOfPhases(finished["split"]), finished["wall_ms"].get<std::int64_t>());

  std::vector<Job> unfinished = FinishedRun();
  unfinished[2].state = JobState::kRunning;
  unfinished[2].finished_at = 0;
  unfinished[2].attempts[0].finished_at = 0;
  unfinished[2].attempts[0].outcome.reset();
  unfinished[3].state = JobState::kPending;
  unfinished[3].finished_at = 0;
  const json running = PipelineDetail(unfinished, kT0 + 900, Disclosure::kFull);
  EXPECT_EQ(running["state"], "running");
  EXPECT_EQ(running["finished_at"], 0);
  EXPECT_EQ(running["wall_ms"], 900);
  EXPECT_EQ(running["stages_done"], 1);
  EXPECT_EQ(running["stages"][1]["state"], "running");
  EXPECT_EQ(running["stages"][2]["state"], "pending");
  EXPECT_EQ(SumOfPhases(running["split"]), 900);
}

TEST(PipelineDetail, NamesASweepsObjectiveAndItsBestTrialOnlyWithTheOutputs) {
  std::vector<Job> run = FinishedRun();
  for (Job* trial : {&run[1], &run[2]}) {
    trial->spec.trial.objective = "loss";
    trial->spec.trial.maximize = false;
  }
  run[1].outputs = {{"loss", "0.5"}};
  run[2].outputs = {{"loss", "0.1"}};  // lower, but the trial failed
  const json stages = PipelineDetail(run, kT0 + 5000, Disclosure::kFull)["stages"];
  EXPECT_TRUE(stages[0]["objective"].is_null());  // not a sweep
  EXPECT_EQ(stages[1]["objective"],
            (json{{"metric", "loss"}, {"goal", "minimize"}, {"best_trial", 1}}));
  const json redacted = PipelineDetail(run, kT0 + 5000, Disclosure::kRedacted)["stages"];
  EXPECT_EQ(redacted[1]["objective"],
            (json{{"metric", "loss"}, {"goal", "minimize"}, {"best_trial", nullptr}}));
  EXPECT_TRUE(redacted[1]["jobs"][0]["outputs"].is_null());
}

TEST(PipelineSummary, IsTheDetailWithoutStages) {
  const json summary = PipelineSummary(FinishedRun(), kT0 + 5000);
  json detail = PipelineDetail(FinishedRun(), kT0 + 5000, Disclosure::kFull);
  for (const char* key : {"stages", "split", "goodput"}) detail.erase(key);
  EXPECT_EQ(summary, detail);
}

TEST(JobDetail, APreemptedAttemptReadsPreempted) {
  Job job = RanJob(2, "train", kT0, kT0 + 2012, JobState::kRunning, 2);
  job.attempts[0].outcome = JobState::kReady;
  job.attempts[0].preempted_by = JobId(7);
  EXPECT_EQ(JobDetail(job, {}, kT0 + 3000, Disclosure::kFull)["attempts"][0]["outcome"],
            "preempted");
}

TEST(JobDetail, ListsEachAttemptsCauseAndLostGpuSecondsWithTheSplit) {
  Job job = RanJob(2, "train", kT0, kT0 + 2012, JobState::kSucceeded, 2);
  model::Attempt& failed = job.attempts[0];
  failed.outcome = JobState::kReady;
  failed.outcome_reason = "exit 3";
  failed.finished_at = kT0 + 1012;  // held 2 GPUs for 1000 ms
  model::Attempt retry = job.attempts[0];
  retry.number = 2;
  retry.ready_at = kT0 + 1100;
  retry.placed_at = kT0 + 1512;  // held 2 GPUs for 500 ms
  retry.running_at = kT0 + 1515;
  retry.finished_at = kT0 + 2012;
  retry.outcome = JobState::kSucceeded;
  retry.outcome_reason = "";
  job.attempts.push_back(retry);
  job.outputs = {{"accuracy", "0.93"}};

  const json detail = JobDetail(job, {}, kT0 + 3000, Disclosure::kFull);
  ASSERT_EQ(detail["attempts"].size(), 2u);
  EXPECT_EQ(detail["attempts"][0]["cause"], "exit 3");
  // An attempt the job came back from reads requeued, never its next state (ready).
  EXPECT_EQ(detail["attempts"][0]["outcome"], "requeued");
  EXPECT_EQ(detail["attempts"][1]["outcome"], "succeeded");
  EXPECT_DOUBLE_EQ(detail["attempts"][0]["gpu_seconds"].get<double>(), 2.0);
  EXPECT_DOUBLE_EQ(detail["attempts"][0]["lost_gpu_seconds"].get<double>(), 2.0);
  EXPECT_DOUBLE_EQ(detail["attempts"][1]["gpu_seconds"].get<double>(), 1.0);
  EXPECT_DOUBLE_EQ(detail["attempts"][1]["lost_gpu_seconds"].get<double>(), 0.0);
  EXPECT_EQ(detail["pipeline_run"], 1);
  EXPECT_EQ(detail["outputs"], (json{{"accuracy", "0.93"}}));
  EXPECT_EQ(detail["split"]["backoff_ms"], 88);
  EXPECT_EQ(SumOfPhases(detail["split"]), detail["metrics"]["total_ms"].get<std::int64_t>());

  job.pipeline_run = JobId();
  job.outputs.clear();
  const json plain = JobDetail(job, {}, kT0 + 3000, Disclosure::kFull);
  EXPECT_FALSE(plain.contains("pipeline_run"));
  EXPECT_EQ(plain["outputs"], json::object());
}

TEST(JobDetail, NamesTheAccountItsWorkersRunAsWhenSet) {
  Job job = RanJob(2, "train", kT0, kT0 + 2012, JobState::kRunning, 2);
  const json plain = JobDetail(job, {}, kT0 + 3000, Disclosure::kFull);
  EXPECT_FALSE(plain.contains("run_as"));
  EXPECT_FALSE(plain.contains("may_run_as_root"));
  job.run_as = "alice";
  job.may_run_as_root = true;
  const json detail = JobDetail(job, {}, kT0 + 3000, Disclosure::kRedacted);
  EXPECT_EQ(detail["run_as"], "alice");
  EXPECT_EQ(detail["may_run_as_root"], true);
}

// The values a worker's node reported with its exit are the job's outputs: shown in its
// attempts to those who may see its outputs, and to no one else.
TEST(JobDetail, ShowsReportedValuesOnlyWhereItShowsOutputs) {
  Job job = RanJob(2, "train", kT0, kT0 + 2012, JobState::kSucceeded);
  model::ExitStatus exit;
  exit.exit_code = 0;
  exit.output_values = {{"accuracy", "0.93"}};
  job.attempts[0].workers[0].exit = exit;
  const json full = JobDetail(job, {}, kT0 + 3000, Disclosure::kFull);
  EXPECT_EQ(full["attempts"][0]["workers"][0]["exit"]["output_values"],
            (json{{"accuracy", "0.93"}}));
  const json redacted = JobDetail(job, {}, kT0 + 3000, Disclosure::kRedacted);
  EXPECT_EQ(redacted["attempts"][0]["workers"][0]["exit"]["exit_code"], 0);
  EXPECT_FALSE(redacted["attempts"][0]["workers"][0]["exit"].contains("output_values"));
  EXPECT_EQ(redacted.dump().find("0.93"), std::string::npos);
}

TEST(GoodputReport, GroupsJobsAndTotalsThem) {
  std::vector<Job> jobs = FinishedRun();
  jobs[0].spec.team = "data";
  auto report = GoodputReport(jobs, "team", 0, kT0 + 5000);
  ASSERT_TRUE(report) << report.error().message;
  EXPECT_EQ((*report)["by"], "team");
  const json& groups = (*report)["groups"];
  ASSERT_EQ(groups.size(), 3u);
  EXPECT_EQ(groups[0]["name"], "");  // evaluate names no team
  EXPECT_EQ(groups[1]["name"], "data");
  EXPECT_EQ(groups[2]["name"], "vision");
  EXPECT_EQ(groups[2]["jobs"], 2);
  EXPECT_EQ(groups[2]["succeeded"], 1);
  // train.2 failed: its 288 ms on one GPU were lost to a failure, not a preemption.
  EXPECT_DOUBLE_EQ(groups[2]["retry_lost_gpu_hours"].get<double>(), 288.0 / 3'600'000.0);
  EXPECT_DOUBLE_EQ(groups[2]["preemption_lost_gpu_hours"].get<double>(), 0.0);
  EXPECT_DOUBLE_EQ(groups[2]["gpu_hours_per_result"].get<double>(),
                   groups[2]["gpu_hours"].get<double>());
  EXPECT_EQ((*report)["total"]["jobs"], 4);

  auto later = GoodputReport(jobs, "queue", kT0 + 1, kT0 + 5000);
  ASSERT_TRUE(later);
  EXPECT_TRUE((*later)["groups"].empty());
  EXPECT_EQ((*later)["total"]["jobs"], 0);

  auto bad = GoodputReport(jobs, "gpu", 0, kT0);
  ASSERT_FALSE(bad);
  EXPECT_EQ(bad.error().code, ErrorCode::kInvalidArgument);
  EXPECT_THAT(bad.error().message, ::testing::HasSubstr("queue, team or owner"));
}

// The summary's fields as JobSummary built them as a tree before GET /v1/jobs wrote them
// straight into its answer: the written bytes are still DumpJson's of that tree.
json SummaryTree(const Job& job, TimeMs now) {
  const model::JobMetrics metrics = model::ComputeMetrics(job, now);
  return json{
      {"id", job.id.value()},
      {"name", job.spec.name},
      {"owner", job.spec.owner},
      {"team", job.spec.team},
      {"queue", job.spec.queue},
      {"priority", job.spec.priority_class},
      {"state", model::JobStateName(job.state)},
      {"attempt", metrics.attempts},
      {"workers", job.spec.workers},
      {"gpus", job.spec.workers * job.spec.requirements.per_worker.gpus},
      {"created_at", job.created_at},
      {"finished_at", job.finished_at},
      {"message", job.status_message},
      {"hold",
       job.hold
           ? json{{"by", job.hold->by}, {"since", job.hold->since}, {"reason", job.hold->reason}}
           : json(nullptr)},
      {"metrics",
       {{"queue_wait_ms", metrics.queue_wait},
        {"startup_ms", metrics.startup},
        {"run_time_ms", metrics.run_time},
        {"total_ms", metrics.total},
        {"gpu_hours", metrics.gpu_hours()}}},
  };
}

TEST(JobSummary, WrittenBytesEqualDumpJsonOfTheTree) {
  Job ran = RanJob(7, "train", kT0 + 5, kT0 + 3'600'000, JobState::kSucceeded, 3);
  ran.spec.workers = 2;
  ran.spec.requirements.per_worker.gpus = 3;
  ran.spec.owner = "ana";
  ran.spec.queue = "team-a";
  ran.spec.priority_class = "high";
  ran.status_message = "exit 0 \"done\"\n\ttab caf\xc3\xa9 bad \xff";
  Job held = RanJob(8, "n\xc3\xa4me", kT0 + 5, 0, JobState::kReady);
  held.attempts.back().finished_at = 0;
  held.hold = model::JobHold{"b\"ob", kT0 + 7, "wait\x01 for data"};
  for (const Job& job : {ran, held}) {
    const TimeMs now = kT0 + 10'000;
    std::string text;
    codec::JsonWriter writer(text);
    WriteJobSummary(writer, SummaryRowOf(job, now));
    EXPECT_EQ(text, codec::DumpJson(SummaryTree(job, now)));
    // As a tree (invalid UTF-8 already replaced, as DumpJson replaces it).
    EXPECT_EQ(codec::DumpJson(JobSummary(job, now)), text);

    // A listed waiting job also shows its queue position.
    JobSummaryRow row = SummaryRowOf(job, now);
    row.position = control::QueuePosition{"team-a", 3, 12, {JobId(1), JobId(2)}};
    text.clear();
    codec::JsonWriter positioned(text);
    WriteJobSummary(positioned, row);
    json tree = SummaryTree(job, now);
    tree["position"] = PositionView(*row.position);
    EXPECT_EQ(text, codec::DumpJson(tree));
  }
}

}  // namespace
}  // namespace drover::api
