#include "drover/cli/commands.h"

#include <fmt/format.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>
#include <iostream>
#include <iterator>
#include <limits>
#include <optional>
#include <regex>
#include <sstream>
#include <thread>

#include "drover/api/client.h"
#include "drover/api/job_handlers.h"
#include "drover/api/request.h"
#include "drover/cli/job_rows.h"
#include "drover/cli/table.h"
#include "drover/cli/text.h"
#include "drover/cli/watch.h"
#include "drover/common/quantity.h"
#include "drover/model/job.h"
#include "drover/model/job_state_words.h"
#include "drover/spec/parse.h"

namespace drover::cli {

using nlohmann::json;

api::ApiClient ClientOf(const ClientFlags& flags) {
  api::ApiClient client(flags.server, kMillisPerMinute, flags.ca_file, flags.tls);
  const ResolvedToken token = ResolveToken(flags.token);
  client.SetBearer(token.token);
  client.SetAuthHint(AuthHint(token));
  return client;
}

namespace {

void PrintJson(const json& value) {
  std::cout << value.dump(2, ' ', false, json::error_handler_t::replace) << "\n";
}

// Prints `body` as JSON or, for tables, as `describe` renders it; 0, or the error's status.
template <typename Describe>
int Print(const ClientFlags& flags, const Result<json>& body, Describe describe) {
  if (!body) return ReportError(body.error());
  if (flags.output == "json") {
    PrintJson(*body);
  } else {
    std::cout << describe(*body);
  }
  return 0;
}

// `drover ls --pipeline`: one row per pipeline run.
int ListPipelines(const ClientFlags& flags) {
  api::ApiClient client = ClientOf(flags);
  return Print(flags, client.Pipelines(), [](const json& body) {
    Table table({"ID", "NAME", "STATE", "STAGES", "CREATED", "WALL"});
    for (const json& run : body["pipelines"]) {
      table.AddRow(
          {run["id"].dump(), run["name"], run["state"],
           fmt::format("{}/{}", run["stages_done"].get<int>(), run["stages_total"].get<int>()),
           FormatTimestamp(run["created_at"].get<TimeMs>()), FormatMs(run["wall_ms"])});
    }
    return table.Render();
  });
}

// The job a command from inside a job is about: `given`, else $DROVER_JOB_ID (set for every
// worker). kInvalidArgument when there is neither.
Result<std::string> JobOfCaller(const std::string& given) {
  if (!given.empty()) return given;
  if (const char* env = std::getenv("DROVER_JOB_ID"); env != nullptr && *env != '\0') return env;
  return InvalidArgument("no job given: run inside a job (DROVER_JOB_ID) or name the job");
}

// Prints each diagnostic and a count to stderr; returns 2, validate's status for a bad file.
int PrintDiagnostics(const std::string& file, const std::vector<spec::Diagnostic>& diagnostics) {
  for (const spec::Diagnostic& diagnostic : diagnostics) {
    std::cerr << diagnostic.ToString() << "\n";
  }
  std::cerr << fmt::format("{}: {} error{}\n", file, diagnostics.size(),
                           diagnostics.size() == 1 ? "" : "s");
  return 2;
}

// Whether `text` has a top-level `kind: Service` line: a file of services, whose diagnostics
// the server's job parser would not give (it refuses the kind itself).
bool DeclaresServices(const std::string& text) {
  static const std::regex kService(
      R"((^|\n)kind:[ \t]*["']?Service["']?[ \t]*(#[^\n]*)?(\r?\n|$))");
  return std::regex_search(text, kService);
}

}  // namespace

int ValidateCommand(const std::string& file) {
  auto text = ReadSpecFile(file);
  if (!text) return ReportError(text.error());
  spec::ParseOutput parsed = spec::ParseDocumentsWithDiagnostics(*text, SpecOptionsFor(file));
  if (!parsed.diagnostics.empty()) return PrintDiagnostics(file, parsed.diagnostics);
  std::string names;
  for (const auto& job : parsed.jobs) names += (names.empty() ? "" : ", ") + job.name;
  for (const auto& cron : parsed.crons) names += (names.empty() ? "" : ", ") + cron.name;
  for (const auto& service : parsed.services) {
    names += (names.empty() ? "" : ", ") + service.name;
  }
  const std::size_t count = parsed.jobs.size() + parsed.crons.size() + parsed.services.size();
  const char* what = !parsed.crons.empty()      ? "cron job"
                     : !parsed.services.empty() ? "service"
                                                : "job";
  std::cout << fmt::format("{}: {} {}{} valid ({})\n", file, count, what, count == 1 ? "" : "s",
                           names);
  return 0;
}

int SubmitCommand(const ClientFlags& flags, const std::string& file,
                  const std::string& idempotency_key, bool hold_infeasible,
                  const std::vector<std::string>& after) {
  for (const std::string& item : after) {
    if (Result<model::Dependency> parsed = spec::ParseAfter(item); !parsed) {
      return ReportError(
          Error{ErrorCode::kInvalidArgument, "--after " + parsed.error().message, {}});
    }
  }
  auto text = ReadSpecFile(file);
  if (!text) return ReportError(text.error());
  spec::ParseOptions options = SpecOptionsFor(file);
  // Cron jobs go to /v1/crons; jobs and pipelines (and invalid files, with the server's
  // diagnostics) to /v1/jobs.
  spec::ParseOutput parsed = spec::ParseDocumentsWithDiagnostics(*text, options);
  if (!parsed.crons.empty()) {
    if (!after.empty()) {
      return ReportError(Error{
          ErrorCode::kInvalidArgument,
          "--after: a file of cron jobs is not submitted as jobs; its runs cannot wait for a job",
          {}});
    }
    return SubmitCrons(flags, parsed.crons);
  }
  if (!parsed.diagnostics.empty() && DeclaresServices(*text)) {
    return PrintDiagnostics(file, parsed.diagnostics);
  }
  if (!parsed.services.empty()) {
    if (!after.empty() || hold_infeasible || !idempotency_key.empty()) {
      return ReportError(Error{ErrorCode::kInvalidArgument,
                               "--after, --hold-infeasible and --idempotency-key apply to jobs, "
                               "not to a file of services",
                               {}});
    }
    return SubmitServices(flags, parsed.services);
  }
  std::map<std::string, std::string> headers = {{"X-Drover-File", options.file_name},
                                                {"X-Drover-Base-Dir", options.base_dir}};
  if (!idempotency_key.empty()) headers["Idempotency-Key"] = idempotency_key;
  if (hold_infeasible) headers["X-Drover-Hold-Infeasible"] = "true";
  if (!after.empty()) headers["X-Drover-After"] = fmt::format("{}", fmt::join(after, ","));
  api::ApiClient client = ClientOf(flags);
  auto response = client.Post("/v1/jobs", *text, "application/yaml", headers);
  if (!response) return ReportError(response.error());
  if (flags.output == "json") {
    PrintJson(response->json);
    return 0;
  }
  for (const json& job : response->json["jobs"]) {
    std::cout << fmt::format(
        "{} job {} ({})\n",
        response->json["existing"].get<bool>() ? "already submitted:" : "submitted",
        job["id"].get<std::int64_t>(), job["name"].get<std::string>());
  }
  return 0;
}

namespace {

// What one page of GET /v1/jobs held: how many jobs, and its cursor (unset on the last page).
struct PageRead {
  std::size_t jobs = 0;
  std::optional<std::int64_t> next;
};

// Fetches the jobs `filters` (query parameters, each ending in '&') select, `page_size` per
// request (docs/api.md, "Pages"): the newest `limit`, newest first, when limit > 0; else every one
// in id order. `read` takes each page's answer, its body parsed into `json` only when `parsed`.
Status FetchJobPages(api::ApiClient& client, const std::string& filters, int limit,
                     std::int64_t page_size, bool parsed,
                     const std::function<Result<PageRead>(api::ApiResponse&)>& read) {
  std::int64_t fetched = 0;
  std::string after;
  while (true) {
    const std::int64_t page = limit > 0 ? std::min(limit - fetched, page_size) : page_size;
    const std::string url = fmt::format("/v1/jobs?{}limit={}&order={}{}", filters, page,
                                        limit > 0 ? "desc" : "asc", after);
    DROVER_ASSIGN_OR_RETURN(api::ApiResponse response,
                            parsed ? client.Get(url) : client.GetUnparsed(url));
    DROVER_ASSIGN_OR_RETURN(const PageRead read_page, read(response));
    fetched += static_cast<std::int64_t>(read_page.jobs);
    if (!read_page.next || (limit > 0 && fetched >= limit)) break;
    std::string cursor = fmt::format("&after={}", *read_page.next);
    if (cursor == after) break;  // a server that does not advance is not followed forever
    after = std::move(cursor);
  }
  return OkStatus();
}

// The jobs as JSON (for -o json): each page's summaries as the server wrote them.
Result<json> FetchJobs(api::ApiClient& client, const std::string& filters, int limit,
                       std::int64_t page_size) {
  json jobs = json::array();
  DROVER_RETURN_IF_ERROR(FetchJobPages(client, filters, limit, page_size, /*parsed=*/true,
                                       [&](api::ApiResponse& response) -> Result<PageRead> {
                                         PageRead page;
                                         for (json& job : response.json["jobs"]) {
                                           jobs.push_back(std::move(job));
                                           ++page.jobs;
                                         }
                                         const json& next = response.json["next"];
                                         if (next.is_number_integer())
                                           page.next = next.get<std::int64_t>();
                                         return page;
                                       }));
  return jobs;
}

// A waiting job's place in the cluster's order, for sorting: those without one last.
std::int64_t ClusterPosition(const json& job) {
  if (!job.contains("position")) return std::numeric_limits<std::int64_t>::max();
  return job["position"]["in_cluster"].get<std::int64_t>();
}

// The jobs as the table's rows, read without a JSON tree (ParseJobRows).
Result<std::vector<JobRow>> FetchJobRows(api::ApiClient& client, const std::string& filters,
                                         int limit, std::int64_t page_size) {
  std::vector<JobRow> rows;
  DROVER_RETURN_IF_ERROR(
      FetchJobPages(client, filters, limit, page_size, /*parsed=*/false,
                    [&](api::ApiResponse& response) -> Result<PageRead> {
                      DROVER_ASSIGN_OR_RETURN(JobRowPage page, ParseJobRows(response.body));
                      rows.insert(rows.end(), std::make_move_iterator(page.jobs.begin()),
                                  std::make_move_iterator(page.jobs.end()));
                      return PageRead{page.jobs.size(), page.next};
                    }));
  return rows;
}

}  // namespace

namespace {

int ListOnce(const ClientFlags& flags, const ListFlags& list) {
  if (list.pipelines) return ListPipelines(flags);
  std::string filters;
  auto add = [&](const char* key, const std::string& value) {
    if (!value.empty()) filters += fmt::format("{}={}&", key, api::UrlEncode(value));
  };
  add("state", list.state);
  if (list.pending) add("pending", "1");  // the server's rule: api::HasNotStarted
  add("owner", list.owner);
  add("team", list.team);
  add("queue", list.queue);
  add("name", list.name);
  if (list.active) add("active", "1");
  api::ApiClient client = ClientOf(flags);
  if (flags.output == "json") {
    Result<json> jobs = FetchJobs(client, filters, list.limit, list.page_size);
    if (!jobs) return ReportError(jobs.error());
    if (list.pending) {
      std::stable_sort(jobs->begin(), jobs->end(), [](const json& a, const json& b) {
        return ClusterPosition(a) < ClusterPosition(b);
      });
    }
    PrintJson(json{{"jobs", std::move(*jobs)}});
    return 0;
  }
  Result<std::vector<JobRow>> jobs = FetchJobRows(client, filters, list.limit, list.page_size);
  if (!jobs) return ReportError(jobs.error());
  // --wide shows whole messages; otherwise a message is cut to fit a terminal's line.
  auto message = [&](const JobRow& job) {
    return list.wide ? job.message : Truncate(job.message, 70);
  };
  if (list.pending) {
    // In the cluster's order; jobs without a position last.
    std::stable_sort(jobs->begin(), jobs->end(), [](const JobRow& a, const JobRow& b) {
      return a.in_cluster.value_or(std::numeric_limits<int>::max()) <
             b.in_cluster.value_or(std::numeric_limits<int>::max());
    });
    Table table({"ID", "NAME", "OWNER", "QUEUE", "PRIORITY", "QUEUE POS", "CLUSTER POS", "GPUS",
                 "WAIT", "MESSAGE"});
    for (const JobRow& job : *jobs) {
      table.AddRow({std::to_string(job.id), job.name, job.owner, job.queue, job.priority,
                    job.in_queue ? std::to_string(*job.in_queue) : "-",
                    job.in_cluster ? std::to_string(*job.in_cluster) : "-",
                    std::to_string(job.gpus), FormatMs(job.queue_wait_ms), message(job)});
    }
    std::cout << table.Render();
    return 0;
  }
  Table table(
      {"ID", "NAME", "OWNER", "QUEUE", "STATE", "ATTEMPT", "GPUS", "WAIT", "RUN", "MESSAGE"});
  for (const JobRow& job : *jobs) {
    table.AddRow({std::to_string(job.id), job.name, job.owner, job.queue, job.state,
                  std::to_string(job.attempt), std::to_string(job.gpus),
                  FormatMs(job.queue_wait_ms), FormatMs(job.run_time_ms), message(job)});
  }
  std::cout << table.Render();
  return 0;
}

// Prints job `id` (and its pipeline run); `ended` (when given) says whether the job has ended.
int ShowJob(const ClientFlags& flags, const std::string& id, bool* ended) {
  api::ApiClient client = ClientOf(flags);
  auto response = client.Get("/v1/jobs/" + api::UrlEncode(id));
  if (!response) return ReportError(response.error());
  const json& job = response->json;
  if (ended != nullptr) {
    std::optional<model::JobState> state =
        model::kJobStateNames.Parse(job.value("state", std::string()));
    *ended = state && model::IsTerminal(*state);
  }
  if (flags.output == "json") {
    PrintJson(job);
    return 0;
  }
  std::cout << DescribeJob(job);
  // What its measurements and timeline show (the findings of GET /v1/jobs/{id}/usage).
  auto usage = client.Get("/v1/jobs/" + api::UrlEncode(id) + "/usage");
  if (!usage) {
    std::cout << "diagnosis: unavailable (" << usage.error().message << ")\n";
  } else {
    if (const json work = usage->json.value("work", json(nullptr)); work.is_object()) {
      std::cout << DescribeWorkRates(work) << "\n";
    }
    if (const json findings = usage->json.value("findings", json::array()); !findings.empty()) {
      std::cout << "diagnosis:\n" << DescribeFindings(findings, "  ");
    }
  }
  if (!job.contains("pipeline_run")) return 0;
  auto run = client.Pipeline(job["pipeline_run"].dump());
  if (!run) return ReportError(run.error());
  std::cout << "\n" << DescribePipeline(*run);
  return 0;
}

}  // namespace

int ListCommand(const ClientFlags& flags, const ListFlags& list) {
  if (!list.watch) return ListOnce(flags, list);
  return WatchEvents(flags, "types=job", [&]() -> std::optional<int> {
    ClearForRedraw();
    const int status = ListOnce(flags, list);
    return status != 0 ? std::optional<int>(status) : std::nullopt;
  });
}

int GetCommand(const ClientFlags& flags, const std::string& id, bool watch) {
  if (!watch) return ShowJob(flags, id, nullptr);
  return WatchEvents(flags, "job=" + api::UrlEncode(id), [&]() -> std::optional<int> {
    ClearForRedraw();
    bool ended = false;
    const int status = ShowJob(flags, id, &ended);
    return status != 0 || ended ? std::optional<int>(status) : std::nullopt;
  });
}

int LogsCommand(const ClientFlags& flags, const std::string& id, const LogFlags& logs) {
  api::ApiClient client = ClientOf(flags);
  const std::string stream = logs.stderr_stream ? "stderr" : "stdout";
  // A negative offset reads from the end; the first chunk is then cut to the last N lines.
  constexpr std::int64_t kTailWindow = 1 << 20;
  std::int64_t offset = logs.tail_lines > 0 ? -kTailWindow : 0;
  bool cut_to_tail = logs.tail_lines > 0;
  bool told_waiting = false;
  while (true) {
    std::string query = fmt::format("/v1/jobs/{}/logs?attempt={}&rank={}&stream={}&offset={}",
                                    api::UrlEncode(id), logs.attempt, logs.rank, stream, offset);
    if (logs.follow) query += "&wait_ms=10000";
    auto response = client.Get(query);
    if (!response) return ReportError(response.error());
    std::map<std::string, std::string>& headers = response->headers;
    const std::optional<std::int64_t> next = api::ParseInt(headers["X-Drover-Next-Offset"]);
    if (!next) {
      return ReportError(Error{
          ErrorCode::kInternal, "the server's answer has no X-Drover-Next-Offset header", {}});
    }
    const bool finished = headers["X-Drover-Finished"] == "1";
    const bool started = headers["X-Drover-Started"] != "0";
    const std::string& state = headers["X-Drover-Job-State"];
    if (!started && finished) {
      std::cerr << fmt::format("job {} ended ({}) without starting; it has no output\n", id, state);
    } else if (!started && !logs.follow) {
      std::cerr << fmt::format(
          "job {} has not started yet ({}); no output (drover logs -f waits for it to start)\n", id,
          state);
    } else if (!started && !told_waiting) {
      std::cerr << fmt::format("job {} has not started yet ({}); waiting for it to start\n", id,
                               state);
      told_waiting = true;
    }
    std::string_view text = response->body;
    if (cut_to_tail && started) {
      cut_to_tail = false;
      std::size_t start = text.size();
      int lines = 0;
      // Walk back over tail_lines line ends (the final newline does not start a line).
      while (start > 0) {
        if (text[start - 1] == '\n' && start != text.size() && ++lines == logs.tail_lines) break;
        --start;
      }
      text.remove_prefix(start);
    }
    const bool last = !logs.follow || finished;
    if (flags.output == "json") {
      // One object per chunk read (JSON Lines): one without -f, then each with output and the last.
      if (!text.empty() || last) {
        json chunk = {
            {"job", api::ParseInt(id).value_or(0)},
            {"attempt", api::ParseInt(headers["X-Drover-Attempt"]).value_or(std::int64_t{0})},
            {"rank", logs.rank},
            {"stream", stream},
            {"offset", *next - static_cast<std::int64_t>(text.size())},
            {"next_offset", *next},
            {"data", text},
            {"started", started},
            {"finished", finished},
            {"state", state}};
        std::cout << chunk.dump(-1, ' ', false, json::error_handler_t::replace) << "\n"
                  << std::flush;
      }
    } else {
      std::cout << text << std::flush;
    }
    offset = *next;
    if (last) break;
  }
  return 0;
}

int CancelCommand(const ClientFlags& flags, const std::string& id, bool pipeline) {
  api::ApiClient client = ClientOf(flags);
  if (pipeline) {
    return Print(flags, client.CancelPipeline(id), DescribeCancelledPipeline);
  }
  auto response = client.Post("/v1/jobs/" + api::UrlEncode(id) + "/cancel", "", "application/json");
  if (!response) return ReportError(response.error());
  if (flags.output == "json") {
    PrintJson(response->json);
    return 0;
  }
  const json& job = response->json;
  const bool cancelled =
      model::ParseJobState(job["state"].get<std::string>()) == model::JobState::kCancelled;
  std::cout << fmt::format("job {} ({}) {}\n", job["id"].get<std::int64_t>(),
                           job["name"].get<std::string>(),
                           cancelled ? "cancelled" : "is being cancelled");
  return 0;
}

int ExplainCommand(const ClientFlags& flags, const std::string& id) {
  api::ApiClient client = ClientOf(flags);
  auto body = client.Explain(id);
  if (!body) return ReportError(body.error());
  if (flags.output == "json") {
    PrintJson(*body);
    return 0;
  }
  const std::string state = body->value("state", "");
  const std::optional<model::JobState> parsed = model::ParseJobState(state);
  std::cout << fmt::format("job {} {} ({}): {}\n", body->value("id", std::int64_t{0}),
                           parsed ? model::kJobStatePhrases.Name(*parsed) : "is " + state,
                           body->value("layer", ""), body->value("message", ""));
  // Only a job that waits has a start to estimate.
  if (parsed && api::HasNotStarted(*parsed)) {
    const json estimate = body->value("estimated_start", json(nullptr));
    const std::string basis = body->value("estimate_basis", "");
    if (estimate.is_number()) {
      const TimeMs at = estimate.get<std::int64_t>();
      std::cout << fmt::format("  estimated start: {} ({}){}\n", FormatTimestamp(at),
                               FormatRelative(at, SystemClock().Now()),
                               basis.empty() ? "" : ": " + basis);
    } else {
      std::cout << fmt::format("  estimated start: {}\n", basis.empty() ? "unknown" : basis);
    }
  }
  return 0;
}

int GoodputCommand(const ClientFlags& flags, const std::string& by, const std::string& since) {
  TimeMs from = 0;
  if (!since.empty()) {
    Result<TimeMs> parsed = ParseSince(since, SystemClock().Now());
    if (!parsed) return ReportError(parsed.error());
    from = *parsed;
  }
  api::ApiClient client = ClientOf(flags);
  return Print(flags, client.Goodput(by, from), DescribeGoodput);
}

int QueuesCommand(const ClientFlags& flags) {
  api::ApiClient client = ClientOf(flags);
  return Print(flags, client.Queues(), DescribeQueues);
}

int WhyCommand(const ClientFlags& flags, const std::string& id) {
  api::ApiClient client = ClientOf(flags);
  if (const int status = Print(flags, client.Decisions(id), DescribeDecisions);
      status != 0 || flags.output == "json") {
    return status;
  }
  // Then who held, released, updated or requeued it (transitions with a user as actor).
  auto job = client.Get("/v1/jobs/" + api::UrlEncode(id));
  if (!job) return ReportError(job.error());
  std::cout << DescribeUserActions(job->json);
  return 0;
}

int CheckpointCommand(const ClientFlags& flags, const std::string& given) {
  Result<std::string> id = JobOfCaller(given);
  if (!id) return ReportError(id.error());
  api::ApiClient client = ClientOf(flags);
  auto body = client.Checkpoint(*id);
  if (!body) return ReportError(body.error());
  if (flags.output == "json") {
    PrintJson(*body);
    return 0;
  }
  std::cout << fmt::format("job {}: checkpoint recorded at {}\n",
                           body->value("job", std::int64_t{0}),
                           FormatTimestamp(body->value("checkpoint_at", std::int64_t{0})));
  return 0;
}

int ReportCommand(const ClientFlags& flags, const ReportFlags& report) {
  Result<std::string> job = JobOfCaller(report.job);
  if (!job) return ReportError(job.error());
  if (!report.began && !report.progress && !report.throughput) {
    return ReportError(Error{ErrorCode::kInvalidArgument,
                             "nothing to report: pass --began, --progress X and/or --throughput R "
                             "--unit U",
                             {}});
  }
  json body = json::object();
  if (report.began) body["useful_work_began"] = true;
  if (report.progress) body["progress"] = *report.progress;
  if (report.throughput) body["throughput"] = *report.throughput;
  if (!report.unit.empty()) body["unit"] = report.unit;
  api::ApiClient client = ClientOf(flags);
  auto reply = client.Report(*job, body);
  if (!reply) return ReportError(reply.error());
  if (flags.output == "json") {
    PrintJson(*reply);
    return 0;
  }
  std::vector<std::string> notes;
  if (const std::int64_t at = reply->value("useful_work_at", std::int64_t{0}); at != 0) {
    notes.push_back("useful work began at " + FormatTimestamp(at));
  }
  if (const json progress = reply->value("progress", json(nullptr)); progress.is_number()) {
    notes.push_back(fmt::format("progress {:.0f}%", progress.get<double>() * 100));
  }
  if (const json throughput = reply->value("throughput", json(nullptr)); throughput.is_number()) {
    notes.push_back(fmt::format("throughput {:g} {}", throughput.get<double>(),
                                reply->value("throughput_unit", std::string())));
  }
  std::cout << fmt::format("job {} attempt {}: {}\n", reply->value("job", std::int64_t{0}),
                           reply->value("attempt", 0), fmt::join(notes, "; "));
  return 0;
}

int NodesCommand(const ClientFlags& flags) {
  api::ApiClient client = ClientOf(flags);
  auto response = client.Get("/v1/nodes");
  if (!response) return ReportError(response.error());
  if (flags.output == "json") {
    PrintJson(response->json);
    return 0;
  }
  const TimeMs now = SystemClock().Now();
  Table table({"NAME", "STATE", "GPUS(FREE/ALL)", "MODELS", "CPU(FREE/ALL)", "MEMORY(FREE/ALL)",
               "LABELS", "TAINTS", "AGENT", "CONDITIONS"});
  for (const json& node : response->json["nodes"]) {
    std::map<std::string, int> models;
    for (const json& gpu : node["gpus"]) models[gpu["model"].get<std::string>()]++;
    std::string model_text;
    for (const auto& [model, count] : models) {
      model_text += fmt::format("{}{}x{}", model_text.empty() ? "" : ",", count, model);
    }
    std::string labels;
    for (const auto& [key, value] : node["labels"].items()) {
      labels += fmt::format("{}{}={}", labels.empty() ? "" : ",", key, value.get<std::string>());
    }
    std::string taints;
    for (const json& taint : node["taints"]) {
      taints += (taints.empty() ? "" : ",") + TaintText(taint);
    }
    const json& free = node["free"];
    table.AddRow({node["name"], node.value("state", "ready"),
                  fmt::format("{}/{}", free["gpus"].get<int>(), node["gpus"].size()),
                  model_text.empty() ? "-" : model_text,
                  fmt::format("{}/{}", FormatCpuMillis(free["cpu_millis"].get<std::int64_t>()),
                              FormatCpuMillis(node["cpu_millis"].get<std::int64_t>())),
                  fmt::format("{}/{}", FormatBytesApprox(free["memory_bytes"].get<std::int64_t>()),
                              FormatBytesApprox(node["memory_bytes"].get<std::int64_t>())),
                  labels.empty() ? "-" : labels, taints.empty() ? "-" : taints,
                  node["remote"].get<bool>() ? "remote" : "embedded",
                  NodeConditionsText(node, now)});
  }
  std::cout << table.Render();
  return 0;
}

}  // namespace drover::cli
