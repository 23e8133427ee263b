#pragma once

// The HTTP API's route table (docs/api.md): every endpoint as data, method + path pattern ->
// handler, in one place, each with who may call it. The server's listener hands every request to
// Serve (Resolve tells it which lane answers it first: server/http_server.cc); Handle runs
// Authorize, the one check of who may call a route, before any handler, and tests enumerate
// Routes().

#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "drover/api/request.h"
#include "drover/api/service.h"
#include "drover/common/result.h"
#include "drover/model/identity.h"

namespace drover::api {

enum class Method { kGet, kPost, kPut, kDelete };

// "GET", "POST", "PUT", "DELETE".
std::string_view MethodName(Method method);

// A handler answers a request that matched its route; an error becomes ErrorResponse (Handle).
using Handler = Result<Response> (*)(Service& service, const Request& request);

// How a route's handler spends its time: the server gives each kind its own threads.
enum class RouteKind {
  kInstant,   // answers at once without a lock or I/O: on the server's event thread (health)
  kPlain,     // answers at once
  kLongPoll,  // waits up to its wait_ms query parameter for something to answer
  kAgent,     // the agent protocol (a long poll among them): never queued behind users
};

// What a route's verb acts on: where Authorize finds the resource model::Decide judges.
enum class Target {
  kCluster,   // nothing in particular (queues, nodes, policy, tokens, the audit log)
  kJob,       // the job whose id is path param 0
  kPipeline,  // the pipeline run whose id is path param 0 (its first job's owner, team, queue)
  kCron,      // the cron job named by path param 0
  kService,   // the service named by path param 0 (its owner, team and queue)
  kTeam,      // the team named by path param 0 (its secrets)
  kBody,      // what the body names (a submission's queue and owner): Authorize checks only
              // that the caller may use the verb at all; the service judges each queue and
              // owner with model::Decide once the body is parsed
};

// Who may call a route (docs/security.md). Authorize is the one function that enforces it.
struct Access {
  enum class Kind {
    kUnstated,           // a route that forgot its rule: Authorize refuses every call
    kPublic,             // anyone, without a token (health, the dashboard's files)
    kToken,              // a user's or a job's token, allowed `verb` on `target` (model::Decide)
    kAgentRegistration,  // an agent with the join token (if the server has one) or a credential
    kAgentOfNode,        // the agent holding the credential of the node named by path param 0
  };
  Kind kind = Kind::kUnstated;
  model::Verb verb = model::Verb::kAdminister;  // kToken
  Target target = Target::kCluster;             // kToken
};
constexpr Access Public() { return {Access::Kind::kPublic}; }
constexpr Access ByToken(model::Verb verb, Target target = Target::kCluster) {
  return {Access::Kind::kToken, verb, target};
}
constexpr Access AgentRegistration() { return {Access::Kind::kAgentRegistration}; }
constexpr Access AgentOfNode() { return {Access::Kind::kAgentOfNode}; }

// "anyone", "a token: cancel on the job (its owner, ...)", ...: a route's rule in words, for
// docs/security.md's table (tools/ or the test that writes it) and messages.
std::string DescribeAccess(const Access& access);

struct Route {
  Method method;
  // An ECMAScript regular expression matched against the whole path; its groups are the
  // request's path_params.
  std::string_view pattern;
  Handler handler;
  Access access;  // no default: every route states who may call it
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
// an Allow header for a method the path does not take. Every error is ErrorResponse's JSON.
// `matched`, when not null, receives the route that answered (null: none did). Thread-safe as
// far as `service` is.
Response Serve(Service& service, Request request, const Route** matched = nullptr);

// `route`'s pattern as a bounded metrics label: each group written as a placeholder, (\d+) as
// {id} and any other as {name}: "/v1/jobs/{id}/logs", "/v1/teams/{name}/secrets/{name}".
std::string RouteLabel(const Route& route);

// Who sent `request` for `route` (its path_params resolved), or why they may not call it:
// kPublic: an empty Caller, nothing checked. kToken: the identity of the bearer token
// (Service::Authenticate: kUnauthenticated without one, or for one unknown, expired or revoked),
// allowed route.access.verb on the route's target by model::Decide (kPermissionDenied naming the
// verb, the resource and who may; kNotFound for a target that does not exist).
// kAgentRegistration: the node the bearer credential belongs to (none for an unknown one) and
// whether the join token was given; kUnauthenticated when neither a known credential nor the
// join token was. kAgentOfNode: kUnauthenticated without a bearer credential or with one that is
// no node's, kPermissionDenied with another node's. An Authorization header that is not
// "Bearer X" is kUnauthenticated wherever it is read. Messages name the route and the node,
// never a secret.
Result<Caller> Authorize(const Route& route, const Service& service, const Request& request);

// Authorizes `request` (Authorize, setting request.caller), refuses a missing body the route
// needs (400 naming what it takes), then runs the route's handler; answers an error of any as
// ErrorResponse.
Response Handle(const Route& route, Service& service, Request request);

}  // namespace drover::api
