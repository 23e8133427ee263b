#include "drover/model/job_spec.h"

namespace drover::model {

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
