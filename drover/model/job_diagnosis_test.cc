#include "drover/model/job_diagnosis.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace drover::model {
namespace {

using ::testing::HasSubstr;

constexpr DurationMs kMinute = kMillisPerMinute;
// Jobs are created at kT0 (a time of 0 means "not reached").
constexpr TimeMs kT0 = kMillisPerDay;

// An attempt on node "a" holding `gpus` GPUs from `placed` to `finished` with `outcome`.
Attempt GpuAttempt(int number, int gpus, TimeMs placed, TimeMs finished, JobState outcome) {
  Attempt attempt;
  attempt.number = number;
  attempt.ready_at = kT0 + placed;
  attempt.dequeued_at = kT0 + placed;
  attempt.admitted_at = kT0 + placed;
  attempt.placed_at = kT0 + placed;
  attempt.running_at = kT0 + placed;
  attempt.finished_at = kT0 + finished;
  attempt.outcome = outcome;
  Worker worker;
  worker.node = NodeId("a");
  for (int i = 0; i < gpus; ++i) worker.gpus.push_back(i);
  attempt.workers = {worker};
  return attempt;
}

// A 1-GPU job whose first attempt failed after `lost` and whose second ran 100 minutes.
Job RetriedJob(DurationMs lost) {
  Job job;
  job.id = JobId(7);
  job.spec.workers = 1;
  job.spec.requirements.per_worker.gpus = 1;
  job.created_at = kT0;
  job.released_at = kT0;
  job.attempts = {GpuAttempt(1, 1, 0, lost, JobState::kReady),
                  GpuAttempt(2, 1, lost, lost + 100 * kMinute, JobState::kSucceeded)};
  job.finished_at = kT0 + lost + 100 * kMinute;
  return job;
}

TEST(DiagnoseRecovery, ReportsLostGpuTimeOverTheShareAndNotAtIt) {
  // 12 of 112 minutes lost (10.7%): over 10%.
  std::optional<Finding> over = DiagnoseRecovery(RetriedJob(12 * kMinute), 0);
  ASSERT_TRUE(over.has_value());
  EXPECT_EQ(over->kind, FindingKind::kRecoveryOverhead);
  EXPECT_THAT(over->evidence, HasSubstr("0.20 GPU-hours of 1.87 GPU-hours lost (11%)"));
  EXPECT_THAT(over->evidence, HasSubstr("1 failed"));
  EXPECT_THAT(over->threshold, HasSubstr("lost > 10%"));
  // 11 of 111 minutes (9.9%): not over.
  EXPECT_FALSE(DiagnoseRecovery(RetriedJob(11 * kMinute), 0).has_value());
}

TEST(DiagnoseRecovery, IgnoresLossesBelowTheMinimumGpuTime) {
  DiagnosisThresholds thresholds;
  thresholds.recovery_share = 0;
  EXPECT_TRUE(DiagnoseRecovery(RetriedJob(6 * kMinute), 0, thresholds).has_value());
  EXPECT_FALSE(DiagnoseRecovery(RetriedJob(6 * kMinute - 1), 0, thresholds).has_value());
}

TEST(DiagnoseRecovery, CountsPreemptionsApart) {
  Job job = RetriedJob(30 * kMinute);
  job.attempts[0].preempted_by = JobId(9);
  std::optional<Finding> finding = DiagnoseRecovery(job, 0);
  ASSERT_TRUE(finding.has_value());
  EXPECT_THAT(finding->evidence, HasSubstr("0.00 GPU-hours to 0 failed"));
  EXPECT_THAT(finding->evidence, HasSubstr("0.50 GPU-hours to 1 preemption(s)"));
}

// A job created at 0 that waited `deps` for its upstreams and `queue` in its queue, then ran
// `run`.
Job WaitedJob(DurationMs deps, DurationMs queue, DurationMs run) {
  Job job;
  job.id = JobId(3);
  job.dependencies = {JobId(2)};
  job.created_at = kT0;
  job.released_at = kT0 + deps;
  Attempt attempt = GpuAttempt(1, 1, deps + queue, deps + queue + run, JobState::kSucceeded);
  attempt.ready_at = kT0 + deps;
  job.attempts = {attempt};
  job.finished_at = kT0 + deps + queue + run;
  return job;
}

TEST(DiagnoseWaiting, NamesTheLargestPhaseWhenMostOfTheTimeWasWaiting) {
  std::optional<Finding> finding =
      DiagnoseWaiting(WaitedJob(5 * kMinute, 30 * kMinute, 34 * kMinute), 0);
  ASSERT_TRUE(finding.has_value());
  EXPECT_EQ(finding->kind, FindingKind::kWaitingBeforeWork);
  EXPECT_THAT(finding->evidence, HasSubstr("mostly waiting for policy (queue and admission): "
                                           "policy (queue and admission) 30m, dependencies 5m"));
  // 35 of 70 minutes is not more than half.
  EXPECT_FALSE(DiagnoseWaiting(WaitedJob(5 * kMinute, 30 * kMinute, 35 * kMinute), 0));
}

TEST(DiagnoseWaiting, NeedsTheMinimumWait) {
  EXPECT_TRUE(DiagnoseWaiting(WaitedJob(10 * kMinute, 0, kMinute), 0).has_value());
  EXPECT_FALSE(DiagnoseWaiting(WaitedJob(10 * kMinute - 1, 0, kMinute), 0).has_value());
}

TEST(DiagnoseWaiting, CountsTheApplicationStartUntilUsefulWork) {
  Job job = WaitedJob(0, 0, 60 * kMinute);
  job.attempts[0].useful_work_at = kT0 + 40 * kMinute;
  std::optional<Finding> finding = DiagnoseWaiting(job, 0);
  ASSERT_TRUE(finding.has_value());
  EXPECT_THAT(finding->evidence, HasSubstr("mostly waiting for application start"));
}

ShapeWait FourGpuWorkers(int free_gpus) {
  ShapeWait wait;
  wait.workers = 2;
  wait.gpus_per_worker = 4;
  wait.fitting_workers = 1;
  wait.free_gpus = free_gpus;
  wait.largest_free_gpus = 4;
  wait.largest_free_node = "n1";
  return wait;
}

TEST(DiagnoseShapeWait, ReportsFreeGpusThatDoNotFitTheShape) {
  std::optional<Finding> finding = DiagnoseShapeWait(FourGpuWorkers(8));
  ASSERT_TRUE(finding.has_value());
  EXPECT_EQ(finding->kind, FindingKind::kWaitingForShape);
  EXPECT_THAT(finding->evidence, HasSubstr("8 matching GPUs are free in total, at most 4 on one "
                                           "node (n1), so only 1 worker(s) fit"));
  // One GPU short of the request in total: waiting for capacity, not shape.
  EXPECT_FALSE(DiagnoseShapeWait(FourGpuWorkers(7)).has_value());
  // Every worker fits: not waiting for placement at all.
  ShapeWait fits = FourGpuWorkers(8);
  fits.fitting_workers = 2;
  EXPECT_FALSE(DiagnoseShapeWait(fits).has_value());
}

TEST(MilliGpusPerWorker, CountsWholeGpusSharesAndMigSlices) {
  Requirements whole;
  whole.per_worker.gpus = 2;
  EXPECT_EQ(MilliGpusPerWorker(whole), 2000);
  Requirements share;
  share.gpu_share_millis = 250;
  EXPECT_EQ(MilliGpusPerWorker(share), 250);
  Requirements mig;
  mig.mig_profile = "3g.40gb";
  EXPECT_EQ(MilliGpusPerWorker(mig), 428);
  EXPECT_EQ(MilliGpusPerWorker(Requirements{}), 0);
}

TEST(DiagnoseJob, CountsIdleGpuTimeOfAGpuFindingAndRanksByWaste) {
  Job idle = WaitedJob(0, 0, 60 * kMinute);
  idle.spec.workers = 1;
  idle.spec.requirements.per_worker.gpus = 2;
  AttemptUsage usage;
  usage.job = idle.id;
  usage.attempt = 1;
  usage.summary.first_at = 0;
  usage.summary.last_at = 60 * kMinute;
  usage.summary.gpu_util.Add(0);
  JobDiagnosis idle_diagnosis = DiagnoseJob(idle, &usage, {}, std::nullopt, 0);
  ASSERT_EQ(idle_diagnosis.findings.size(), 1u);
  EXPECT_EQ(idle_diagnosis.findings[0].kind, FindingKind::kAllocatedIdle);
  EXPECT_EQ(idle_diagnosis.idle_gpu_ms, 2 * 60 * kMinute);
  EXPECT_EQ(idle_diagnosis.lost_gpu_ms, 0);

  // A busy GPU: no GPU finding, so no idle time counted.
  usage.summary.gpu_util = {};
  usage.summary.gpu_util.Add(80);
  usage.summary.gpu_util_p50 = usage.summary.gpu_util_p95 = 80;
  EXPECT_EQ(DiagnoseJob(idle, &usage, {}, std::nullopt, 0).idle_gpu_ms, 0);

  JobDiagnosis retried = DiagnoseJob(RetriedJob(30 * kMinute), nullptr, {}, std::nullopt, 0);
  EXPECT_EQ(retried.lost_gpu_ms, 30 * kMinute);
  std::vector<JobDiagnosis> ranked = {retried, idle_diagnosis};
  RankByWaste(ranked);
  EXPECT_EQ(ranked[0].job, idle.id);
  EXPECT_EQ(ranked[1].job, JobId(7));
}

}  // namespace
}  // namespace drover::model
