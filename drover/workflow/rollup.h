#pragma once

// The status of a pipeline run (the jobs of one Job::pipeline_run) rolled up from its stages
// (docs/workflows.md, "Pipeline status"). Pure.

#include <array>
#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

#include "drover/model/job.h"
#include "drover/model/names.h"
#include "drover/workflow/conditions.h"

namespace drover::workflow {

// What a stage reads. A finished stage is judged as a dependency sees it (AggregateStage), except
// that a stage whose jobs were cancelled (none succeeded, failed or timed out) reads kCancelled
// where a dependency sees it failed.
enum class StageState {
  kPending,  // no job of it left pending or waiting, and none waits for inputs
  kWaiting,  // a job of it waits for its inputs, and none started
  kRunning,  // a job of it left pending and waiting, and some job of it is unfinished
  kSucceeded,
  kFailed,  // some job failed or timed out, and none succeeded
  kCancelled,
  kSkipped,
};
inline constexpr model::NameTable kStageStateNames{std::array{
    model::NameEntry{StageState::kPending, "pending"},
    model::NameEntry{StageState::kWaiting, "waiting"},
    model::NameEntry{StageState::kRunning, "running"},
    model::NameEntry{StageState::kSucceeded, "succeeded"},
    model::NameEntry{StageState::kFailed, "failed"},
    model::NameEntry{StageState::kCancelled, "cancelled"},
    model::NameEntry{StageState::kSkipped, "skipped"},
}};
static_assert(kStageStateNames.size() == static_cast<std::size_t>(StageState::kSkipped) + 1);

enum class RunState {
  kPending,     // no job has left pending or waiting
  kRunning,     // some job is past waiting and some job is unfinished
  kCancelling,  // unfinished, and every unfinished job is being stopped by a cancel
  kSucceeded,   // every stage succeeded or was skipped
  kFailed,      // finished, and some stage failed
  kCancelled,   // finished, no stage failed, and some stage was cancelled
};
inline constexpr model::NameTable kRunStateNames{std::array{
    model::NameEntry{RunState::kPending, "pending"},
    model::NameEntry{RunState::kRunning, "running"},
    model::NameEntry{RunState::kCancelling, "cancelling"},
    model::NameEntry{RunState::kSucceeded, "succeeded"},
    model::NameEntry{RunState::kFailed, "failed"},
    model::NameEntry{RunState::kCancelled, "cancelled"},
}};
static_assert(kRunStateNames.size() == static_cast<std::size_t>(RunState::kCancelled) + 1);

// True once a run in `state` has finished: succeeded, failed or cancelled.
constexpr bool IsFinished(RunState state) {
  return state == RunState::kSucceeded || state == RunState::kFailed ||
         state == RunState::kCancelled;
}

struct StageStatus {
  std::string name;  // the stage, or the job name outside pipelines
  // As a dependency sees it (a cancelled stage is kFailed there); kUnfinished until it finished.
  UpstreamState upstream = UpstreamState::kUnfinished;
  StageState state = StageState::kPending;  // what it reads
  std::vector<const model::Job*> jobs;      // the stage's job, or a sweep's trials in order
};

struct RunStatus {
  RunState state = RunState::kPending;
  std::vector<StageStatus> stages;  // in the order of their first job
  TimeMs created_at = 0;            // the first job's
  TimeMs finished_at = 0;           // the last job's end once every job finished; else 0
};

// Rolls up `run` (jobs in id order, all of one pipeline run). Each stage is judged as a
// dependency sees it (AggregateStage), so trials cancelled by early stopping do not fail it. A
// finished run reads failed when a stage failed, else cancelled when a stage was cancelled (by
// a cancel of the run or of one of its jobs), else succeeded: a cancel never hides a failure.
RunStatus RollUp(const std::vector<const model::Job*>& run);

// True while `job` is unfinished and stopping because it was cancelled (its current attempt's
// outcome is cancelled, its workers not all gone).
bool IsBeingCancelled(const model::Job& job);

}  // namespace drover::workflow
