#pragma once

// Sweep trials (docs/workflows.md): their job names, the best trial, early stopping.

#include <optional>
#include <span>
#include <string>
#include <string_view>

#include "drover/model/job.h"
#include "drover/model/job_spec.h"

namespace drover::workflow {

// "STAGE.N": the job name of trial `index` (1-based) of a sweep stage.
std::string TrialJobName(std::string_view stage, int index);

struct TrialResult {
  int index = 0;  // TrialSpec::index
  model::JobState state = model::JobState::kPending;
  // The trial's published objective output (its value text); nullopt when not published.
  std::optional<std::string> objective;
};

// The index of the best trial: among those that succeeded with an objective that reads as a
// number (ParseNumber), the highest (maximize) or lowest value; ties go to the lowest index.
// nullopt when no trial qualifies.
std::optional<int> BestTrial(std::span<const TrialResult> trials, bool maximize);

// BestTrial of a sweep's trials (jobs of one sweep stage, at least one): each one's state and its
// published output named by the sweep's objective (TrialSpec::objective), ranked by its goal.
std::optional<int> BestTrialOf(std::span<const model::Job* const> trials);

// True when a trial of `trial`'s sweep that succeeded with objective value `objective` ends the
// sweep early: stop_at is set and the value reaches it (>= when maximizing, <= otherwise). The
// controller then cancels the sweep's unfinished trials.
bool ReachesStopAt(const model::TrialSpec& trial, std::string_view objective);

}  // namespace drover::workflow
