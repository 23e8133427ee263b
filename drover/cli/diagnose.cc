// `drover diagnose ID` and `drover diagnose [--since T] [--team T]` (commands.h): what a job's
// measured usage and timeline say, from the findings of GET /v1/jobs/{id}/usage, and the same
// across jobs from GET /v1/diagnosis (docs/observability.md, "Diagnosis").

#include <fmt/format.h>

#include <iostream>

#include "drover/api/client.h"
#include "drover/cli/commands.h"
#include "drover/cli/text.h"
#include "drover/common/clock.h"

namespace drover::cli {

using nlohmann::json;

std::string DescribeFindings(const json& findings, std::string_view indent) {
  std::string out;
  for (const json& finding : findings) {
    out += fmt::format("{}{}: {}\n{}  rule: {}\n", indent, finding.value("kind", ""),
                       finding.value("evidence", ""), indent, finding.value("threshold", ""));
  }
  return out;
}

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
  std::cout << DescribeFindings(findings, "  ");
  return 0;
}

int ClusterDiagnoseCommand(const ClientFlags& flags, const ClusterDiagnosisFlags& diagnosis) {
  std::string query;
  auto add = [&query](const std::string& name, const std::string& value) {
    query += (query.empty() ? "?" : "&") + name + "=" + api::UrlEncode(value);
  };
  if (!diagnosis.since.empty()) {
    Result<TimeMs> since = ParseSince(diagnosis.since, SystemClock().Now());
    if (!since) return ReportError(since.error());
    add("since", std::to_string(*since));
  }
  if (!diagnosis.team.empty()) add("team", diagnosis.team);
  if (diagnosis.limit != 0) add("limit", std::to_string(diagnosis.limit));
  api::ApiClient client = ClientOf(flags);
  auto response = client.Get("/v1/diagnosis" + query);
  if (!response) return ReportError(response.error());
  const json& body = response->json;
  if (flags.output == "json") {
    std::cout << body.dump(2) << "\n";
    return 0;
  }
  const json jobs = body.value("jobs", json::array());
  std::cout << fmt::format(
      "{} job(s) examined{}; {} with findings, by wasted GPU-hours:\n", body.value("examined", 0),
      body.value("more", false) ? " (the newest; more match: raise --limit)" : "", jobs.size());
  for (const json& job : jobs) {
    std::cout << fmt::format(
        "job {} {} ({}, {}) {}: {:.2f} GPU-hours wasted ({:.2f} idle, {:.2f} lost)\n",
        job.value("job_id", 0), job.value("name", ""), job.value("team", ""),
        job.value("owner", ""), job.value("state", ""), job.value("wasted_gpu_hours", 0.0),
        job.value("idle_gpu_hours", 0.0), job.value("lost_gpu_hours", 0.0));
    std::cout << DescribeFindings(job.value("findings", json::array()), "  ");
  }
  std::cout << "teams:\n";
  for (const json& team : body.value("teams", json::array())) {
    std::cout << fmt::format(
        "  {}: {:.2f} GPU-hours wasted ({:.2f} idle, {:.2f} lost to retries and preemptions); "
        "{} of {} job(s) with findings\n",
        team.value("team", ""), team.value("wasted_gpu_hours", 0.0),
        team.value("idle_gpu_hours", 0.0), team.value("lost_gpu_hours", 0.0),
        team.value("jobs_with_findings", 0), team.value("jobs", 0));
  }
  return 0;
}

}  // namespace drover::cli
