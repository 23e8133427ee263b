#pragma once

// The HTTP API's route table (docs/api.md): every endpoint as data, method + path pattern ->
// handler, in one place. The server registers each route with its listener
// (server/http_server.cc); a check that must run before every handler (authorization) belongs
// in Handle, and tests enumerate Routes().

#include <span>
#include <string_view>

#include "drover/api/request.h"
#include "drover/api/service.h"
#include "drover/common/result.h"

namespace drover::api {

enum class Method { kGet, kPost, kDelete };

// "GET", "POST", "DELETE".
std::string_view MethodName(Method method);

// A handler answers a request that matched its route; an error becomes ErrorResponse (Handle).
using Handler = Result<Response> (*)(Service& service, const Request& request);

struct Route {
  Method method;
  // An ECMAScript regular expression matched against the whole path; its groups are the
  // request's path_params.
  std::string_view pattern;
  Handler handler;
};

// Every route, in the order the server registers them.
std::span<const Route> Routes();

// Runs the route's handler on `request` and answers its error as ErrorResponse.
Response Handle(const Route& route, Service& service, const Request& request);

}  // namespace drover::api
