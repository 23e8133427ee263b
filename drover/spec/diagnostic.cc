#include "drover/spec/diagnostic.h"

#include <fmt/format.h>

namespace drover::spec {

std::string Diagnostic::ToString() const {
  if (field.empty()) return fmt::format("{}:{}:{}: error: {}", file, line, column, message);
  return fmt::format("{}:{}:{}: error: {}: {}", file, line, column, field, message);
}

tl::unexpected<Error> DiagnosticsError(const std::vector<Diagnostic>& diagnostics,
                                       const std::string& file_name) {
  std::vector<std::string> details;
  details.reserve(diagnostics.size());
  for (const Diagnostic& d : diagnostics) details.push_back(d.ToString());
  const std::size_t n = details.size();
  return MakeError(ErrorCode::kInvalidArgument,
                   fmt::format("{} error{} in {}", n, n == 1 ? "" : "s", file_name),
                   std::move(details));
}

}  // namespace drover::spec
