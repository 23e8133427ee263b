#pragma once

// The HTTP API's requests and responses as plain values (no sockets), and the helpers every
// handler uses to read a request and to answer: the server's transport (server/http_front.cc)
// parses requests into these and writes responses from them, and handler tests build them
// directly.

#include <cstdint>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "drover/common/clock.h"
#include "drover/common/ids.h"
#include "drover/common/result.h"
#include "drover/model/identity.h"

namespace drover::api {

// The request headers the handlers read; the adapter copies these and no others.
inline constexpr std::string_view kFileHeader = "X-Drover-File";
inline constexpr std::string_view kBaseDirHeader = "X-Drover-Base-Dir";
inline constexpr std::string_view kIdempotencyKeyHeader = "Idempotency-Key";
inline constexpr std::string_view kHoldInfeasibleHeader = "X-Drover-Hold-Infeasible";
// Dependencies on earlier jobs for every job of a submission (`drover submit --after`):
// spec::ParseAfterList's syntax, "12:ok, 13:any".
inline constexpr std::string_view kAfterHeader = "X-Drover-After";
// "Bearer CREDENTIAL": a user's or job's token, or an agent's node credential
// (docs/security.md).
inline constexpr std::string_view kAuthorizationHeader = "Authorization";
// The server's join token, on an agent's first registration of a node (--join-token-file).
inline constexpr std::string_view kJoinTokenHeader = "X-Drover-Join-Token";
// The id of the last event an EventSource had, when it reconnects (GET /v1/events).
inline constexpr std::string_view kLastEventIdHeader = "Last-Event-ID";
inline constexpr std::string_view kRequestHeaders[] = {
    kFileHeader,  kBaseDirHeader,       kIdempotencyKeyHeader, kHoldInfeasibleHeader,
    kAfterHeader, kAuthorizationHeader, kJoinTokenHeader,      kLastEventIdHeader};

// The longest a long poll (logs, agent commands) waits; a longer wait_ms is cut to it.
inline constexpr DurationMs kMaxLongPollMs = 30 * kMillisPerSecond;

// Who sent a request, as Authorize (routes.h) found from its credentials before any handler
// ran.
struct Caller {
  std::optional<model::Identity> identity;  // the user or job whose token it carried
  std::string target_team;      // the team of the job, pipeline run, cron job or secret acted on
  bool bearer = false;          // the request carried Authorization: Bearer
  std::optional<NodeId> agent;  // the node whose agent credential it carried
  bool joined = false;          // it carried the join token, or the server requires none
};

struct Request {
  std::string method;  // "GET", "POST", "DELETE"
  std::string path;
  std::vector<std::string> path_params;        // the route pattern's captures, in order
  std::map<std::string, std::string> query;    // a repeated parameter keeps its first value
  std::map<std::string, std::string> headers;  // those of kRequestHeaders that were sent
  std::string body;
  std::string peer;  // the client's address, for the audit log ("" in tests)
  // Set by a transport that can hold the request without a thread and run its handler again
  // (server/http_front.h): the handler may then answer Parked instead of waiting. false (tests,
  // a re-run at the park's deadline): the handler answers at once.
  bool may_park = false;
  Caller caller;  // set by Authorize; empty for routes open to anyone

  // The query parameter `name`, or `fallback` when absent.
  std::string Query(const std::string& name, const std::string& fallback = "") const;
  bool HasQuery(const std::string& name) const { return query.count(name) > 0; }
  // The header `name` (one of kRequestHeaders), or "" when absent.
  std::string Header(std::string_view name) const;
  bool HasHeader(std::string_view name) const;
};

// "Not yet": the transport holds the request, without a thread, and runs its handler again when
// WakeParked(key) is called for `key` (with may_park still set) or when wait_ms has passed since
// it was first parked (with may_park false, so the handler then answers).
struct Park {
  std::string key;
  DurationMs wait_ms = 0;
};

// The body of a streaming response (Server-Sent Events, GET /v1/events): the transport sends the
// response's head and `body`, then appends what Pull gives, as the stream has it, until Pull says
// it has ended or the client goes. The transport calls Pull and Heartbeat from one thread at a
// time; an implementation's own state is otherwise its business.
class StreamBody {
 public:
  virtual ~StreamBody() = default;
  // Appends what is ready to `out`, stopping once `out` holds about `max_bytes` more; false when
  // the stream has ended (after appending its last bytes: the transport closes the connection
  // once they are sent). With max_bytes 0, appends nothing but the last bytes of a stream that
  // has just ended: how the transport learns that a reader whose buffer is full must go.
  virtual bool Pull(std::string& out, std::size_t max_bytes) = 0;
  // Bytes that tell the client the stream is alive and carry nothing (an SSE comment).
  virtual std::string Heartbeat() const = 0;
};

struct Response {
  int status = 200;
  std::string body;
  std::string content_type;
  std::map<std::string, std::string> headers;  // extra response headers (X-Drover-*)
  std::optional<Park> park;                    // set only by Parked, for a request that may_park
  // Set for a streaming response: `body` is its first bytes, then the stream's. Shared: a
  // Response is a value that is copied, and the transport keeps the stream while it sends.
  std::shared_ptr<StreamBody> stream;
};

// A parked answer (Park) under `key` for at most `wait_ms`.
Response Parked(std::string key, DurationMs wait_ms);

// `body` as application/json with `status`.
Response JsonResponse(int status, const nlohmann::json& body);
// The error's status (HttpStatusFor) with the body {code, message, details} (ErrorBody).
Response ErrorResponse(const Error& error);

// The identity Authorize found for a route open to tokens; kUnauthenticated when there is none
// (a handler run without Handle).
Result<model::Identity> CallerIdentity(const Request& request);

// `text` as a whole decimal integer (no sign but '-', no spaces); nullopt otherwise.
std::optional<std::int64_t> ParseInt(std::string_view text);

// Integer query parameter `name`, `fallback` when absent. kInvalidArgument naming the parameter
// when it is not an integer.
Result<std::int64_t> IntQuery(const Request& request, const std::string& name,
                              std::int64_t fallback);

// Path parameter `index` as a job id; one that cannot be an id (not a positive integer) is
// kNotFound naming `what` ("job", "pipeline run"), as an unknown id would be.
Result<JobId> PathJobId(const Request& request, std::string_view what = "job", int index = 0);

// The body as JSON. kInvalidArgument "request body: ..." when it does not parse.
Result<nlohmann::json> JsonBody(const Request& request);

}  // namespace drover::api
