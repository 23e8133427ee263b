#include "drover/model/executor.h"

#include <fmt/format.h>

namespace drover::model {

std::string_view ExecutorKindName(ExecutorKind kind) {
  switch (kind) {
    case ExecutorKind::kLocal:
      return "local";
    case ExecutorKind::kSlurm:
      return "slurm";
    case ExecutorKind::kKubernetes:
      return "kubernetes";
  }
  return "local";
}

std::optional<ExecutorKind> ParseExecutorKind(std::string_view name) {
  for (ExecutorKind kind :
       {ExecutorKind::kLocal, ExecutorKind::kSlurm, ExecutorKind::kKubernetes}) {
    if (ExecutorKindName(kind) == name) return kind;
  }
  return std::nullopt;
}

std::string ExternalName(JobId job, int attempt) {
  return fmt::format("drover-{}-{}", job.value(), attempt);
}

}  // namespace drover::model
