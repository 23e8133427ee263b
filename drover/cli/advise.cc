// `drover advise ID|NAME|--pipeline RUN` (commands.h): right-sizing advice from GET
// /v1/jobs/{id}/advice or GET /v1/pipelines/{run}/advice (docs/observability.md, "Advice").

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <iostream>

#include "drover/api/client.h"
#include "drover/cli/commands.h"
#include "drover/cli/text.h"
#include "drover/common/quantity.h"

namespace drover::cli {

using nlohmann::json;

namespace {

void PrintAdvice(const json& advice) {
  const std::string what =
      fmt::format("{} (job {})", advice.value("name", ""), advice.value("job_id", 0));
  const std::string no_advice = advice.value("no_advice", "");
  if (!no_advice.empty()) {
    std::cout << fmt::format("no advice for {}: {}\n", what, no_advice);
    return;
  }
  std::cout << fmt::format("advice for {}, from {} measured attempt(s) over {}, confidence {}:\n",
                           what, advice.value("history", 0),
                           FormatDuration(advice.value("span_ms", std::int64_t{0})),
                           advice.value("confidence", ""));
  const json recommendations = advice.value("recommendations", json::array());
  if (recommendations.empty()) {
    std::cout << "  its requests fit what it uses\n";
    return;
  }
  for (const json& r : recommendations) {
    std::cout << fmt::format("  {}: {} -> {} ({})\n", r.value("field", ""), r.value("current", ""),
                             r.value("target", ""), r.value("evidence", ""));
  }
  std::cout << "spec patch:\n" << advice.value("patch", "");
}

}  // namespace

int AdviseCommand(const ClientFlags& flags, const std::string& target,
                  const std::string& pipeline) {
  if (target.empty() == pipeline.empty()) {
    return ReportError(
        Error{ErrorCode::kInvalidArgument, "advise: give a job id or name, or --pipeline RUN", {}});
  }
  api::ApiClient client = ClientOf(flags);
  std::string path;
  if (!pipeline.empty()) {
    path = "/v1/pipelines/" + api::UrlEncode(pipeline) + "/advice";
  } else if (!target.empty() && std::all_of(target.begin(), target.end(), [](char c) {
               return std::isdigit(static_cast<unsigned char>(c)) != 0;
             })) {
    path = "/v1/jobs/" + target + "/advice";
  } else {
    // A name: the newest job of that name the token may view is the base.
    auto newest = client.Get("/v1/jobs?name=" + api::UrlEncode(target) + "&limit=1");
    if (!newest) return ReportError(newest.error());
    const json jobs = newest->json.value("jobs", json::array());
    if (jobs.empty()) {
      return ReportError(Error{ErrorCode::kNotFound, fmt::format("no job named '{}'", target), {}});
    }
    path = fmt::format("/v1/jobs/{}/advice", jobs[0].value("id", 0));
  }
  auto response = client.Get(path);
  if (!response) return ReportError(response.error());
  if (flags.output == "json") {
    std::cout << response->json.dump(2) << "\n";
    return 0;
  }
  for (const json& advice : response->json.value("advice", json::array())) PrintAdvice(advice);
  return 0;
}

}  // namespace drover::cli
