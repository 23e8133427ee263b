#include "drover/server/http_server.h"

#include <fmt/format.h>
#include <httplib.h>

#include <charconv>
#include <nlohmann/json.hpp>
#include <optional>

#include "drover/api/views.h"
#include "drover/codec/json.h"

namespace drover::server {
namespace {

using nlohmann::json;

constexpr DurationMs kMaxWaitMs = 30'000;

void SendJson(httplib::Response& res, int status, const json& body) {
  res.status = status;
  res.set_content(codec::DumpJson(body), "application/json");
}

void SendError(httplib::Response& res, const Error& error) {
  SendJson(res, api::HttpStatusFor(error.code), api::ErrorBody(error));
}

// Integer query parameter `name`, `fallback` when absent; an error names the parameter.
Result<std::int64_t> IntParam(const httplib::Request& req, const std::string& name,
                              std::int64_t fallback) {
  if (!req.has_param(name.c_str())) return fallback;
  std::string text = req.get_param_value(name.c_str());
  std::int64_t value = 0;
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (ec != std::errc() || end != text.data() + text.size()) {
    return InvalidArgument(
        fmt::format("query parameter {}: expected an integer, got '{}'", name, text));
  }
  return value;
}

// The id in the path; an id that cannot be one is kNotFound naming `what` ("job", "pipeline
// run").
Result<JobId> PathJobId(const httplib::Request& req, std::string_view what = "job") {
  const std::string text = req.matches[1];
  std::int64_t value = 0;
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (ec != std::errc() || end != text.data() + text.size() || value <= 0) {
    return NotFound(fmt::format("{} {} does not exist", what, text));
  }
  return JobId(value);
}

// The jobs of the pipeline run named in the path.
Result<std::vector<model::Job>> PathPipelineRun(const ControlPlane& plane,
                                                const httplib::Request& req) {
  auto id = PathJobId(req, "pipeline run");
  if (!id) return tl::unexpected(id.error());
  return plane.PipelineRun(*id);
}

// GET /v1/policy and a successful POST /v1/policy/reload.
json PolicyBody(const PolicyStatus& status) {
  return json{
      {"policy", codec::ToJson(status.policy)},
      {"file", status.file},
      {"loaded_at", status.loaded_at},
      {"reload_error", status.reload_error ? api::ErrorBody(*status.reload_error) : json(nullptr)}};
}

Result<json> ParseBody(const httplib::Request& req) {
  auto parsed = codec::ParseJson(req.body);
  if (!parsed) return InvalidArgument("request body: " + parsed.error().message);
  return parsed;
}

// The body of POST /v1/jobs/{id}/report.
struct ProgressReport {
  bool useful_work_began = false;
  std::optional<double> progress;
};

// Errors are kInvalidArgument naming the field.
Result<ProgressReport> ParseProgressReport(const httplib::Request& req) {
  auto body = ParseBody(req);
  if (!body) return tl::unexpected(body.error());
  if (!body->is_object()) return InvalidArgument("request body: expected a JSON object");
  ProgressReport report;
  for (const auto& [field, value] : body->items()) {
    if (field == "useful_work_began") {
      if (!value.is_boolean()) return InvalidArgument("useful_work_began: expected true or false");
      report.useful_work_began = value.get<bool>();
    } else if (field == "progress") {
      if (!value.is_number()) return InvalidArgument("progress: expected a number from 0 to 1");
      report.progress = value.get<double>();
    } else {
      return InvalidArgument(
          fmt::format("{}: unknown field; a report has useful_work_began and/or progress", field));
    }
  }
  if (!report.useful_work_began && !report.progress) {
    return InvalidArgument(
        "request body: nothing to report; send useful_work_began: true and/or progress");
  }
  return report;
}

}  // namespace

HttpServer::HttpServer(ControlPlane& plane)
    : plane_(plane), http_(std::make_unique<httplib::Server>()) {}

HttpServer::~HttpServer() { Stop(); }

Result<std::unique_ptr<HttpServer>> HttpServer::Bind(ControlPlane& plane, const std::string& host,
                                                     int port) {
  std::unique_ptr<HttpServer> server(new HttpServer(plane));
  server->Routes();
  server->http_->new_task_queue = [] { return new httplib::ThreadPool(32); };
  server->http_->set_tcp_nodelay(true);
  if (port == 0) {
    server->port_ = server->http_->bind_to_any_port(host);
    if (server->port_ <= 0) return Unavailable(fmt::format("cannot listen on {}:0", host));
  } else {
    if (!server->http_->bind_to_port(host, port)) {
      return Unavailable(
          fmt::format("cannot listen on {}:{} (in use, or not an address here)", host, port));
    }
    server->port_ = port;
  }
  return server;
}

void HttpServer::Serve() {
  httplib::Server* http = http_.get();
  thread_ = std::thread([http] { http->listen_after_bind(); });
}

Result<std::unique_ptr<HttpServer>> HttpServer::Start(ControlPlane& plane, const std::string& host,
                                                      int port) {
  auto server = Bind(plane, host, port);
  if (server) (*server)->Serve();
  return server;
}

void HttpServer::Stop() {
  if (thread_.joinable()) {
    http_->stop();
    thread_.join();
  }
}

void HttpServer::Routes() {
  httplib::Server& http = *http_;
  ControlPlane& plane = plane_;

  http.set_error_handler([](const httplib::Request& req, httplib::Response& res) {
    if (!res.body.empty()) return;
    ErrorCode code = res.status == 404 ? ErrorCode::kNotFound : ErrorCode::kInvalidArgument;
    std::string message = res.status == 404
                              ? fmt::format("no such endpoint: {} {}", req.method, req.path)
                              : fmt::format("request failed with HTTP {}", res.status);
    int status = res.status;
    SendJson(res, status, api::ErrorBody(Error{code, message, {}}));
  });
  http.set_exception_handler(
      [](const httplib::Request&, httplib::Response& res, std::exception_ptr ep) {
        std::string what = "unknown error";
        try {
          if (ep) std::rethrow_exception(ep);
        } catch (const std::exception& e) {
          what = e.what();
        } catch (...) {
        }
        SendError(res, Error{ErrorCode::kInternal, what, {}});
      });

  http.Get("/v1/health", [&plane](const httplib::Request&, httplib::Response& res) {
    SendJson(res, 200, json{{"status", "ok"}, {"time", plane.Now()}});
  });

  http.Post("/v1/jobs", [&plane](const httplib::Request& req, httplib::Response& res) {
    spec::ParseOptions options;
    options.file_name = req.has_header("X-Drover-File") ? req.get_header_value("X-Drover-File")
                                                        : std::string("<request>");
    options.base_dir = req.get_header_value("X-Drover-Base-Dir");
    std::string owner = req.get_header_value("X-Drover-User");
    auto submitted =
        plane.Submit(req.body, options, req.get_header_value("Idempotency-Key"), owner);
    if (!submitted) return SendError(res, submitted.error());
    // From what Submit returned: one GetJob per job would wait for mu_ each time, which the
    // control loop holds while it launches workers (tens of ms each).
    json jobs = json::array();
    for (const SubmittedJob& job : submitted->jobs) {
      jobs.push_back(json{
          {"id", job.id.value()}, {"name", job.name}, {"state", model::JobStateName(job.state)}});
    }
    SendJson(res, submitted->existing ? 200 : 201,
             json{{"jobs", jobs}, {"existing", submitted->existing}});
  });

  http.Get("/v1/jobs", [&plane](const httplib::Request& req, httplib::Response& res) {
    store::JobFilter filter;
    if (req.has_param("state")) {
      filter.state = model::ParseJobState(req.get_param_value("state"));
      if (!filter.state) {
        return SendError(res, Error{ErrorCode::kInvalidArgument,
                                    "query parameter state: unknown state '" +
                                        req.get_param_value("state") + "'",
                                    {}});
      }
    }
    filter.owner = req.get_param_value("owner");
    filter.team = req.get_param_value("team");
    filter.queue = req.get_param_value("queue");
    filter.name = req.get_param_value("name");
    filter.active_only = req.get_param_value("active") == "1";
    auto limit = IntParam(req, "limit", 0);
    if (!limit) return SendError(res, limit.error());
    filter.limit = static_cast<int>(*limit);
    json jobs = json::array();
    TimeMs now = plane.Now();
    for (const model::Job& job : plane.ListJobs(filter)) jobs.push_back(api::JobSummary(job, now));
    SendJson(res, 200, json{{"jobs", jobs}});
  });

  http.Get(R"(/v1/jobs/(\d+))", [&plane](const httplib::Request& req, httplib::Response& res) {
    auto id = PathJobId(req);
    if (!id) return SendError(res, id.error());
    auto job = plane.GetJob(*id);
    if (!job) return SendError(res, job.error());
    auto transitions = plane.Transitions(*id);
    if (!transitions) return SendError(res, transitions.error());
    SendJson(res, 200, api::JobDetail(*job, *transitions, plane.Now()));
  });

  http.Post(
      R"(/v1/jobs/(\d+)/cancel)", [&plane](const httplib::Request& req, httplib::Response& res) {
        auto id = PathJobId(req);
        if (!id) return SendError(res, id.error());
        std::string user = req.get_header_value("X-Drover-User");
        Status cancelled = plane.Cancel(*id, user.empty() ? "cancelled" : "cancelled by " + user);
        if (!cancelled) return SendError(res, cancelled.error());
        auto job = plane.GetJob(*id);
        if (!job) return SendError(res, job.error());
        SendJson(res, 200, api::JobSummary(*job, plane.Now()));
      });

  http.Get(R"(/v1/jobs/(\d+)/explain)",
           [&plane](const httplib::Request& req, httplib::Response& res) {
             auto id = PathJobId(req);
             if (!id) return SendError(res, id.error());
             auto explanation = plane.Explain(*id);
             if (!explanation) return SendError(res, explanation.error());
             SendJson(res, 200, api::ExplanationView(*id, *explanation));
           });

  http.Get(R"(/v1/jobs/(\d+)/decisions)",
           [&plane](const httplib::Request& req, httplib::Response& res) {
             auto id = PathJobId(req);
             if (!id) return SendError(res, id.error());
             auto decisions = plane.Decisions(*id);
             if (!decisions) return SendError(res, decisions.error());
             SendJson(res, 200, api::DecisionsView(*decisions));
           });

  http.Post(R"(/v1/jobs/(\d+)/checkpoint)",
            [&plane](const httplib::Request& req, httplib::Response& res) {
              auto id = PathJobId(req);
              if (!id) return SendError(res, id.error());
              TimeMs at = 0;
              Status recorded = plane.ReportCheckpoint(*id, &at);
              if (!recorded) return SendError(res, recorded.error());
              SendJson(res, 200, json{{"job", id->value()}, {"checkpoint_at", at}});
            });

  http.Post(R"(/v1/jobs/(\d+)/report)",
            [&plane](const httplib::Request& req, httplib::Response& res) {
              auto id = PathJobId(req);
              if (!id) return SendError(res, id.error());
              auto report = ParseProgressReport(req);
              if (!report) return SendError(res, report.error());
              auto attempt = plane.ReportProgress(*id, report->useful_work_began, report->progress);
              if (!attempt) return SendError(res, attempt.error());
              json body = {{"job", id->value()}, {"attempt", attempt->number}};
              body.update(api::GoodputView(*attempt));
              SendJson(res, 200, body);
            });

  http.Get("/v1/pipelines", [&plane](const httplib::Request&, httplib::Response& res) {
    json runs = json::array();
    const TimeMs now = plane.Now();
    for (const std::vector<model::Job>& run : plane.PipelineRuns()) {
      runs.push_back(api::PipelineSummary(run, now));
    }
    SendJson(res, 200, json{{"pipelines", runs}});
  });

  http.Get(R"(/v1/pipelines/(\d+))", [&plane](const httplib::Request& req, httplib::Response& res) {
    auto run = PathPipelineRun(plane, req);
    if (!run) return SendError(res, run.error());
    SendJson(res, 200, api::PipelineDetail(*run, plane.Now()));
  });

  http.Post(R"(/v1/pipelines/(\d+)/cancel)", [&plane](const httplib::Request& req,
                                                      httplib::Response& res) {
    auto run = PathPipelineRun(plane, req);
    if (!run) return SendError(res, run.error());
    const JobId id = run->front().pipeline_run;
    json before = api::PipelineSummary(*run, plane.Now());
    if (before["finished_at"].get<TimeMs>() != 0) {
      return SendError(res, Error{ErrorCode::kFailedPrecondition,
                                  fmt::format("pipeline run {} has already finished ({})",
                                              id.value(), before["state"].get<std::string>()),
                                  {}});
    }
    std::string user = req.get_header_value("X-Drover-User");
    Status cancelled = plane.CancelPipeline(
        id, user.empty() ? "pipeline cancelled" : "pipeline cancelled by " + user);
    if (!cancelled) return SendError(res, cancelled.error());
    auto after = plane.PipelineRun(id);
    if (!after) return SendError(res, after.error());
    SendJson(res, 200, api::PipelineSummary(*after, plane.Now()));
  });

  http.Get("/v1/goodput", [&plane](const httplib::Request& req, httplib::Response& res) {
    auto since = IntParam(req, "since", 0);
    if (!since) return SendError(res, since.error());
    const std::string by = req.has_param("by") ? req.get_param_value("by") : "queue";
    auto report = api::GoodputReport(plane.ListJobs(store::JobFilter{}), by, *since, plane.Now());
    if (!report) return SendError(res, report.error());
    SendJson(res, 200, *report);
  });

  http.Get("/v1/queues", [&plane](const httplib::Request&, httplib::Response& res) {
    json queues = json::array();
    for (const control::QueueReport& report : plane.Queues()) {
      queues.push_back(api::QueueView(report));
    }
    SendJson(res, 200, json{{"queues", queues}, {"policy", codec::ToJson(plane.Policy())}});
  });

  http.Get("/v1/policy", [&plane](const httplib::Request&, httplib::Response& res) {
    SendJson(res, 200, PolicyBody(plane.PolicyInfo()));
  });

  http.Post("/v1/policy/reload", [&plane](const httplib::Request&, httplib::Response& res) {
    Status reloaded = plane.ReloadPolicy();
    if (!reloaded) return SendError(res, reloaded.error());
    SendJson(res, 200, PolicyBody(plane.PolicyInfo()));
  });

  http.Get(R"(/v1/jobs/(\d+)/logs)", [&plane](const httplib::Request& req, httplib::Response& res) {
    auto id = PathJobId(req);
    if (!id) return SendError(res, id.error());
    auto attempt = IntParam(req, "attempt", 0);
    auto rank = IntParam(req, "rank", 0);
    auto offset = IntParam(req, "offset", 0);
    auto wait_ms = IntParam(req, "wait_ms", 0);
    for (const auto* param : {&attempt, &rank, &offset, &wait_ms}) {
      if (!*param) return SendError(res, param->error());
    }
    std::string stream = req.has_param("stream") ? req.get_param_value("stream") : "stdout";
    constexpr std::int64_t kMaxChunk = 1 << 20;
    // Long poll: wait for output (or the worker's end) up to wait_ms.
    std::uint64_t seen = plane.version();
    TimeMs deadline = plane.Now() + std::min<DurationMs>(*wait_ms, kMaxWaitMs);
    while (true) {
      auto chunk = plane.ReadLog(*id, static_cast<int>(*attempt), static_cast<int>(*rank), stream,
                                 *offset, kMaxChunk);
      if (!chunk) return SendError(res, chunk.error());
      if (!chunk->data.empty() || chunk->finished || plane.Now() >= deadline) {
        res.set_header("X-Drover-Next-Offset", std::to_string(chunk->next_offset));
        res.set_header("X-Drover-Finished", chunk->finished ? "1" : "0");
        res.status = 200;
        res.set_content(chunk->data, "text/plain; charset=utf-8");
        return;
      }
      seen = plane.WaitForChange(seen, 100);
    }
  });

  http.Post("/v1/crons", [&plane](const httplib::Request& req, httplib::Response& res) {
    auto body = ParseBody(req);
    if (!body) return SendError(res, body.error());
    auto spec = codec::CronSpecFromJson(*body, "request.body");
    if (!spec) return SendError(res, spec.error());
    auto status = plane.PutCron(*spec, req.get_header_value("X-Drover-User"));
    if (!status) return SendError(res, status.error());
    SendJson(res, 200, CronView(*status));
  });

  http.Get("/v1/crons", [&plane](const httplib::Request&, httplib::Response& res) {
    json crons = json::array();
    for (const CronStatus& status : plane.Crons()) crons.push_back(CronView(status));
    SendJson(res, 200, json{{"crons", crons}});
  });

  http.Delete(R"(/v1/crons/([^/]+))",
              [&plane](const httplib::Request& req, httplib::Response& res) {
                Status deleted = plane.DeleteCron(req.matches[1]);
                if (!deleted) return SendError(res, deleted.error());
                SendJson(res, 200, json{{"deleted", req.matches[1].str()}});
              });

  http.Get("/v1/nodes", [&plane](const httplib::Request&, httplib::Response& res) {
    json nodes = json::array();
    for (const NodeStatus& status : plane.Nodes()) {
      json view = api::NodeView(status.node, status.free, status.free_gpus);
      view["remote"] = status.remote;
      view["state"] = status.lost ? "lost" : "ready";
      if (status.remote) view["last_heard_at"] = status.last_heard_at;
      nodes.push_back(view);
    }
    SendJson(res, 200, json{{"nodes", nodes}});
  });

  http.Post("/v1/agents/register", [&plane](const httplib::Request& req, httplib::Response& res) {
    auto body = ParseBody(req);
    if (!body) return SendError(res, body.error());
    auto node = codec::NodeFromJson(*body);
    if (!node) return SendError(res, node.error());
    Status registered = plane.RegisterRemoteNode(*node);
    if (!registered) return SendError(res, registered.error());
    SendJson(res, 200, json{{"node", node->name.value()}});
  });

  http.Get(R"(/v1/agents/([^/]+)/commands)",
           [&plane](const httplib::Request& req, httplib::Response& res) {
             auto wait_ms = IntParam(req, "wait_ms", 0);
             if (!wait_ms) return SendError(res, wait_ms.error());
             auto commands = plane.TakeCommands(NodeId(req.matches[1]),
                                                std::clamp<DurationMs>(*wait_ms, 0, kMaxWaitMs));
             if (!commands) return SendError(res, commands.error());
             json out = json::array();
             for (const AgentCommand& command : *commands) out.push_back(ToJson(command));
             SendJson(res, 200, json{{"commands", out}});
           });

  http.Post(R"(/v1/agents/([^/]+)/events)", [&plane](const httplib::Request& req,
                                                     httplib::Response& res) {
    auto body = ParseBody(req);
    if (!body) return SendError(res, body.error());
    if (!body->is_object() || !body->contains("events") || !(*body)["events"].is_array()) {
      return SendError(
          res,
          Error{ErrorCode::kInvalidArgument, "request body: expected {\"events\": [...]}", {}});
    }
    std::vector<model::WorkerEvent> events;
    for (const json& item : (*body)["events"]) {
      auto event = codec::WorkerEventFromJson(item);
      if (!event) return SendError(res, event.error());
      events.push_back(*std::move(event));
    }
    Status reported = plane.ReportEvents(NodeId(req.matches[1]), std::move(events));
    if (!reported) return SendError(res, reported.error());
    SendJson(res, 200, json{{"accepted", true}});
  });
}

}  // namespace drover::server
