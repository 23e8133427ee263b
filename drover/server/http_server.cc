#include "drover/server/http_server.h"

#include <fmt/format.h>
#include <httplib.h>

#include <exception>
#include <string>

#include "drover/api/request.h"
#include "drover/api/routes.h"
#include "drover/api/views.h"

namespace drover::server {
namespace {

// The api::Request of `req`, which matched a route: its captures become path_params.
api::Request ToApiRequest(const httplib::Request& req) {
  api::Request request;
  request.method = req.method;
  request.path = req.path;
  for (std::size_t i = 1; i < req.matches.size(); ++i) {
    request.path_params.push_back(req.matches[i]);
  }
  for (const auto& [name, value] : req.params) request.query.emplace(name, value);
  for (std::string_view name : api::kRequestHeaders) {
    const std::string key(name);
    if (req.has_header(key)) request.headers[key] = req.get_header_value(key);
  }
  request.body = req.body;
  return request;
}

void Send(const api::Response& response, httplib::Response& res) {
  res.status = response.status;
  for (const auto& [name, value] : response.headers) res.set_header(name, value);
  res.set_content(response.body, response.content_type);
}

}  // namespace

HttpServer::HttpServer(ControlPlane& plane)
    : service_(plane), http_(std::make_unique<httplib::Server>()) {}

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

  http.set_error_handler([](const httplib::Request& req, httplib::Response& res) {
    if (!res.body.empty()) return;
    ErrorCode code = res.status == 404 ? ErrorCode::kNotFound : ErrorCode::kInvalidArgument;
    std::string message = res.status == 404
                              ? fmt::format("no such endpoint: {} {}", req.method, req.path)
                              : fmt::format("request failed with HTTP {}", res.status);
    Send(api::JsonResponse(res.status, api::ErrorBody(Error{code, message, {}})), res);
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
        Send(api::ErrorResponse(Error{ErrorCode::kInternal, what, {}}), res);
      });

  for (const api::Route& route : api::Routes()) {
    auto handler = [this, &route](const httplib::Request& req, httplib::Response& res) {
      Send(api::Handle(route, service_, ToApiRequest(req)), res);
    };
    const std::string pattern(route.pattern);
    switch (route.method) {
      case api::Method::kGet:
        http.Get(pattern, handler);
        break;
      case api::Method::kPost:
        http.Post(pattern, handler);
        break;
      case api::Method::kDelete:
        http.Delete(pattern, handler);
        break;
    }
  }
}

}  // namespace drover::server
