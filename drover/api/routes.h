#pragma once

// The HTTP API's route table (docs/api.md): every endpoint as data, method + path pattern ->
// handler, in one place. The server's listener hands every request to Serve (Resolve tells it
// which lane answers it first: server/http_server.cc); a check that must run before every
// handler (authorization) belongs in Handle, and tests enumerate Routes().

#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "drover/api/request.h"
#include "drover/api/service.h"
#include "drover/common/result.h"

namespace drover::api {

enum class Method { kGet, kPost, kDelete };

// "GET", "POST", "DELETE".
std::string_view MethodName(Method method);

// A handler answers a request that matched its route; an error becomes ErrorResponse (Handle).
using Handler = Result<Response> (*)(Service& service, const Request& request);

// How a route's handler spends its time: the server gives each kind its own threads.
enum class RouteKind {
  kPlain,     // answers at once
  kLongPoll,  // waits up to its wait_ms query parameter for something to answer
  kAgent,     // the agent protocol (a long poll among them): never queued behind users
};

struct Route {
  Method method;
  // An ECMAScript regular expression matched against the whole path; its groups are the
  // request's path_params.
  std::string_view pattern;
  Handler handler;
  RouteKind kind = RouteKind::kPlain;
  // What the body must hold, for the message when it is missing; empty: the route reads none.
  std::string_view body = {};
};

// Every route, in the order they are matched.
std::span<const Route> Routes();

// The route of `method` and `path`: `route` with the pattern's captures in `params`; without
// one, `allowed` lists the methods of the routes whose pattern matches `path` (none: no such
// path). Thread-safe.
struct Resolution {
  const Route* route = nullptr;
  std::vector<std::string> params;
  std::vector<Method> allowed;
};
Resolution Resolve(std::string_view method, const std::string& path);

// Answers `request` as a whole: its route's handler (Handle); 404 for an unknown path, 405 with
// an Allow header for a method the path does not take, 400 naming what the body must hold when
// a route that reads one got none. Every error is ErrorResponse's JSON. Thread-safe as far as
// `service` is.
Response Serve(Service& service, Request request);

// Runs the route's handler on `request` and answers its error as ErrorResponse.
Response Handle(const Route& route, Service& service, const Request& request);

}  // namespace drover::api
