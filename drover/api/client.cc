#include "drover/api/client.h"

#include <fmt/format.h>

#include <chrono>
#include <optional>
#include <string_view>
#include <thread>

#include "drover/common/ascii.h"

namespace drover::api {
namespace {

std::optional<ErrorCode> ParseErrorCode(const std::string& name) {
  for (ErrorCode code : kErrorCodes) {
    if (ErrorCodeName(code) == name) return code;
  }
  return std::nullopt;
}

}  // namespace

ApiClient::ApiClient(std::string base_url, DurationMs timeout_ms, std::string ca_file,
                     TlsConnector tls)
    : tls_(tls) {
  connect_options_.io_timeout_ms = timeout_ms;
  connect_options_.ca_file = std::move(ca_file);
  for (std::size_t start = 0; start <= base_url.size();) {
    std::size_t end = base_url.find(',', start);
    if (end == std::string::npos) end = base_url.size();
    if (end > start) urls_.push_back(base_url.substr(start, end - start));
    start = end + 1;
  }
  if (urls_.empty()) urls_.push_back(base_url);
  Connect(0);
}

void ApiClient::Connect(std::size_t index) {
  current_ = index;
  base_url_ = urls_[index];
  Result<ServerAddress> address = ParseServerUrl(base_url_);
  if (!address) {
    client_.reset();
    url_error_ = address.error();
    return;
  }
  url_error_.reset();
  client_ = std::make_unique<HttpClient>(*std::move(address), connect_options_, tls_);
}

HttpResult<HttpResponse> ApiClient::SendToCurrent(const HttpRequest& request,
                                                  const ResponseStream* stream) {
  if (!client_) return tl::unexpected(HttpError{HttpFailure::kConnect, url_error_->message});
  return client_->Send(request, stream);
}

HttpHeaders ApiClient::HeadersWith(const std::map<std::string, std::string>& extra) const {
  HttpHeaders headers(extra.begin(), extra.end());
  if (!bearer_.empty()) headers.emplace_back("Authorization", "Bearer " + bearer_);
  return headers;
}

namespace {

// `url` without a trailing '/', so that "http://a:1/" and "http://a:1" name the same server.
std::string_view WithoutTrailingSlash(std::string_view url) {
  while (!url.empty() && url.back() == '/') url.remove_suffix(1);
  return url;
}

// The server of `urls` to ask next, none of those `asked`: the one a standby named as the
// leader (`hint`, its X-Drover-Leader header) when it is in the list, else the next one after
// `current` in the list's order. nullopt when every server was asked. A hint that is not in the
// list is never followed: the client's token goes only to the servers its user configured.
std::optional<std::size_t> NextServer(const std::vector<std::string>& urls, std::size_t current,
                                      const std::string& hint, const std::vector<bool>& asked) {
  if (!hint.empty()) {
    for (std::size_t i = 0; i < urls.size(); ++i) {
      if (!asked[i] && WithoutTrailingSlash(urls[i]) == WithoutTrailingSlash(hint)) return i;
    }
  }
  for (std::size_t step = 1; step < urls.size(); ++step) {
    const std::size_t i = (current + step) % urls.size();
    if (!asked[i]) return i;
  }
  return std::nullopt;
}

// True if `status` and `body` are a standby's refusal (docs/api.md "Standby"): nothing was done.
bool IsStandbyRefusal(int status, const std::string& body) {
  return status == 503 && body.find("\"standby\"") != std::string::npos;
}

}  // namespace

Result<ApiResponse> ApiClient::Call(HttpRequest request) {
  std::vector<bool> asked(urls_.size(), false);
  for (;;) {
    asked[current_] = true;
    HttpResult<HttpResponse> result = SendToCurrent(request);
    // Nothing was done where the request went: no connection, or a standby's refusal. Then
    // another server of the list is asked (the leader the standby names, if listed), each at
    // most once per call.
    const bool standby = result && IsStandbyRefusal(result->status, result->body);
    const bool unreached = !result && result.error().failure == HttpFailure::kConnect;
    if (!unreached && !standby) return Convert(std::move(result));
    const std::optional<std::size_t> next =
        NextServer(urls_, current_, standby ? result->Header("X-Drover-Leader") : "", asked);
    if (!next) return Convert(std::move(result));
    Connect(*next);
  }
}

ApiClient::~ApiClient() = default;
ApiClient::ApiClient(ApiClient&&) noexcept = default;

void ApiClient::SetAuthHint(std::string hint) { auth_hint_ = std::move(hint); }

void ApiClient::SetBearer(const std::string& token) { bearer_ = token; }

Result<ApiResponse> ApiClient::Convert(HttpResult<HttpResponse> result, bool parse_success) const {
  if (!client_) return tl::unexpected(*url_error_);
  if (!result) {
    const HttpError& error = result.error();
    if (error.failure == HttpFailure::kTls) return Unavailable(error.message);
    if (error.failure == HttpFailure::kRequest) return InvalidArgument(error.message);
    return Unavailable(
        fmt::format("cannot reach the Drover server at {} ({}); start one with "
                    "`drover server` or point DROVER_SERVER at it",
                    base_url_, error.message));
  }
  ApiResponse response;
  response.status = result->status;
  response.body = std::move(result->body);
  for (const auto& [name, value] : result->headers) {
    if (name.size() > 9 && EqualsIgnoringCase(std::string_view(name).substr(0, 9), "X-Drover-")) {
      response.headers["X-Drover-" + name.substr(9)] = value;
    }
  }
  const bool success = response.status >= 200 && response.status < 300;
  if ((parse_success || !success) &&
      result->Header("Content-Type").find("application/json") != std::string::npos) {
    response.json = nlohmann::json::parse(response.body, nullptr, /*allow_exceptions=*/false);
  }
  if (success) return response;
  const nlohmann::json& body = response.json;
  if (body.is_object() && body.contains("code") && body["code"].is_string()) {
    Error error;
    const std::string code = body["code"].get<std::string>();
    // A standby's refusal (docs/api.md "Standby"): the leader may be elsewhere; try again.
    error.code = code == "standby" ? ErrorCode::kUnavailable
                                   : ParseErrorCode(code).value_or(ErrorCode::kInternal);
    error.message = body.value("message", "");
    if (body.contains("details") && body["details"].is_array()) {
      for (const auto& detail : body["details"]) {
        if (detail.is_string()) error.details.push_back(detail.get<std::string>());
      }
    }
    if (error.code == ErrorCode::kUnauthenticated && !auth_hint_.empty()) {
      error.details.push_back(auth_hint_);
    }
    return tl::unexpected(std::move(error));
  }
  return Internal(fmt::format("the server at {} answered HTTP {}: {}", base_url_, response.status,
                              response.body.substr(0, 200)));
}

Result<ApiResponse> ApiClient::Get(const std::string& path_and_query) {
  const HttpHeaders headers = HeadersWith();
  return Call({.method = "GET", .target = path_and_query, .headers = &headers});
}

Result<ApiResponse> ApiClient::GetUnparsed(const std::string& path_and_query) {
  const HttpHeaders headers = HeadersWith();
  return Convert(SendToCurrent({.method = "GET", .target = path_and_query, .headers = &headers}),
                 /*parse_success=*/false);
}

Result<ApiResponse> ApiClient::Post(const std::string& path, const std::string& body,
                                    const std::string& content_type,
                                    const std::map<std::string, std::string>& headers) {
  const HttpHeaders all = HeadersWith(headers);
  return Call({.method = "POST",
               .target = path,
               .headers = &all,
               .body = body,
               .content_type = content_type});
}

Result<ApiResponse> ApiClient::Put(const std::string& path, const std::string& body,
                                   const std::string& content_type) {
  const HttpHeaders headers = HeadersWith();
  return Call({.method = "PUT",
               .target = path,
               .headers = &headers,
               .body = body,
               .content_type = content_type});
}

Result<ApiResponse> ApiClient::Delete(const std::string& path) {
  const HttpHeaders headers = HeadersWith();
  return Call({.method = "DELETE", .target = path, .headers = &headers});
}

namespace {

// Takes the complete frames ("...\n\n") off the front of `buffer` and hands each event to
// `on_event`; false when it returned false.
bool TakeFrames(std::string& buffer, const std::function<bool(const StreamEvent&)>& on_event) {
  std::size_t end;
  while ((end = buffer.find("\n\n")) != std::string::npos) {
    const std::string frame = buffer.substr(0, end);
    buffer.erase(0, end + 2);
    StreamEvent event;
    std::size_t start = 0;
    while (start <= frame.size()) {
      std::size_t line_end = frame.find('\n', start);
      if (line_end == std::string::npos) line_end = frame.size();
      const std::string_view line(frame.data() + start, line_end - start);
      start = line_end + 1;
      const std::size_t colon = line.find(':');
      if (colon == 0 || colon == std::string_view::npos) continue;  // a comment, or no field
      std::string_view value = line.substr(colon + 1);
      if (!value.empty() && value.front() == ' ') value.remove_prefix(1);
      const std::string_view field = line.substr(0, colon);
      if (field == "id") event.id = value;
      if (field == "event") event.type = value;
      if (field == "data") event.data += value;
    }
    if (!event.type.empty() && !on_event(event)) return false;
  }
  return true;
}

}  // namespace

Status ApiClient::Events(const std::string& path_and_query, const std::string& last_event_id,
                         const std::function<bool(const StreamEvent&)>& on_event) {
  // The id of the last event handed to on_event: where a stream reopened elsewhere resumes.
  std::string resume_after = last_event_id;
  const auto track = [&](const StreamEvent& event) {
    if (!event.id.empty()) resume_after = event.id;
    return on_event(event);
  };
  std::vector<bool> asked(urls_.size(), false);
  const DurationMs timeout_ms = connect_options_.io_timeout_ms;
  auto give_up = std::chrono::steady_clock::now() + std::chrono::milliseconds(timeout_ms);
  for (;;) {
    asked[current_] = true;
    const HttpHeaders headers = HeadersWith(
        resume_after.empty() ? std::map<std::string, std::string>{}
                             : std::map<std::string, std::string>{{"Last-Event-ID", resume_after}});
    int status = 0;
    std::string buffer;
    std::string refusal;  // the body of an answer other than 200
    bool stopped = false;
    const ResponseStream stream{.on_head =
                                    [&](const HttpResponse& head) {
                                      status = head.status;
                                      return true;
                                    },
                                .on_body =
                                    [&](std::string_view piece) {
                                      if (status != 200) {
                                        refusal.append(piece);
                                        return true;
                                      }
                                      buffer.append(piece);
                                      stopped = !TakeFrames(buffer, track);
                                      return !stopped;
                                    }};
    HttpResult<HttpResponse> result =
        SendToCurrent({.method = "GET", .target = path_and_query, .headers = &headers}, &stream);
    if (stopped) return OkStatus();
    // The stream is close-delimited: its end reads the same whether the server ended it or
    // died (SIGKILL). With one server, that is the stream's end.
    if (result && status == 200 && urls_.size() == 1) return OkStatus();
    if (result && status != 200) result->body = refusal;
    // With several servers, a stream that cannot be opened here (no connection, a standby) or
    // that ended once open (its server died or stepped down) is opened on another (the leader a
    // standby named first), resuming after the last event delivered; rounds over the list go
    // on, a pause apart, until a server streams or for the client's timeout since one last did
    // (a failover: the standby takes over once the dead leader's lease expires).
    const bool standby = result && IsStandbyRefusal(status, result->body);
    const bool broke = status == 200;
    const auto now = std::chrono::steady_clock::now();
    const bool unreached = !result && result.error().failure == HttpFailure::kConnect;
    const bool elsewhere = urls_.size() > 1 && (unreached || standby || broke);
    if (!elsewhere || (!broke && now >= give_up)) {
      Result<ApiResponse> converted = Convert(std::move(result));
      if (!converted) return tl::unexpected(converted.error());
      return OkStatus();
    }
    if (broke) {
      asked.assign(urls_.size(), false);
      asked[current_] = true;
      give_up = now + std::chrono::milliseconds(timeout_ms);
    }
    const std::string hint = standby ? result->Header("X-Drover-Leader") : "";
    std::optional<std::size_t> next = NextServer(urls_, current_, hint, asked);
    if (!next) {
      std::this_thread::sleep_for(std::chrono::milliseconds(500));
      asked.assign(urls_.size(), false);
      next = NextServer(urls_, current_, hint, asked).value_or(current_);
    }
    Connect(*next);
  }
}

namespace {

Result<nlohmann::json> BodyOf(Result<ApiResponse> response) {
  if (!response) return tl::unexpected(response.error());
  return std::move(response->json);
}

}  // namespace

Result<nlohmann::json> ApiClient::Explain(const std::string& job) {
  return BodyOf(Get("/v1/jobs/" + UrlEncode(job) + "/explain"));
}

Result<nlohmann::json> ApiClient::Decisions(const std::string& job) {
  return BodyOf(Get("/v1/jobs/" + UrlEncode(job) + "/decisions"));
}

Result<nlohmann::json> ApiClient::Checkpoint(const std::string& job) {
  return BodyOf(Post("/v1/jobs/" + UrlEncode(job) + "/checkpoint", "", "application/json"));
}

Result<nlohmann::json> ApiClient::Report(const std::string& job, const nlohmann::json& report) {
  return BodyOf(Post("/v1/jobs/" + UrlEncode(job) + "/report", report.dump(), "application/json"));
}

Result<nlohmann::json> ApiClient::Pipelines() { return BodyOf(Get("/v1/pipelines")); }

Result<nlohmann::json> ApiClient::Pipeline(const std::string& run) {
  return BodyOf(Get("/v1/pipelines/" + UrlEncode(run)));
}

Result<nlohmann::json> ApiClient::CancelPipeline(const std::string& run) {
  return BodyOf(Post("/v1/pipelines/" + UrlEncode(run) + "/cancel", "", "application/json"));
}

Result<nlohmann::json> ApiClient::Goodput(const std::string& by, TimeMs since) {
  return BodyOf(Get(fmt::format("/v1/goodput?by={}&since={}", UrlEncode(by), since)));
}

Result<nlohmann::json> ApiClient::Queues() { return BodyOf(Get("/v1/queues")); }

Result<nlohmann::json> ApiClient::Policy() { return BodyOf(Get("/v1/policy")); }

Result<nlohmann::json> ApiClient::ReloadPolicy() {
  return BodyOf(Post("/v1/policy/reload", "", "application/json"));
}

std::string UrlEncode(const std::string& text) {
  std::string out;
  for (unsigned char c : text) {
    if (std::isalnum(c) || c == '-' || c == '_' || c == '.' || c == '~') {
      out += static_cast<char>(c);
    } else {
      out += fmt::format("%{:02X}", c);
    }
  }
  return out;
}

}  // namespace drover::api
