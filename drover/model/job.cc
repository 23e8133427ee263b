#include "drover/model/job.h"

#include <fmt/format.h>

#include <algorithm>
#include <csignal>
#include <cstring>

namespace drover::model {

std::string_view JobStateName(JobState state) { return kJobStateNames.Name(state); }

std::optional<JobState> ParseJobState(std::string_view name) { return kJobStateNames.Parse(name); }

bool IsTerminal(JobState state) {
  return state == JobState::kSucceeded || state == JobState::kFailed ||
         state == JobState::kCancelled || state == JobState::kTimedOut ||
         state == JobState::kSkipped;
}

bool IsAllowedTransition(JobState from, JobState to) {
  using S = JobState;
  if (IsTerminal(from)) return false;
  if (to == S::kCancelled) return true;
  switch (from) {
    case S::kPending:  // pending -> pending records creation
      return to == S::kPending || to == S::kWaiting || to == S::kReady || to == S::kSkipped;
    case S::kWaiting:
      return to == S::kReady;
    case S::kReady:
      return to == S::kAdmitted;
    case S::kAdmitted:
      return to == S::kPlaced || to == S::kReady;  // ready again if placement is undone
    case S::kPlaced:
      return to == S::kStarting || to == S::kReady;
    case S::kStarting:
    case S::kRunning:
      return (from == S::kStarting && to == S::kRunning) || to == S::kSucceeded ||
             to == S::kFailed || to == S::kTimedOut || to == S::kReady;
    default:
      return false;
  }
}

std::string_view WorkerStateName(WorkerState state) { return kWorkerStateNames.Name(state); }

std::optional<WorkerState> ParseWorkerState(std::string_view name) {
  return kWorkerStateNames.Parse(name);
}

bool IsExternal(const Attempt& attempt) { return !attempt.executor.empty(); }

std::string_view DisruptionName(Disruption disruption) { return kDisruptionNames.Name(disruption); }

std::optional<Disruption> ParseDisruption(std::string_view name) {
  return kDisruptionNames.Parse(name);
}

Disruption DisruptionOf(const ExitStatus& exit) {
  if (exit.timed_out) return Disruption::kTimeout;
  if (exit.cancelled) return Disruption::kUserCancel;
  if (exit.preempted) return Disruption::kPreemption;
  if (exit.node_lost) return Disruption::kNodeLost;
  if (exit.oom_killed) return Disruption::kOomKilled;
  return Disruption::kNone;
}

bool WasPreempted(const Attempt& attempt) {
  return attempt.preempted_by || attempt.disruption == Disruption::kNodeDrain ||
         (IsExternal(attempt) &&
          std::any_of(attempt.workers.begin(), attempt.workers.end(),
                      [](const Worker& worker) { return worker.exit && worker.exit->preempted; }));
}

bool WasRequeued(const Attempt& attempt) { return !attempt.requeued_by.empty(); }

std::string ExitStatus::Describe() const {
  if (cancelled) return "cancelled";
  if (preempted) return message.empty() ? "preempted" : fmt::format("preempted ({})", message);
  if (timed_out) return "timed out";
  if (node_lost) return message.empty() ? "node lost" : fmt::format("node lost ({})", message);
  if (oom_killed) return "OOM-killed (memory pressure)";
  if (signal != 0) {
    const char* abbrev = sigabbrev_np(signal);
    return abbrev ? fmt::format("killed by SIG{}", abbrev)
                  : fmt::format("killed by signal {}", signal);
  }
  if (!message.empty() && exit_code != 0) return fmt::format("exit {} ({})", exit_code, message);
  return fmt::format("exit {}", exit_code);
}

}  // namespace drover::model
