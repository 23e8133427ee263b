#include "drover/model/dependency.h"

#include <fmt/format.h>

namespace drover::model {

std::optional<JobId> DependencyJobId(std::string_view name) {
  if (!name.starts_with(kJobIdPrefix)) return std::nullopt;
  const std::string_view digits = name.substr(kJobIdPrefix.size());
  if (digits.empty() || digits.size() > 18 || digits.front() == '0') return std::nullopt;
  std::int64_t id = 0;
  for (char c : digits) {
    if (c < '0' || c > '9') return std::nullopt;
    id = id * 10 + (c - '0');
  }
  return JobId(id);
}

std::string DescribeDependency(std::string_view name) {
  if (std::optional<JobId> id = DependencyJobId(name)) return fmt::format("job {}", id->value());
  return fmt::format("'{}'", name);
}

}  // namespace drover::model
