#include "drover/server/http_server.h"

#include <fmt/format.h>

#include <exception>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <utility>

#include "drover/api/agent_handlers.h"
#include "drover/api/request.h"
#include "drover/api/routes.h"

namespace drover::server {
namespace {

// The answer of a standby (HttpServer::SetStandby) to every request: 503 {code: "standby",
// message, details, leader} with the leader's URL in X-Drover-Leader too (when known).
api::Response StandbyResponse(const std::string& leader) {
  nlohmann::json body = nlohmann::json::object();
  body["code"] = "standby";
  body["message"] = fmt::format("this server is a standby; the leader is {}",
                                leader.empty() ? std::string_view("not known yet") : leader);
  body["details"] = nlohmann::json::array();
  body["leader"] = leader;
  api::Response response = api::JsonResponse(503, body);
  if (!leader.empty()) response.headers.emplace("X-Drover-Leader", leader);
  response.headers.emplace("Retry-After", "1");
  return response;
}

}  // namespace

// The API's routes as the front's handler: the lane follows the route's kind.
class HttpServer::Handler final : public HttpHandler {
 public:
  explicit Handler(ControlPlane& plane) : plane_(plane), service_(plane) {}

  Lane LaneFor(const api::Request& request) const override {
    api::Resolution resolution = api::Resolve(request.method, request.path);
    if (!resolution.route) return Lane::kShort;
    switch (resolution.route->kind) {
      case api::RouteKind::kInstant:
        return Lane::kInline;
      case api::RouteKind::kPlain:
        return Lane::kShort;
      case api::RouteKind::kLongPoll:
        return request.Query("wait_ms", "0") == "0" ? Lane::kShort : Lane::kLongPoll;
      case api::RouteKind::kAgent:
        return Lane::kAgent;
    }
    return Lane::kShort;
  }

  // Answers `request` and counts it by its route's method and pattern (never its raw path or
  // method: a client's bytes would make the label set unbounded), once: a parked long poll when
  // it is finally answered.
  api::Response Serve(const api::Request& request) override {
    const api::Route* route = nullptr;
    api::Response response;
    if (std::optional<std::string> leader = StandbyLeader()) {
      // GET /metrics is a standby's one answer: drover_leader 0 (no other series, nothing a
      // token would guard; the 503 answers name the leader to anyone too), for Prometheus.
      if (request.method == "GET" && request.path == "/metrics") {
        response.status = 200;
        response.body = plane_.metrics().RenderElection();
        response.content_type = "text/plain; version=0.0.4; charset=utf-8";
      } else {
        response = StandbyResponse(*leader);
      }
    } else {
      try {
        response = api::Serve(service_, request, &route);
      } catch (const std::exception& e) {
        response = api::ErrorResponse(Error{ErrorCode::kInternal, e.what(), {}});
      }
    }
    if (response.park) return response;  // counted once answered: a resumed park is served again
    if (route) {
      plane_.metrics().CountRequest(api::MethodName(route->method), api::RouteLabel(*route),
                                    response.status);
    } else {
      plane_.metrics().CountRequest("other", "unmatched", response.status);
    }
    return response;
  }

  void SetStandby(std::optional<std::string> leader) {
    MutexLock lock(mu_);
    standby_leader_ = std::move(leader);
  }

 private:
  std::optional<std::string> StandbyLeader() const {
    MutexLock lock(mu_);
    return standby_leader_;
  }

  ControlPlane& plane_;
  ControlPlaneService service_;
  mutable Mutex mu_;
  std::optional<std::string> standby_leader_ GUARDED_BY(mu_);
};

HttpServer::HttpServer(ControlPlane& plane)
    : plane_(plane), handler_(std::make_unique<Handler>(plane)) {}

HttpServer::~HttpServer() { Stop(); }

Result<std::unique_ptr<HttpServer>> HttpServer::Bind(ControlPlane& plane, const std::string& host,
                                                     int port, const HttpOptions& options) {
  std::unique_ptr<HttpServer> server(new HttpServer(plane));
  DROVER_ASSIGN_OR_RETURN(server->front_,
                          HttpFront::Bind(*server->handler_, options.limits, host, port,
                                          options.agent_host, options.agent_port, options.tls));
  // A command queued for a node wakes its agent's parked poll.
  plane.SetAgentWaker([front = server->front_.get()](const NodeId& node) {
    front->WakeParked(api::AgentCommandsWakeKey(node));
  });
  // A published event wakes the streams of GET /v1/events.
  plane.events().SetOnPublish([front = server->front_.get()] { front->WakeStreams(); });
  return server;
}

void HttpServer::Serve() { front_->Start(); }

void HttpServer::SetStandby(std::optional<std::string> leader) {
  handler_->SetStandby(std::move(leader));
}

Result<std::unique_ptr<HttpServer>> HttpServer::Start(ControlPlane& plane, const std::string& host,
                                                      int port, const HttpOptions& options) {
  auto server = Bind(plane, host, port, options);
  if (server) (*server)->Serve();
  return server;
}

void HttpServer::Stop() {
  if (!front_ || stopped_) return;
  stopped_ = true;
  plane_.SetAgentWaker(nullptr);
  plane_.events().SetOnPublish(nullptr);
  front_->Stop();
}

}  // namespace drover::server
