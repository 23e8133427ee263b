#include "drover/workflow/conditions.h"

#include <fmt/format.h>

#include <algorithm>

#include "drover/model/dependency.h"

namespace drover::workflow {

UpstreamState StateOf(model::JobState state) {
  switch (state) {
    case model::JobState::kSucceeded:
      return UpstreamState::kSucceeded;
    case model::JobState::kFailed:
    case model::JobState::kTimedOut:
    case model::JobState::kCancelled:
      return UpstreamState::kFailed;
    case model::JobState::kSkipped:
      return UpstreamState::kSkipped;
    default:
      return UpstreamState::kUnfinished;
  }
}

UpstreamState AggregateStage(std::span<const model::JobState> trial_states) {
  if (trial_states.empty()) return UpstreamState::kUnfinished;
  bool any_succeeded = false;
  bool all_skipped = true;
  for (model::JobState state : trial_states) {
    const UpstreamState s = StateOf(state);
    if (s == UpstreamState::kUnfinished) return UpstreamState::kUnfinished;
    any_succeeded = any_succeeded || s == UpstreamState::kSucceeded;
    all_skipped = all_skipped && s == UpstreamState::kSkipped;
  }
  if (any_succeeded) return UpstreamState::kSucceeded;
  return all_skipped ? UpstreamState::kSkipped : UpstreamState::kFailed;
}

bool Holds(model::DependencyCondition condition, UpstreamState state) {
  if (state == UpstreamState::kUnfinished) return false;
  switch (condition) {
    case model::DependencyCondition::kSucceeded:
      return state == UpstreamState::kSucceeded;
    case model::DependencyCondition::kFailed:
      return state == UpstreamState::kFailed;
    case model::DependencyCondition::kDone:
      return true;
    case model::DependencyCondition::kSkipped:
      return state == UpstreamState::kSkipped;
  }
  return false;
}

bool CannotHold(model::DependencyCondition condition, UpstreamState state) {
  return state != UpstreamState::kUnfinished && !Holds(condition, state);
}

std::string_view AwaitedAs(model::DependencyCondition condition) {
  switch (condition) {
    case model::DependencyCondition::kSucceeded:
      return "succeed";
    case model::DependencyCondition::kFailed:
      return "fail";
    case model::DependencyCondition::kDone:
      return "finish";
    case model::DependencyCondition::kSkipped:
      return "be skipped";
  }
  return "finish";
}

DependencyVerdict Judge(std::span<const JudgedDependency> dependencies) {
  std::vector<std::string> unfinished;
  for (const JudgedDependency& d : dependencies) {
    if (CannotHold(d.dependency.condition, d.upstream)) {
      const std::string_view verb = d.upstream == UpstreamState::kSkipped  ? "was skipped"
                                    : d.upstream == UpstreamState::kFailed ? "failed"
                                                                           : "succeeded";
      return {DependencyVerdict::Kind::kSkip,
              fmt::format("dependency {} {}; this job needed it to {}",
                          model::DescribeDependency(d.dependency.name), verb,
                          AwaitedAs(d.dependency.condition))};
    }
    if (d.upstream == UpstreamState::kUnfinished) {
      unfinished.push_back(fmt::format("{} to {}", model::DescribeDependency(d.dependency.name),
                                       AwaitedAs(d.dependency.condition)));
    }
  }
  if (unfinished.empty()) return {DependencyVerdict::Kind::kRelease, ""};
  return {DependencyVerdict::Kind::kWait,
          fmt::format("waiting for {}", fmt::join(unfinished, ", "))};
}

}  // namespace drover::workflow
