#include "drover/workflow/trials.h"

#include <fmt/format.h>

#include <vector>

#include "drover/workflow/expression.h"

namespace drover::workflow {

std::string TrialJobName(std::string_view stage, int index) {
  return fmt::format("{}.{}", stage, index);
}

std::optional<int> BestTrial(std::span<const TrialResult> trials, bool maximize) {
  std::optional<int> best;
  double best_value = 0;
  for (const TrialResult& trial : trials) {
    if (trial.state != model::JobState::kSucceeded || !trial.objective) continue;
    const std::optional<double> value = ParseNumber(*trial.objective);
    if (!value) continue;
    const bool better = !best || (maximize ? *value > best_value : *value < best_value) ||
                        (*value == best_value && trial.index < *best);
    if (better) {
      best = trial.index;
      best_value = *value;
    }
  }
  return best;
}

std::optional<int> BestTrialOf(std::span<const model::Job* const> trials) {
  std::vector<TrialResult> results;
  results.reserve(trials.size());
  for (const model::Job* trial : trials) {
    const auto objective = trial->outputs.find(trial->spec.trial.objective);
    results.push_back({trial->spec.trial.index, trial->state,
                       objective == trial->outputs.end()
                           ? std::nullopt
                           : std::optional<std::string>(objective->second)});
  }
  return BestTrial(results, trials.front()->spec.trial.maximize);
}

bool ReachesStopAt(const model::TrialSpec& trial, std::string_view objective) {
  if (!trial.stop_at) return false;
  const std::optional<double> value = ParseNumber(objective);
  if (!value) return false;
  return trial.maximize ? *value >= *trial.stop_at : *value <= *trial.stop_at;
}

}  // namespace drover::workflow
