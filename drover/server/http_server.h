#pragma once

// HttpServer: the HTTP API (docs/api.md) over a ControlPlane, a thin adapter between
// cpp-httplib and the API's route table (api/routes.h): each request becomes an api::Request,
// its route's handler answers over a ControlPlaneService, and the api::Response goes back.
// Every error, including an unknown endpoint and an exception, is JSON {code, message, details}
// with the matching status.

#include <memory>
#include <string>
#include <thread>

#include "drover/common/result.h"
#include "drover/server/api_service.h"
#include "drover/server/control_plane.h"

namespace httplib {
class Server;
}

namespace drover::server {

class HttpServer {
 public:
  // Binds `host:port` (port 0: any free port) without serving yet: connections wait until
  // Serve(). Lets the caller learn the port (for DROVER_SERVER) before the control plane starts.
  static Result<std::unique_ptr<HttpServer>> Bind(ControlPlane& plane, const std::string& host,
                                                  int port);
  // Serves on a thread pool until Stop().
  void Serve();
  // Bind, then Serve.
  static Result<std::unique_ptr<HttpServer>> Start(ControlPlane& plane, const std::string& host,
                                                   int port);
  ~HttpServer();

  int port() const { return port_; }
  void Stop();

 private:
  explicit HttpServer(ControlPlane& plane);
  // Registers every route of api::Routes() and the error and exception handlers.
  void Routes();

  ControlPlaneService service_;
  std::unique_ptr<httplib::Server> http_;
  int port_ = 0;
  std::thread thread_;
};

}  // namespace drover::server
