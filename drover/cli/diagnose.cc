// `drover diagnose ID` (commands.h): what a job's measured usage says, from the findings of
// GET /v1/jobs/{id}/usage (docs/observability.md, "Diagnosis").

#include <fmt/format.h>

#include <iostream>

#include "drover/api/client.h"
#include "drover/cli/commands.h"
#include "drover/cli/text.h"

namespace drover::cli {

using nlohmann::json;

int DiagnoseCommand(const ClientFlags& flags, const std::string& id) {
  api::ApiClient client = ClientOf(flags);
  auto response = client.Get(fmt::format("/v1/jobs/{}/usage", api::UrlEncode(id)));
  if (!response) return ReportError(response.error());
  const json& usage = response->json;
  if (flags.output == "json") {
    std::cout << json{{"job_id", usage.value("job_id", json(nullptr))},
                      {"attempt", usage.value("attempt", json(nullptr))},
                      {"findings", usage.value("findings", json::array())}}
                     .dump(2)
              << "\n";
    return 0;
  }
  const std::int64_t attempt = usage.value("attempt", std::int64_t{0});
  if (attempt == 0) {
    std::cout << fmt::format("job {}: no usage samples yet\n", id);
    return 0;
  }
  const json findings = usage.value("findings", json::array());
  if (findings.empty()) {
    std::cout << fmt::format("job {} attempt {}: nothing to report\n", id, attempt);
    return 0;
  }
  std::cout << fmt::format("job {} attempt {}:\n", id, attempt);
  for (const json& finding : findings) {
    std::cout << fmt::format("  {}: {}\n    rule: {}\n", finding.value("kind", ""),
                             finding.value("evidence", ""), finding.value("threshold", ""));
  }
  return 0;
}

}  // namespace drover::cli
