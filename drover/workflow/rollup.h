#pragma once

// The status of a pipeline run (the jobs of one Job::pipeline_run) rolled up from its stages
// (docs/workflows.md, "Pipeline status").

#include <string>
#include <string_view>
#include <vector>

#include "drover/model/job.h"
#include "drover/workflow/conditions.h"

namespace drover::workflow {

enum class RunState {
  kPending,    // no job has left pending or waiting
  kRunning,    // some job is past waiting and some job is unfinished
  kSucceeded,  // every stage succeeded or was skipped
  kFailed,     // finished, and some stage failed (failed, timed out or cancelled)
};
// "pending", "running", "succeeded", "failed".
std::string_view RunStateName(RunState state);

struct StageStatus {
  std::string name;  // the stage, or the job name outside pipelines
  UpstreamState state = UpstreamState::kUnfinished;
  std::vector<const model::Job*> jobs;  // the stage's job, or a sweep's trials in order
};

struct RunStatus {
  RunState state = RunState::kPending;
  std::vector<StageStatus> stages;  // in the order of their first job
  TimeMs created_at = 0;            // the first job's
  TimeMs finished_at = 0;           // the last job's end once every job finished; else 0
};

// Rolls up `run` (jobs in id order, all of one pipeline run). Each stage is judged as a
// dependency sees it (AggregateStage), so trials cancelled by early stopping do not fail it.
RunStatus RollUp(const std::vector<const model::Job*>& run);

}  // namespace drover::workflow
