#include "drover/api/job_handlers.h"

#include <fmt/format.h>

#include <algorithm>
#include <limits>
#include <optional>
#include <string>

#include "drover/api/diagnosis_handlers.h"
#include "drover/api/views.h"
#include "drover/codec/json.h"
#include "drover/codec/json_writer.h"
#include "drover/model/access.h"
#include "drover/spec/limits.h"

namespace drover::api {
namespace {

using nlohmann::json;

// The body of POST /v1/jobs/{id}/report.
// Errors are kInvalidArgument naming the field: a field of the wrong type here, a value out of
// range in model::CheckProgressReport.
Result<model::ProgressReport> ParseProgressReport(const Request& request) {
  DROVER_ASSIGN_OR_RETURN(json body, JsonBody(request));
  if (!body.is_object()) return InvalidArgument("request body: expected a JSON object");
  model::ProgressReport report;
  for (const auto& [field, value] : body.items()) {
    if (field == "useful_work_began") {
      if (!value.is_boolean()) return InvalidArgument("useful_work_began: expected true or false");
      report.useful_work_began = value.get<bool>();
    } else if (field == "progress") {
      if (!value.is_number()) return InvalidArgument("progress: expected a number from 0 to 1");
      report.progress = value.get<double>();
    } else if (field == "throughput") {
      if (!value.is_number()) {
        return InvalidArgument("throughput: expected a number (units of work per second)");
      }
      report.throughput = value.get<double>();
    } else if (field == "unit") {
      if (!value.is_string()) return InvalidArgument("unit: expected a string such as samples/s");
      report.unit = value.get<std::string>();
    } else {
      return InvalidArgument(fmt::format(
          "{}: unknown field; a report has useful_work_began, progress, throughput and unit",
          field.substr(0, 64)));
    }
  }
  DROVER_RETURN_IF_ERROR(model::CheckProgressReport(report));
  return report;
}

// The parse options of POST /v1/jobs from its headers. kInvalidArgument naming the header: a
// relative X-Drover-Base-Dir, an X-Drover-Hold-Infeasible other than true or false, an
// X-Drover-After that spec::ParseAfterList refuses.
Result<spec::ParseOptions> SubmitOptions(const Request& request) {
  spec::ParseOptions options;
  options.file_name =
      request.HasHeader(kFileHeader) ? request.Header(kFileHeader) : std::string("<request>");
  options.base_dir = request.Header(kBaseDirHeader);
  if (!options.base_dir.empty() && options.base_dir.front() != '/') {
    return InvalidArgument(fmt::format(
        "{} header: must be an absolute directory (the one relative paths in the spec resolve "
        "against), found '{}'",
        kBaseDirHeader, spec::EscapeForMessage(options.base_dir)));
  }
  if (request.HasHeader(kHoldInfeasibleHeader)) {
    const std::string hold = request.Header(kHoldInfeasibleHeader);
    if (hold != "true" && hold != "false") {
      return InvalidArgument(fmt::format("{} header: expected true or false, found '{}'",
                                         kHoldInfeasibleHeader, spec::EscapeForMessage(hold)));
    }
    options.hold_infeasible = hold == "true";
  }
  if (request.HasHeader(kAfterHeader)) {
    Result<std::vector<model::Dependency>> after =
        spec::ParseAfterList(request.Header(kAfterHeader));
    if (!after) {
      return InvalidArgument(fmt::format("{} header: {}", kAfterHeader, after.error().message));
    }
    options.after = std::move(*after);
  }
  return options;
}

}  // namespace

Result<Response> SubmitJobs(Service& service, const Request& request) {
  DROVER_ASSIGN_OR_RETURN(spec::ParseOptions options, SubmitOptions(request));
  DROVER_ASSIGN_OR_RETURN(model::Identity caller, CallerIdentity(request));
  DROVER_ASSIGN_OR_RETURN(
      Submission submitted,
      service.Submit(request.body, options, request.Header(kIdempotencyKeyHeader), caller));
  // From what Submit returned: one GetJob per job would wait for the control plane's lock each
  // time, which its loop holds while it launches workers (tens of ms each).
  json jobs = json::array();
  for (const SubmittedJob& job : submitted.jobs) {
    jobs.push_back(json{
        {"id", job.id.value()}, {"name", job.name}, {"state", model::JobStateName(job.state)}});
  }
  return JsonResponse(submitted.existing ? 200 : 201,
                      json{{"jobs", jobs}, {"existing", submitted.existing}});
}

bool HasNotStarted(model::JobState state) {
  switch (state) {
    case model::JobState::kPending:
    case model::JobState::kWaiting:
    case model::JobState::kReady:
    case model::JobState::kAdmitted:
    case model::JobState::kPlaced:
      return true;
    case model::JobState::kStarting:
    case model::JobState::kRunning:
    case model::JobState::kSucceeded:
    case model::JobState::kFailed:
    case model::JobState::kCancelled:
    case model::JobState::kTimedOut:
    case model::JobState::kSkipped:
      return false;
  }
  return false;
}

Result<Response> ListJobs(Service& service, const Request& request) {
  JobPageRequest page_request;
  store::JobFilter& filter = page_request.filter;
  if (request.HasQuery("state")) {
    filter.state = model::ParseJobState(request.Query("state"));
    if (!filter.state) {
      return InvalidArgument("query parameter state: unknown state '" + request.Query("state") +
                             "'");
    }
  }
  filter.owner = request.Query("owner");
  filter.team = request.Query("team");
  filter.queue = request.Query("queue");
  filter.name = request.Query("name");
  filter.active_only = request.Query("active") == "1";
  const bool not_started_only = request.Query("pending") == "1";
  DROVER_ASSIGN_OR_RETURN(std::int64_t limit, IntQuery(request, "limit", kDefaultJobPage));
  if (limit < 1 || limit > kMaxJobPage) {
    return InvalidArgument(
        fmt::format("query parameter limit: must be from 1 to {}, got {}", kMaxJobPage, limit));
  }
  page_request.limit = static_cast<int>(limit);
  // `limit` alone keeps its old meaning: the newest N.
  const std::string order = request.Query("order", request.HasQuery("limit") ? "desc" : "asc");
  if (order != "asc" && order != "desc") {
    return InvalidArgument(fmt::format("query parameter order: expected asc or desc, got '{}'",
                                       spec::EscapeForMessage(order)));
  }
  page_request.newest_first = order == "desc";
  if (request.HasQuery("after")) {
    DROVER_ASSIGN_OR_RETURN(std::int64_t after, IntQuery(request, "after", 0));
    if (after < 1) {
      return InvalidArgument(fmt::format(
          "query parameter after: expected a job id (the previous page's next), got {}", after));
    }
    page_request.after = JobId(after);
  }
  DROVER_ASSIGN_OR_RETURN(model::Identity caller, CallerIdentity(request));
  page_request.visible = [caller, not_started_only,
                          policy = service.Policy()](const model::Job& job) {
    return (!not_started_only || HasNotStarted(job.state)) &&
           model::Visible(caller, model::Verb::kView, model::ResourceOf(job), policy);
  };
  page_request.now = service.Now();
  const JobPage page = service.ListJobPage(page_request);
  // Written straight into the body (a page is up to kMaxJobPage summaries, megabytes): the same
  // bytes as DumpJson of {"jobs": [...], "next": ...}.
  Response response{200, {}, "application/json", {}, {}, {}};
  codec::JsonWriter out(response.body);
  out.BeginObject();
  out.Key("jobs");
  out.BeginArray();
  for (const JobSummaryRow& row : page.jobs) WriteJobSummary(out, row);
  out.EndArray();
  out.Key("next");
  if (page.next) {
    out.Int(page.next->value());
  } else {
    out.Null();
  }
  out.EndObject();
  return response;
}

Result<Response> GetJob(Service& service, const Request& request) {
  DROVER_ASSIGN_OR_RETURN(JobId id, PathJobId(request));
  DROVER_ASSIGN_OR_RETURN(model::Job job, service.GetJob(id));
  DROVER_ASSIGN_OR_RETURN(auto transitions, service.Transitions(id));
  DROVER_ASSIGN_OR_RETURN(model::Identity caller, CallerIdentity(request));
  const Disclosure disclosure = DisclosureOf(caller, model::ResourceOf(job), service.Policy());
  json detail = JobDetail(job, transitions, service.Now(), disclosure);
  DROVER_ASSIGN_OR_RETURN(std::vector<model::AttemptUsage> usage, service.Usage(id));
  detail["usage"] = UsageSummariesView(usage);
  return JsonResponse(200, detail);
}

Result<Response> JobUsage(Service& service, const Request& request) {
  DROVER_ASSIGN_OR_RETURN(JobId id, PathJobId(request));
  DROVER_ASSIGN_OR_RETURN(std::vector<model::AttemptUsage> usage, service.Usage(id));
  const int latest = usage.empty() ? 0 : usage.back().attempt;
  DROVER_ASSIGN_OR_RETURN(std::int64_t attempt, IntQuery(request, "attempt", latest));
  if (attempt < 0 || attempt > std::numeric_limits<int>::max()) {
    return InvalidArgument("query parameter attempt: an attempt number (1, 2, ...) is required");
  }
  std::vector<model::UsageBucket> buckets;
  if (attempt > 0) {
    DROVER_ASSIGN_OR_RETURN(buckets, service.UsageSeries(id, static_cast<int>(attempt)));
  }
  json series = json::array();
  for (const model::UsageBucket& bucket : buckets) series.push_back(codec::ToJson(bucket));
  // What the answered attempt's usage says against what the job asked for, and the job-level
  // rules (its timeline, recovery overhead, waiting for shape).
  auto measured = std::find_if(usage.begin(), usage.end(),
                               [&](const model::AttemptUsage& a) { return a.attempt == attempt; });
  DROVER_ASSIGN_OR_RETURN(model::Job job, service.GetJob(id));
  const std::vector<model::Finding> findings =
      DiagnoseJob(service, job, measured != usage.end() ? &*measured : nullptr, buckets).findings;
  // The answered attempt's reported throughput (the latest attempt's when none has samples)
  // against the GPUs it held and the energy they drew.
  const std::int64_t rated = attempt > 0 ? attempt : static_cast<std::int64_t>(job.attempts.size());
  std::optional<model::WorkRates> work;
  if (rated > 0 && rated <= static_cast<std::int64_t>(job.attempts.size())) {
    work = model::WorkRatesOf(
        job.attempts[static_cast<std::size_t>(rated) - 1],
        static_cast<std::int64_t>(job.spec.workers) * job.spec.requirements.per_worker.gpus,
        measured != usage.end() ? &measured->summary : nullptr);
  }
  return JsonResponse(200, json{{"job_id", id.value()},
                                {"attempts", UsageSummariesView(usage)},
                                {"attempt", attempt},
                                {"bucket_ms", model::kUsageBucketMs},
                                {"buckets", std::move(series)},
                                {"findings", FindingsView(findings)},
                                {"work", WorkRatesView(work)}});
}

Result<Response> CancelJob(Service& service, const Request& request) {
  DROVER_ASSIGN_OR_RETURN(JobId id, PathJobId(request));
  DROVER_ASSIGN_OR_RETURN(model::Identity caller, CallerIdentity(request));
  DROVER_RETURN_IF_ERROR(
      service.Cancel(id, caller.user, "cancelled by " + model::Describe(caller)));
  DROVER_ASSIGN_OR_RETURN(model::Job job, service.GetJob(id));
  return JsonResponse(200, JobSummary(job, service.Now()));
}

Result<Response> ExplainJob(Service& service, const Request& request) {
  DROVER_ASSIGN_OR_RETURN(JobId id, PathJobId(request));
  DROVER_ASSIGN_OR_RETURN(control::Explanation explanation, service.Explain(id));
  return JsonResponse(200, ExplanationView(id, explanation));
}

Result<Response> JobDecisions(Service& service, const Request& request) {
  DROVER_ASSIGN_OR_RETURN(JobId id, PathJobId(request));
  DROVER_ASSIGN_OR_RETURN(auto decisions, service.Decisions(id));
  return JsonResponse(200, DecisionsView(decisions));
}

Result<Response> CheckpointJob(Service& service, const Request& request) {
  DROVER_ASSIGN_OR_RETURN(JobId id, PathJobId(request));
  DROVER_ASSIGN_OR_RETURN(TimeMs at, service.ReportCheckpoint(id));
  return JsonResponse(200, json{{"job", id.value()}, {"checkpoint_at", at}});
}

Result<Response> ReportJob(Service& service, const Request& request) {
  DROVER_ASSIGN_OR_RETURN(JobId id, PathJobId(request));
  DROVER_ASSIGN_OR_RETURN(model::ProgressReport report, ParseProgressReport(request));
  DROVER_ASSIGN_OR_RETURN(model::Attempt attempt, service.ReportProgress(id, report));
  json body = {{"job", id.value()}, {"attempt", attempt.number}};
  body.update(GoodputView(attempt));
  return JsonResponse(200, body);
}

Result<Response> JobLogs(Service& service, const Request& request) {
  constexpr std::int64_t kMaxChunk = 1 << 20;
  DROVER_ASSIGN_OR_RETURN(JobId id, PathJobId(request));
  DROVER_ASSIGN_OR_RETURN(std::int64_t attempt, IntQuery(request, "attempt", 0));
  DROVER_ASSIGN_OR_RETURN(std::int64_t rank, IntQuery(request, "rank", 0));
  DROVER_ASSIGN_OR_RETURN(std::int64_t offset, IntQuery(request, "offset", 0));
  DROVER_ASSIGN_OR_RETURN(std::int64_t wait_ms, IntQuery(request, "wait_ms", 0));
  const std::string stream = request.Query("stream", "stdout");
  std::uint64_t seen = service.version();
  const TimeMs deadline = service.Now() + std::min<DurationMs>(wait_ms, kMaxLongPollMs);
  while (true) {
    DROVER_ASSIGN_OR_RETURN(LogChunk chunk,
                            service.ReadLog(id, static_cast<int>(attempt), static_cast<int>(rank),
                                            stream, offset, kMaxChunk));
    if (!chunk.data.empty() || chunk.finished || service.Now() >= deadline) {
      Response response{200, std::move(chunk.data), "text/plain; charset=utf-8", {}, {}, {}};
      response.headers["X-Drover-Next-Offset"] = std::to_string(chunk.next_offset);
      response.headers["X-Drover-Finished"] = chunk.finished ? "1" : "0";
      response.headers["X-Drover-Started"] = chunk.started ? "1" : "0";
      response.headers["X-Drover-Attempt"] = std::to_string(chunk.attempt);
      response.headers["X-Drover-Job-State"] = chunk.job_state;
      return response;
    }
    seen = service.WaitForChange(seen, 100);
  }
}

}  // namespace drover::api
