#include "drover/model/job_spec.h"

#include <algorithm>
#include <array>
#include <utility>

namespace drover::model {
namespace {

constexpr std::array<std::pair<FailureKind, std::string_view>, 4> kFailureKinds = {{
    {FailureKind::kExit, "exit"},
    {FailureKind::kNodeLost, "node_lost"},
    {FailureKind::kPreempted, "preempted"},
    {FailureKind::kTimeout, "timeout"},
}};

constexpr std::array<std::pair<DependencyCondition, std::string_view>, 4> kConditions = {{
    {DependencyCondition::kSucceeded, "succeeded"},
    {DependencyCondition::kFailed, "failed"},
    {DependencyCondition::kDone, "done"},
    {DependencyCondition::kSkipped, "skipped"},
}};

// The name of `value` in a (value, name) table that lists every enumerator.
template <typename Enum, std::size_t N>
std::string_view NameIn(const std::array<std::pair<Enum, std::string_view>, N>& table, Enum value) {
  for (const auto& [candidate, name] : table) {
    if (candidate == value) return name;
  }
  return "";
}

template <typename Enum, std::size_t N>
std::optional<Enum> ParseIn(const std::array<std::pair<Enum, std::string_view>, N>& table,
                            std::string_view name) {
  for (const auto& [value, candidate] : table) {
    if (candidate == name) return value;
  }
  return std::nullopt;
}

}  // namespace

std::string_view FailureKindName(FailureKind kind) { return NameIn(kFailureKinds, kind); }

std::optional<FailureKind> ParseFailureKind(std::string_view name) {
  return ParseIn(kFailureKinds, name);
}

const std::vector<FailureKind>& AllFailureKinds() {
  static const std::vector<FailureKind> kAll = [] {
    std::vector<FailureKind> all;
    for (const auto& [kind, name] : kFailureKinds) all.push_back(kind);
    return all;
  }();
  return kAll;
}

bool RetriesOn(const RetryPolicy& retry, FailureKind kind) {
  return std::find(retry.on.begin(), retry.on.end(), kind) != retry.on.end();
}

std::string_view DependencyConditionName(DependencyCondition condition) {
  return NameIn(kConditions, condition);
}

std::optional<DependencyCondition> ParseDependencyCondition(std::string_view name) {
  return ParseIn(kConditions, name);
}

std::optional<int> PriorityClassValue(std::string_view name) {
  if (name == "critical") return 1000;
  if (name == "high") return 100;
  if (name == "normal") return 0;
  if (name == "low") return -100;
  return std::nullopt;
}

const std::vector<std::string>& PriorityClassNames() {
  static const std::vector<std::string> kNames = {"critical", "high", "normal", "low"};
  return kNames;
}

}  // namespace drover::model
