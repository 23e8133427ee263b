#include "drover/model/job_spec.h"

#include <algorithm>

#include "drover/model/mig.h"

namespace drover::model {

std::int64_t MilliGpusPerWorker(const Requirements& requirements) {
  constexpr std::int64_t kMilliPerGpu = 1000;
  if (requirements.per_worker.gpus > 0) return requirements.per_worker.gpus * kMilliPerGpu;
  if (requirements.gpu_share_millis > 0) return requirements.gpu_share_millis;
  if (requirements.mig_profile.empty()) return 0;
  Result<MigProfile> profile = ParseMigProfile(requirements.mig_profile);
  const std::int64_t slices = profile ? profile->compute_slices : 1;
  return slices * kMilliPerGpu / kMigComputeSlices;
}

std::string_view FailureKindName(FailureKind kind) { return kFailureKindNames.Name(kind); }

std::optional<FailureKind> ParseFailureKind(std::string_view name) {
  return kFailureKindNames.Parse(name);
}

bool RetriesOn(const RetryPolicy& retry, FailureKind kind) {
  return std::find(retry.on.begin(), retry.on.end(), kind) != retry.on.end();
}

std::string_view DependencyConditionName(DependencyCondition condition) {
  return kDependencyConditionNames.Name(condition);
}

std::optional<DependencyCondition> ParseDependencyCondition(std::string_view name) {
  return kDependencyConditionNames.Parse(name);
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
