#include "drover/workflow/rollup.h"

#include <algorithm>

namespace drover::workflow {

std::string_view RunStateName(RunState state) {
  switch (state) {
    case RunState::kPending:
      return "pending";
    case RunState::kRunning:
      return "running";
    case RunState::kSucceeded:
      return "succeeded";
    case RunState::kFailed:
      return "failed";
  }
  return "";
}

RunStatus RollUp(const std::vector<const model::Job*>& run) {
  RunStatus status;
  if (run.empty()) return status;
  status.created_at = run.front()->created_at;
  for (const model::Job* job : run) {
    const std::string& name = job->spec.stage.empty() ? job->spec.name : job->spec.stage;
    auto stage = std::find_if(status.stages.begin(), status.stages.end(),
                              [&](const StageStatus& s) { return s.name == name; });
    if (stage == status.stages.end()) {
      status.stages.push_back(StageStatus{name, UpstreamState::kUnfinished, {}});
      stage = status.stages.end() - 1;
    }
    stage->jobs.push_back(job);
  }
  bool started = false;
  bool unfinished = false;
  bool failed = false;
  TimeMs last_end = 0;
  for (StageStatus& stage : status.stages) {
    std::vector<model::JobState> states;
    for (const model::Job* job : stage.jobs) {
      states.push_back(job->state);
      started |= job->state != model::JobState::kPending && job->state != model::JobState::kWaiting;
      last_end = std::max(last_end, job->finished_at);
    }
    stage.state = AggregateStage(states);
    unfinished |= stage.state == UpstreamState::kUnfinished;
    failed |= stage.state == UpstreamState::kFailed;
  }
  if (unfinished) {
    status.state = started ? RunState::kRunning : RunState::kPending;
  } else {
    status.state = failed ? RunState::kFailed : RunState::kSucceeded;
    status.finished_at = last_end;
  }
  return status;
}

}  // namespace drover::workflow
