#pragma once

// ApiClient: the client of the HTTP API (docs/api.md) that the CLI and remote agents use; it
// turns the API's error JSON back into an Error. Not thread-safe; one per thread.

#include <functional>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "drover/api/http_client.h"
#include "drover/common/clock.h"
#include "drover/common/result.h"

namespace drover::api {

// One Server-Sent Event of GET /v1/events (docs/api.md, "Events").
struct StreamEvent {
  std::string id;  // "" for an event without one (dropped)
  std::string type;
  std::string data;
};

struct ApiResponse {
  int status = 0;
  std::string body;
  std::map<std::string, std::string> headers;  // the few the API defines (X-Drover-*)
  nlohmann::json json;                         // the parsed body when it is JSON, else null
};

class ApiClient {
 public:
  // `base_url` is "http://host:port" or "https://host:port". Over https the server's
  // certificate must verify against `ca_file`, a PEM bundle (--ca, DROVER_CA), or, when it is
  // empty, the system's store, and must name the URL's host. Requests time out after
  // `timeout_ms`.
  // `base_url` may also list servers, "URL1,URL2" (a leader and its standbys, docs/operations.md
  // "Two servers on PostgreSQL"): a call that reaches no server or a standby (503 "standby":
  // nothing was done) is sent to the leader the standby names (X-Drover-Leader) when that URL is
  // in the list, else to the next one of the list, each at most once per call, and the client
  // stays with the one that answered. A leader hint outside the list is never followed, so the
  // bearer token goes only to servers the user configured. Events streams from the current one
  // and, with several servers, moves to another when its server dies (see Events).
  // Over https, `tls` makes the TLS session (ConnectTls, tls_client.h); without one (the lean
  // `drover`, which hands https command lines to drover-full) each call fails with
  // kUnavailable saying so. A URL that does not parse fails each call with kInvalidArgument.
  explicit ApiClient(std::string base_url, DurationMs timeout_ms = kMillisPerMinute,
                     std::string ca_file = "", TlsConnector tls = nullptr);
  ~ApiClient();
  ApiClient(ApiClient&&) noexcept;

  // A 2xx response, or the API's error: the JSON body's code and message (and details) become
  // the Error. kUnavailable with one sentence when the server cannot be reached, or, over https,
  // when its certificate does not verify, the CA bundle cannot be loaded, or it does not speak
  // TLS.
  Result<ApiResponse> Get(const std::string& path_and_query);
  // As Get, but a 2xx answer's body is not parsed (its `json` is null): for a caller that reads a
  // large answer itself (cli::ParseJobRows). An error's body is parsed as Get parses it.
  Result<ApiResponse> GetUnparsed(const std::string& path_and_query);
  Result<ApiResponse> Post(const std::string& path, const std::string& body,
                           const std::string& content_type,
                           const std::map<std::string, std::string>& headers = {});
  Result<ApiResponse> Put(const std::string& path, const std::string& body,
                          const std::string& content_type);
  Result<ApiResponse> Delete(const std::string& path);
  // Reads the event stream of `path_and_query` (GET /v1/events?...), sending `last_event_id` as
  // Last-Event-ID when it is not empty, and calls `on_event` with each event (comments are
  // skipped) until it returns false or the server ends the stream (one server; with several, see
  // below): OK either way. The API's error
  // when the server refuses the stream; kUnavailable as Get when it cannot be reached, or when
  // nothing, not even a heartbeat, arrives within the client's timeout. With several servers, a
  // stream that cannot be opened (no connection, a standby) or that ends is reopened on
  // another server (the named leader first) with Last-Event-ID the last event delivered, in
  // rounds 500 ms apart, until one streams or for the client's timeout since one last did: a
  // new leader answers such an id from its predecessor with `reset` (docs/api.md, "Events").
  Status Events(const std::string& path_and_query, const std::string& last_event_id,
                const std::function<bool(const StreamEvent&)>& on_event);

  // Typed calls (docs/api.md), each returning the response's JSON body. `job` is a job id as
  // the user typed it (it is URL-encoded; a malformed one is the server's kNotFound).
  Result<nlohmann::json> Explain(const std::string& job);     // GET /v1/jobs/{id}/explain
  Result<nlohmann::json> Decisions(const std::string& job);   // GET /v1/jobs/{id}/decisions
  Result<nlohmann::json> Checkpoint(const std::string& job);  // POST /v1/jobs/{id}/checkpoint
  // POST /v1/jobs/{id}/report with `report` as the body.
  Result<nlohmann::json> Report(const std::string& job, const nlohmann::json& report);
  Result<nlohmann::json> Pipelines();                       // GET /v1/pipelines
  Result<nlohmann::json> Pipeline(const std::string& run);  // GET /v1/pipelines/{id}
  // POST /v1/pipelines/{id}/cancel.
  Result<nlohmann::json> CancelPipeline(const std::string& run);
  // GET /v1/goodput?by=&since=: the jobs created at or after `since` (ms; 0: all).
  Result<nlohmann::json> Goodput(const std::string& by, TimeMs since = 0);
  Result<nlohmann::json> Queues();        // GET /v1/queues
  Result<nlohmann::json> Policy();        // GET /v1/policy
  Result<nlohmann::json> ReloadPolicy();  // POST /v1/policy/reload

  // Sends `Authorization: Bearer TOKEN` on every request from now on ("": none): an agent's node
  // credential (docs/security.md).
  void SetBearer(const std::string& token);
  // A sentence added to the details of every 401 answer from now on: which token was sent and
  // how to get one (the CLI's).
  void SetAuthHint(std::string hint);

  const std::string& base_url() const { return base_url_; }

 private:
  // `result` as Get, Post, Put and Delete answer it; a 2xx JSON body is parsed into `json` only
  // when `parse_success`.
  Result<ApiResponse> Convert(HttpResult<HttpResponse> result, bool parse_success = true) const;

  // Makes urls_[index] the server asked.
  void Connect(std::size_t index);
  // Sends `request` to the current server, then to the next ones while none did it (none could
  // be reached, or a standby answered).
  Result<ApiResponse> Call(HttpRequest request);
  // Sends `request` to urls_[current_] (its answer streamed to `stream` when given). A URL that
  // does not parse is kConnect, so that Call and Events ask the next server; Convert then reports
  // the URL's own error.
  HttpResult<HttpResponse> SendToCurrent(const HttpRequest& request,
                                         const ResponseStream* stream = nullptr);
  // The headers every request carries (Authorization) and `extra`.
  HttpHeaders HeadersWith(const std::map<std::string, std::string>& extra = {}) const;
  std::vector<std::string> urls_;  // the servers, in the order they are tried
  std::size_t current_ = 0;        // urls_[current_] == base_url_
  std::string base_url_;
  ConnectOptions connect_options_;
  TlsConnector tls_;
  std::string bearer_;
  std::string auth_hint_;
  // The connection to urls_[current_]; null when that URL does not parse (url_error_ says why).
  std::unique_ptr<HttpClient> client_;
  std::optional<Error> url_error_;
};

// Percent-encodes `text` for use in a query string.
std::string UrlEncode(const std::string& text);

}  // namespace drover::api
