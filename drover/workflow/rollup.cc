#include "drover/workflow/rollup.h"

#include <algorithm>

namespace drover::workflow {

namespace {

using model::JobState;

bool Started(JobState state) { return state != JobState::kPending && state != JobState::kWaiting; }

// What a stage of `jobs`, judged `upstream` as a dependency, reads.
StageState StageStateOf(UpstreamState upstream, const std::vector<const model::Job*>& jobs) {
  auto any = [&](auto predicate) {
    return std::any_of(jobs.begin(), jobs.end(),
                       [&](const model::Job* job) { return predicate(job->state); });
  };
  switch (upstream) {
    case UpstreamState::kUnfinished:
      if (any(Started)) return StageState::kRunning;
      if (any([](JobState s) { return s == JobState::kWaiting; })) return StageState::kWaiting;
      return StageState::kPending;
    case UpstreamState::kSucceeded:
      return StageState::kSucceeded;
    case UpstreamState::kSkipped:
      return StageState::kSkipped;
    case UpstreamState::kFailed:
      // Failed as a dependency sees it: no job succeeded, so the stage failed unless every job
      // that did not skip was cancelled.
      return any([](JobState s) { return s == JobState::kFailed || s == JobState::kTimedOut; })
                 ? StageState::kFailed
                 : StageState::kCancelled;
  }
  return StageState::kPending;
}

}  // namespace

bool IsBeingCancelled(const model::Job& job) {
  const model::Attempt* attempt = job.current_attempt();
  return !model::IsTerminal(job.state) && attempt != nullptr &&
         attempt->outcome == JobState::kCancelled;
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
      status.stages.push_back(StageStatus{name, UpstreamState::kUnfinished, {}, {}});
      stage = status.stages.end() - 1;
    }
    stage->jobs.push_back(job);
  }
  bool started = false;
  bool unfinished = false;
  bool failed = false;
  bool cancelled = false;
  TimeMs last_end = 0;
  for (StageStatus& stage : status.stages) {
    std::vector<JobState> states;
    for (const model::Job* job : stage.jobs) {
      states.push_back(job->state);
      started |= Started(job->state);
      last_end = std::max(last_end, job->finished_at);
    }
    stage.upstream = AggregateStage(states);
    stage.state = StageStateOf(stage.upstream, stage.jobs);
    unfinished |= stage.upstream == UpstreamState::kUnfinished;
    failed |= stage.state == StageState::kFailed;
    cancelled |= stage.state == StageState::kCancelled;
  }
  if (unfinished) {
    const bool stopping = std::all_of(run.begin(), run.end(), [](const model::Job* job) {
      return model::IsTerminal(job->state) || IsBeingCancelled(*job);
    });
    status.state = stopping  ? RunState::kCancelling
                   : started ? RunState::kRunning
                             : RunState::kPending;
  } else {
    status.state = failed      ? RunState::kFailed
                   : cancelled ? RunState::kCancelled
                               : RunState::kSucceeded;
    status.finished_at = last_end;
  }
  return status;
}

}  // namespace drover::workflow
