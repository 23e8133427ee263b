#include "drover/model/executor.h"

#include <fmt/format.h>

namespace drover::model {

std::string_view ExecutorKindName(ExecutorKind kind) { return kExecutorKindNames.Name(kind); }

std::optional<ExecutorKind> ParseExecutorKind(std::string_view name) {
  return kExecutorKindNames.Parse(name);
}

std::string ExternalName(JobId job, int attempt) {
  return fmt::format("drover-{}-{}", job.value(), attempt);
}

}  // namespace drover::model
