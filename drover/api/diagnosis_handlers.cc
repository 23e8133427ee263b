#include "drover/api/diagnosis_handlers.h"

#include <fmt/format.h>

#include <algorithm>
#include <map>
#include <string>
#include <vector>

#include "drover/api/views.h"
#include "drover/model/access.h"

namespace drover::api {
namespace {

using nlohmann::json;

double Hours(std::int64_t gpu_ms) { return static_cast<double>(gpu_ms) / kMillisPerHour; }

// What GET /v1/diagnosis adds up per team.
struct TeamWaste {
  int jobs = 0;
  int jobs_with_findings = 0;
  std::int64_t idle_gpu_ms = 0;
  std::int64_t lost_gpu_ms = 0;
};

}  // namespace

std::optional<model::ShapeWait> ShapeWaitOf(const Service& service, const model::Job& job) {
  const model::Requirements& asked = job.spec.requirements;
  if (job.state != model::JobState::kReady || asked.per_worker.gpus <= 0) return std::nullopt;
  Result<control::Explanation> explanation = service.Explain(job.id);
  if (!explanation || !explanation->placement) return std::nullopt;
  const sched::PendingReason& reason = *explanation->placement;
  if (reason.code != sched::PendingReason::Code::kInsufficientFree) return std::nullopt;
  model::ShapeWait wait;
  wait.workers = reason.workers;
  wait.gpus_per_worker = static_cast<int>(asked.per_worker.gpus);
  wait.same_node = reason.same_node;
  wait.fitting_workers = reason.fitting_workers;
  wait.free_gpus = reason.free_gpus;
  wait.largest_free_gpus = reason.largest_free_gpus;
  if (reason.largest_free_node) wait.largest_free_node = reason.largest_free_node->value();
  return wait;
}

model::JobDiagnosis DiagnoseJob(const Service& service, const model::Job& job,
                                const model::AttemptUsage* usage,
                                std::span<const model::UsageBucket> buckets) {
  return model::DiagnoseJob(job, usage, buckets, ShapeWaitOf(service, job), service.Now(),
                            service.DiagnosisThresholds());
}

Result<Response> ClusterDiagnosis(Service& service, const Request& request) {
  DROVER_ASSIGN_OR_RETURN(std::int64_t since, IntQuery(request, "since", 0));
  if (since < 0) {
    return InvalidArgument(
        fmt::format("query parameter since: expected a time in Unix ms >= 0, got {}", since));
  }
  DROVER_ASSIGN_OR_RETURN(std::int64_t limit, IntQuery(request, "limit", kDefaultDiagnosisJobs));
  if (limit < 1 || limit > kMaxDiagnosisJobs) {
    return InvalidArgument(fmt::format("query parameter limit: must be from 1 to {}, got {}",
                                       kMaxDiagnosisJobs, limit));
  }
  DROVER_ASSIGN_OR_RETURN(model::Identity caller, CallerIdentity(request));
  JobPageRequest page_request;
  page_request.filter.team = request.Query("team");
  page_request.newest_first = true;
  page_request.limit = static_cast<int>(limit);
  page_request.visible = [caller, since, policy = service.Policy()](const model::Job& job) {
    return (job.finished_at == 0 || job.finished_at >= since) &&
           model::Visible(caller, model::Verb::kView, model::ResourceOf(job), policy);
  };
  const JobPage page = service.ListJobPage(page_request);

  std::vector<model::JobDiagnosis> diagnosed;
  std::map<JobId, model::Job> by_id;  // the jobs with findings
  std::map<std::string, TeamWaste> teams;
  for (const JobSummaryRow& row : page.jobs) {
    // The page holds summaries; the rules read the whole job (at most kMaxDiagnosisJobs copies).
    DROVER_ASSIGN_OR_RETURN(model::Job job, service.GetJob(row.id));
    DROVER_ASSIGN_OR_RETURN(std::vector<model::AttemptUsage> usage, service.Usage(job.id));
    std::vector<model::UsageBucket> buckets;
    const model::AttemptUsage* latest = usage.empty() ? nullptr : &usage.back();
    if (latest != nullptr) {
      DROVER_ASSIGN_OR_RETURN(buckets, service.UsageSeries(job.id, latest->attempt));
    }
    model::JobDiagnosis diagnosis = DiagnoseJob(service, job, latest, buckets);
    TeamWaste& team = teams[job.spec.team];
    ++team.jobs;
    team.idle_gpu_ms += diagnosis.idle_gpu_ms;
    team.lost_gpu_ms += diagnosis.lost_gpu_ms;
    if (diagnosis.findings.empty()) continue;
    ++team.jobs_with_findings;
    diagnosed.push_back(std::move(diagnosis));
    const JobId id = job.id;
    by_id.emplace(id, std::move(job));
  }
  model::RankByWaste(diagnosed);

  json jobs = json::array();
  for (const model::JobDiagnosis& diagnosis : diagnosed) {
    const model::Job& job = by_id.at(diagnosis.job);
    jobs.push_back(json{{"job_id", job.id.value()},
                        {"name", job.spec.name},
                        {"owner", job.spec.owner},
                        {"team", job.spec.team},
                        {"state", model::JobStateName(job.state)},
                        {"attempt", diagnosis.attempt},
                        {"wasted_gpu_hours", Hours(diagnosis.wasted_gpu_ms())},
                        {"idle_gpu_hours", Hours(diagnosis.idle_gpu_ms)},
                        {"lost_gpu_hours", Hours(diagnosis.lost_gpu_ms)},
                        {"findings", FindingsView(diagnosis.findings)}});
  }
  std::vector<std::pair<std::string, TeamWaste>> ranked(teams.begin(), teams.end());
  std::stable_sort(ranked.begin(), ranked.end(), [](const auto& a, const auto& b) {
    return a.second.idle_gpu_ms + a.second.lost_gpu_ms >
           b.second.idle_gpu_ms + b.second.lost_gpu_ms;
  });
  json team_rows = json::array();
  for (const auto& [name, waste] : ranked) {
    team_rows.push_back(json{{"team", name},
                             {"jobs", waste.jobs},
                             {"jobs_with_findings", waste.jobs_with_findings},
                             {"wasted_gpu_hours", Hours(waste.idle_gpu_ms + waste.lost_gpu_ms)},
                             {"idle_gpu_hours", Hours(waste.idle_gpu_ms)},
                             {"lost_gpu_hours", Hours(waste.lost_gpu_ms)}});
  }
  return JsonResponse(200, json{{"since", since},
                                {"team", page_request.filter.team},
                                {"limit", limit},
                                {"examined", page.jobs.size()},
                                {"more", page.next.has_value()},
                                {"jobs", std::move(jobs)},
                                {"teams", std::move(team_rows)}});
}

}  // namespace drover::api
