#include "drover/gateway/gateway.h"

#include <event2/buffer.h>
#include <event2/bufferevent_ssl.h>
#include <event2/event.h>
#include <event2/http.h>
#include <event2/keyvalq_struct.h>
#include <openssl/crypto.h>
#include <openssl/ssl.h>
#include <openssl/x509v3.h>
#include <spdlog/spdlog.h>

#include <chrono>
#include <csignal>
#include <map>
#include <nlohmann/json.hpp>
#include <set>
#include <unordered_map>

#include "drover/gateway/gateway_impl.h"
#include "drover/gateway/json_depth.h"

namespace drover::gateway {
namespace {

// How often waiting requests look for an endpoint again (also after each services poll).
constexpr DurationMs kDrainIntervalMs = 50;

double NowSeconds() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

std::string ErrorBody(const std::string& message, const std::string& type,
                      const std::string& code) {
  return Json{{"error", {{"message", message}, {"type", type}, {"param", nullptr}, {"code", code}}}}
      .dump();
}

// The text of a completion request's prompt: `prompt` (a string or strings) or the chat
// messages' contents (strings, or parts with `text`), joined.
std::string PromptText(const Json& body) {
  std::string text;
  auto add = [&](const Json& value) {
    if (value.is_string()) text += value.get_ref<const std::string&>();
  };
  if (const auto prompt = body.find("prompt"); prompt != body.end()) {
    if (prompt->is_array()) {
      for (const Json& item : *prompt) add(item);
    } else {
      add(*prompt);
    }
  }
  if (const auto messages = body.find("messages"); messages != body.end() && messages->is_array()) {
    for (const Json& message : *messages) {
      if (!message.is_object()) continue;
      const auto content = message.find("content");
      if (content == message.end()) continue;
      if (content->is_array()) {
        for (const Json& part : *content) {
          if (part.is_object() && part.contains("text")) add(part["text"]);
        }
      } else {
        add(*content);
      }
    }
  }
  return text;
}

std::string Header(evhttp_request* request, const char* name) {
  const char* value = evhttp_find_header(evhttp_request_get_input_headers(request), name);
  return value == nullptr ? std::string() : std::string(value);
}

bool ConstantTimeEquals(const std::string& a, const std::string& b) {
  return a.size() == b.size() && CRYPTO_memcmp(a.data(), b.data(), a.size()) == 0;
}

}  // namespace

Gateway::Impl::~Impl() {
  for (auto& [url, connections] : idle_) {
    for (evhttp_connection* connection : connections) evhttp_connection_free(connection);
  }
  if (server_ != nullptr) evhttp_connection_free(server_);
  if (accepted_event_ != nullptr) event_free(accepted_event_);
  for (event* e : signals_) event_free(e);
  if (probe_timer_ != nullptr) event_free(probe_timer_);
  if (drain_timer_ != nullptr) event_free(drain_timer_);
  if (poll_timer_ != nullptr) event_free(poll_timer_);
  listener_ = nullptr;  // evhttp_free frees it before closing the connections
  if (http_ != nullptr) evhttp_free(http_);
  // evhttp_free closed the client connections (their close callbacks freed their records).
  for (auto& [connection, client] : clients_) delete client;
  if (dns_ != nullptr) evdns_base_free(dns_, 0);
  for (auto& [file, context] : tls_contexts_) SSL_CTX_free(context);
  if (base_ != nullptr) event_base_free(base_);
}

Status Gateway::Impl::Bind() {
  const GatewayConfig& config = options_.config;
  for (std::size_t m = 0; m < config.models.size(); ++m) {
    const ModelConfig& model = config.models[m];
    std::vector<Backend> backends;
    for (const BackendConfig& b : model.backends) {
      Backend backend{b.name, b.cost_per_1k_tokens, {}};
      for (const std::string& url : b.endpoints) {
        Endpoint endpoint;
        endpoint.url = endpoint.name = url;
        backend.endpoints.push_back(std::move(endpoint));
      }
      backends.push_back(std::move(backend));
    }
    routes_.push_back(
        Route{model, std::make_unique<Router>(std::move(backends), model.route, config.breaker,
                                              config.retry_budget, options_.seed + m)});
    route_index_[model.name] = static_cast<int>(m);
  }
  if (!options_.server_url.empty()) {
    DROVER_ASSIGN_OR_RETURN(auto host_port, SplitHttpUrl(options_.server_url));
    server_host_ = host_port.first;
    server_port_ = host_port.second;
  }
  base_ = event_base_new();
  http_ = evhttp_new(base_);
  if (base_ == nullptr || http_ == nullptr) return Internal("libevent: cannot start");
  // Backend names are resolved by evdns on this thread, never by a blocking getaddrinfo.
  const DnsOptions& dns = config.dns;
  dns_ = evdns_base_new(base_, dns.nameservers.empty() ? EVDNS_BASE_INITIALIZE_NAMESERVERS : 0);
  if (dns_ == nullptr) return Internal("cannot start the resolver (read /etc/resolv.conf)");
  if (!dns.nameservers.empty()) {
    evdns_base_load_hosts(dns_, nullptr);  // /etc/hosts, which the resolv.conf path also reads
    for (const std::string& server : dns.nameservers) {
      if (evdns_base_nameserver_ip_add(dns_, server.c_str()) != 0) {
        return InvalidArgument("dns.nameservers: cannot use " + server);
      }
    }
  }
  const std::string timeout_seconds =
      std::to_string(static_cast<double>(dns.timeout_ms) / kMillisPerSecond);
  evdns_base_set_option(dns_, "timeout:", timeout_seconds.c_str());
  evdns_base_set_option(dns_, "attempts:", std::to_string(dns.attempts).c_str());
  evhttp_set_max_body_size(http_, config.limits.max_body_bytes);
  evhttp_set_max_headers_size(http_, config.limits.max_header_bytes);
  evhttp_set_allowed_methods(http_, EVHTTP_REQ_GET | EVHTTP_REQ_POST);
  // A client connection idle for longer than a backend may be silent (plus a margin) is closed;
  // a reply being waited for is therefore never cut by the client side first.
  const timeval client_timeout = ToTimeval(config.backend_timeout_ms + 5 * kMillisPerSecond);
  evhttp_set_timeout_tv(http_, &client_timeout);
  evhttp_set_gencb(http_, &Impl::OnRequest, this);
  evhttp_set_bevcb(http_, &Impl::OnAccept, this);
  accepted_event_ = event_new(base_, -1, 0, &Impl::OnAccepted, this);
  evhttp_bound_socket* socket =
      evhttp_bind_socket_with_handle(http_, options_.host.c_str(), options_.port);
  if (socket == nullptr) {
    return Unavailable("cannot listen on " + options_.host + ":" + std::to_string(options_.port));
  }
  listener_ = evhttp_bound_socket_get_listener(socket);
  sockaddr_storage address{};
  socklen_t length = sizeof(address);
  getsockname(evhttp_bound_socket_get_fd(socket), reinterpret_cast<sockaddr*>(&address), &length);
  port_ = ntohs(address.ss_family == AF_INET6 ? reinterpret_cast<sockaddr_in6*>(&address)->sin6_port
                                              : reinterpret_cast<sockaddr_in*>(&address)->sin_port);
  drain_timer_ = event_new(base_, -1, EV_PERSIST, &Impl::OnDrainTimer, this);
  const timeval drain = ToTimeval(kDrainIntervalMs);
  event_add(drain_timer_, &drain);
  probe_timer_ = event_new(base_, -1, EV_PERSIST, &Impl::OnProbeTimer, this);
  const timeval probe = ToTimeval(config.probe_interval_ms);
  event_add(probe_timer_, &probe);
  if (!server_host_.empty()) {
    poll_timer_ = event_new(base_, -1, EV_PERSIST, &Impl::OnPollTimer, this);
    const timeval poll = ToTimeval(config.poll_interval_ms);
    event_add(poll_timer_, &poll);
    load_window_start_ = NowMs();
  }
  for (int signal : {SIGINT, SIGTERM}) {
    event* e = evsignal_new(base_, signal, &Impl::OnSignal, this);
    event_add(e, nullptr);
    signals_.push_back(e);
  }
  return OkStatus();
}

void Gateway::Impl::Run() {
  std::signal(SIGPIPE, SIG_IGN);  // a client gone mid-reply is an error on its socket only
  if (!server_host_.empty()) Poll();
  event_base_dispatch(base_);
}

bufferevent* Gateway::Impl::OnAccept(event_base* base, void* self) {
  Impl* impl = static_cast<Impl*>(self);
  bufferevent* connection = bufferevent_socket_new(base, -1, BEV_OPT_CLOSE_ON_FREE);
  impl->accepted_.push_back(connection);
  event_active(impl->accepted_event_, EV_TIMEOUT, 1);
  if (++impl->connections_ >= impl->options_.config.limits.max_connections &&
      !impl->accept_paused_) {
    // New connections wait in the kernel's backlog until one closes (OnClientClose).
    impl->accept_paused_ = true;
    evconnlistener_disable(impl->listener_);
  }
  return connection;
}

void Gateway::Impl::OnAccepted(evutil_socket_t, short, void* self) {
  // evhttp made each accepted connection's evhttp_connection after OnAccept returned; it is the
  // argument of the callbacks it set on the bufferevent. Runs before any I/O on them.
  Impl* impl = static_cast<Impl*>(self);
  for (bufferevent* accepted : impl->accepted_) {
    void* argument = nullptr;
    bufferevent_getcb(accepted, nullptr, nullptr, nullptr, &argument);
    auto* connection = static_cast<evhttp_connection*>(argument);
    if (connection == nullptr) {  // evhttp could not take it
      --impl->connections_;
      continue;
    }
    auto* client = new ClientConnection{impl, connection, nullptr};
    impl->clients_[connection] = client;
    evhttp_connection_set_closecb(connection, &Impl::OnClientClose, client);
  }
  impl->accepted_.clear();
}

void Gateway::Impl::OnClientClose(evhttp_connection* connection, void* arg) {
  auto* client = static_cast<ClientConnection*>(arg);
  Impl* impl = client->gateway;
  impl->clients_.erase(connection);
  if (Call* call = client->call; call != nullptr) {
    call->client_connection = nullptr;
    impl->Abort(call);
  }
  delete client;
  if (--impl->connections_ < impl->options_.config.limits.max_connections && impl->accept_paused_ &&
      impl->listener_ != nullptr) {
    impl->accept_paused_ = false;
    evconnlistener_enable(impl->listener_);
  }
}

void Gateway::Impl::OnSignal(evutil_socket_t, short, void* self) {
  event_base_loopbreak(static_cast<Impl*>(self)->base_);
}

void Gateway::Impl::OnRequest(evhttp_request* request, void* self) {
  static_cast<Impl*>(self)->Serve(request);
}

void Gateway::Impl::Reply(evhttp_request* request, int status, const std::string& content_type,
                          const std::string& body) {
  evkeyvalq* headers = evhttp_request_get_output_headers(request);
  evhttp_add_header(headers, "Content-Type", content_type.c_str());
  evbuffer* buffer = evbuffer_new();
  evbuffer_add(buffer, body.data(), body.size());
  evhttp_send_reply(request, status, nullptr, buffer);
  evbuffer_free(buffer);
}

void Gateway::Impl::Serve(evhttp_request* request) {
  // libevent calls again with the URI cleared when a request's connection fails while the
  // reply is pending (a client that went away mid-stream).
  if (evhttp_request_get_uri(request) == nullptr) {
    if (auto it = calls_.find(request); it != calls_.end()) {
      Abort(it->second);
    } else {
      evhttp_send_error(request, 400, nullptr);
    }
    return;
  }
  const std::string path = evhttp_uri_get_path(evhttp_request_get_evhttp_uri(request))
                               ? evhttp_uri_get_path(evhttp_request_get_evhttp_uri(request))
                               : "";
  const evhttp_cmd_type method = evhttp_request_get_command(request);
  if (path == "/health" && method == EVHTTP_REQ_GET) {
    Reply(request, 200, "application/json", R"({"status":"ok"})");
    return;
  }
  if (path == "/metrics" && method == EVHTTP_REQ_GET) {
    std::vector<std::string> models;
    std::vector<Router*> routers;
    for (Route& route : routes_) {
      models.push_back(route.config.name);
      routers.push_back(route.router.get());
    }
    const ClientGauges clients{connections_, options_.config.limits.max_connections, accept_paused_,
                               stream_buffer_peak_, stream_pauses_};
    Reply(request, 200, "text/plain; version=0.0.4",
          metrics_.Render(models, routers, clients, NowMs()));
    return;
  }
  if (path == "/v1/models" && method == EVHTTP_REQ_GET) {
    Json data = Json::array();
    for (const Route& route : routes_) {
      data.push_back({{"id", route.config.name}, {"object", "model"}, {"owned_by", "drover"}});
    }
    Reply(request, 200, "application/json", Json{{"object", "list"}, {"data", data}}.dump());
    return;
  }
  if ((path == "/v1/chat/completions" || path == "/v1/completions") && method == EVHTTP_REQ_POST) {
    Completion(request);
    return;
  }
  const bool known = path == "/v1/chat/completions" || path == "/v1/completions" ||
                     path == "/v1/models" || path == "/metrics" || path == "/health";
  Reply(request, known ? 405 : 404, "application/json",
        ErrorBody(known ? "method not allowed on " + path : "no route " + path,
                  "invalid_request_error", known ? "method_not_allowed" : "not_found"));
}

std::string Gateway::Impl::Team(evhttp_request* request, bool& authorized) const {
  authorized = true;
  if (options_.config.teams.empty()) return "-";
  const std::string header = Header(request, "Authorization");
  constexpr std::string_view kBearer = "Bearer ";
  const std::string key = header.rfind(kBearer, 0) == 0 ? header.substr(kBearer.size()) : "";
  std::string team;
  for (const TeamConfig& t : options_.config.teams) {
    if (ConstantTimeEquals(t.key, key) && team.empty()) team = t.name;
  }
  authorized = !team.empty();
  return team;
}

void Gateway::Impl::ReplyError(Call* call, int status, const std::string& message,
                               const std::string& type, const std::string& code,
                               const char* outcome) {
  Reply(call->client, status, "application/json", ErrorBody(message, type, code));
  Finish(call, outcome);
}

void Gateway::Impl::Completion(evhttp_request* request) {
  auto call = std::make_unique<Call>();
  call->gateway = this;
  call->client = request;
  call->arrived = NowSeconds();
  const GatewayLimits& limits = options_.config.limits;
  evbuffer* input = evhttp_request_get_input_buffer(request);
  const std::size_t size = evbuffer_get_length(input);
  std::string text(size, '\0');
  evbuffer_copyout(input, text.data(), size);
  bool authorized = true;
  call->team = Team(request, authorized);
  Call* raw = call.release();
  calls_[request] = raw;
  if (!authorized) {
    ReplyError(raw, 401, "a valid API key is required (Authorization: Bearer KEY)",
               "invalid_request_error", "invalid_api_key", kOutcomeClientError);
    return;
  }
  if (static_cast<int>(calls_.size()) > limits.max_in_flight) {
    ReplyError(raw, 429,
               "the gateway has " + std::to_string(limits.max_in_flight) + " requests in flight",
               "rate_limit_error", "too_many_requests", kOutcomeClientError);
    return;
  }
  if (const std::optional<std::size_t> at = ExceedsJsonDepth(text, limits.max_json_depth)) {
    ReplyError(raw, 400,
               "the body nests deeper than " + std::to_string(limits.max_json_depth) + " at byte " +
                   std::to_string(*at),
               "invalid_request_error", "json_too_deep", kOutcomeClientError);
    return;
  }
  raw->body = Json::parse(text, nullptr, false);
  if (raw->body.is_discarded() || !raw->body.is_object()) {
    ReplyError(raw, 400, "the body is not a JSON object", "invalid_request_error", "invalid_json",
               kOutcomeClientError);
    return;
  }
  const auto model = raw->body.find("model");
  if (model == raw->body.end() || !model->is_string()) {
    ReplyError(raw, 400, "model: required, a string", "invalid_request_error", "missing_model",
               kOutcomeClientError);
    return;
  }
  const auto route = route_index_.find(model->get<std::string>());
  if (route == route_index_.end()) {
    ReplyError(raw, 404, "model: no route for \"" + model->get<std::string>().substr(0, 200) + "\"",
               "invalid_request_error", "model_not_found", kOutcomeClientError);
    return;
  }
  raw->model = route->second;
  if (const auto stream = raw->body.find("stream"); stream != raw->body.end()) {
    if (!stream->is_boolean()) {
      ReplyError(raw, 400, "stream: must be a boolean", "invalid_request_error", "invalid_stream",
                 kOutcomeClientError);
      return;
    }
    raw->stream = stream->get<bool>();
  }
  const std::string prompt = PromptText(raw->body);
  raw->prompt_bytes = static_cast<std::int64_t>(prompt.size());
  raw->prefix = prompt.substr(0, routes_[raw->model].config.prefix_bytes);
  raw->cheapest = Header(request, "X-Drover-Route") == "cheapest";
  if (const auto client = clients_.find(evhttp_request_get_connection(request));
      client != clients_.end()) {
    raw->client_connection = client->second;
    client->second->call = raw;
  }
  routes_[raw->model].router->OnRequest(NowMs());
  Attempt(raw);
}

void Gateway::Impl::Attempt(Call* call) {
  Router& router = *routes_[call->model].router;
  const std::optional<Pick> pick =
      router.Choose(call->prefix, call->cheapest, call->tried, NowMs());
  if (!pick) {
    const ModelConfig& model = routes_[call->model].config;
    std::deque<Call*>& queue = waiting_[call->model];
    if (call->tried.empty() && static_cast<int>(queue.size()) < model.max_waiting) {
      call->waiting = true;  // DrainWaiting sends it on, or answers 503 after max_wait_ms
      queue.push_back(call);
      // New demand for a model with nowhere to go (a service at zero): told to the server at
      // once rather than at the next poll, so that its autoscaler starts a replica sooner.
      if (queue.size() == 1 && !server_host_.empty()) PostLoad();
      return;
    }
    ReplyError(call, 503, "no backend of model \"" + model.name + "\" is available",
               "service_unavailable", "no_backend", kOutcomeNoBackend);
    return;
  }
  call->pick = *pick;
  call->status = 0;
  call->upstream_failed = false;
  call->buffer.clear();
  call->too_large = false;
  call->content_type.clear();
  router.OnSent(*pick, NowMs());
  const BackendConfig& backend = BackendOf(call);
  if (!backend.service.empty()) ++service_requests_[backend.service];
  call->connection = Connection(pick->url, backend.ca_file);
  if (call->connection == nullptr) {  // a TLS endpoint without a usable CA store
    call->upstream_failed = true;
    UpstreamDone(call, nullptr);
    return;
  }
  evhttp_request* upstream = evhttp_request_new(&Impl::OnUpstreamDone, call);
  evhttp_request_set_header_cb(upstream, &Impl::OnUpstreamHeaders);
  evhttp_request_set_chunked_cb(upstream, &Impl::OnUpstreamChunk);
  evhttp_request_set_error_cb(upstream, &Impl::OnUpstreamError);
  evkeyvalq* headers = evhttp_request_get_output_headers(upstream);
  const std::string host = pick->url.substr(pick->url.find("://") + 3);
  evhttp_add_header(headers, "Host", host.c_str());
  evhttp_add_header(headers, "Content-Type", "application/json");
  if (!backend.api_key.empty()) {
    evhttp_add_header(headers, "Authorization", ("Bearer " + backend.api_key).c_str());
  }
  std::string body;
  if (backend.model.empty()) {
    body = call->body.dump();
  } else {
    Json rewritten = call->body;
    rewritten["model"] = backend.model;
    body = rewritten.dump();
  }
  evbuffer_add(evhttp_request_get_output_buffer(upstream), body.data(), body.size());
  const char* uri = evhttp_uri_get_path(evhttp_request_get_evhttp_uri(call->client));
  call->upstream = upstream;
  call->sent_at = NowSeconds();
  metrics_.queueing.Observe({routes_[call->model].config.name}, call->sent_at - call->arrived);
  if (evhttp_make_request(call->connection, upstream, EVHTTP_REQ_POST, uri) != 0) {
    // libevent freed `upstream` and will not call back: an attempt that failed at once.
    call->upstream = nullptr;
    call->upstream_failed = true;
    UpstreamDone(call, nullptr);
  }
}

int Gateway::Impl::OnUpstreamHeaders(evhttp_request* request, void* arg) {
  Call* call = static_cast<Call*>(arg);
  call->status = evhttp_request_get_response_code(request);
  const char* type = evhttp_find_header(evhttp_request_get_input_headers(request), "Content-Type");
  call->content_type = type == nullptr ? "application/json" : type;
  return 0;
}

void Gateway::Impl::OnUpstreamChunk(evhttp_request* request, void* arg) {
  Call* call = static_cast<Call*>(arg);
  Impl* self = call->gateway;
  evbuffer* input = evhttp_request_get_input_buffer(request);
  const std::size_t size = evbuffer_get_length(input);
  const bool pass_through = call->stream && call->status >= 200 && call->status < 300;
  if (!pass_through) {
    // Buffered: a non-streamed reply, or an error's body (for the client if not retried).
    if (static_cast<std::int64_t>(call->buffer.size() + size) >
        self->options_.config.limits.max_response_bytes) {
      call->too_large = true;
      return;
    }
    const std::size_t old = call->buffer.size();
    call->buffer.resize(old + size);
    evbuffer_copyout(input, call->buffer.data() + old, size);
    return;
  }
  std::string bytes(size, '\0');
  evbuffer_copyout(input, bytes.data(), size);
  const double now = NowSeconds();
  if (!call->started) {
    call->started = true;
    call->first_chunk = now;
    evkeyvalq* headers = evhttp_request_get_output_headers(call->client);
    evhttp_add_header(headers, "Content-Type", call->content_type.c_str());
    evhttp_add_header(headers, "Cache-Control", "no-cache");
    evhttp_send_reply_start(call->client, call->status, nullptr);
  }
  for (const std::string& event : call->sse.Feed(bytes)) {
    ++call->chunks;
    call->last_chunk = now;
    if (event.find("\"usage\"") == std::string::npos) continue;
    const Json chunk = Json::parse(event, nullptr, false);
    if (chunk.is_object() && chunk.contains("usage") && chunk["usage"].is_object()) {
      call->prompt_tokens = chunk["usage"].value("prompt_tokens", call->prompt_tokens);
      call->completion_tokens = chunk["usage"].value("completion_tokens", call->completion_tokens);
    }
  }
  self->Stream(call, input);
}

void Gateway::Impl::Stream(Call* call, evbuffer* bytes) {
  ClientConnection* client = call->client_connection;
  if (client == nullptr) {
    evhttp_send_reply_chunk(call->client, bytes);  // moves (drains) the bytes
    return;
  }
  // OnClientDrained runs when the client's output buffer has been written out entirely.
  evhttp_send_reply_chunk_with_cb(call->client, bytes, &Impl::OnClientDrained, client);
  const auto held = static_cast<std::int64_t>(evbuffer_get_length(
      bufferevent_get_output(evhttp_connection_get_bufferevent(client->connection))));
  stream_buffer_peak_ = std::max(stream_buffer_peak_, held);
  if (held > options_.config.limits.stream_buffer_bytes && !call->paused &&
      call->connection != nullptr) {
    // The kernel's buffers then hold the rest, and the backend's writes wait for them.
    call->paused = true;
    ++stream_pauses_;
    bufferevent_disable(evhttp_connection_get_bufferevent(call->connection), EV_READ);
  }
}

void Gateway::Impl::OnClientDrained(evhttp_connection*, void* arg) {
  Call* call = static_cast<ClientConnection*>(arg)->call;
  if (call == nullptr || !call->paused) return;
  call->paused = false;
  if (call->connection != nullptr) {
    bufferevent_enable(evhttp_connection_get_bufferevent(call->connection), EV_READ);
  }
}

void Gateway::Impl::OnUpstreamError(evhttp_request_error, void* arg) {
  static_cast<Call*>(arg)->upstream_failed = true;
}

void Gateway::Impl::OnUpstreamDone(evhttp_request* request, void* arg) {
  Call* call = static_cast<Call*>(arg);
  call->gateway->UpstreamDone(call, request);
}

void Gateway::Impl::UpstreamDone(Call* call, evhttp_request* request) {
  const std::string model = routes_[call->model].config.name;
  const std::string backend = BackendName(call);
  if (request == nullptr || evhttp_request_get_response_code(request) == 0) {
    call->upstream_failed = true;
  }
  call->upstream = nullptr;
  if (call->connection != nullptr) {
    if (call->paused) {  // the reply ended within what was read before the pause
      call->paused = false;
      bufferevent_enable(evhttp_connection_get_bufferevent(call->connection), EV_READ);
    }
    Release(call->pick.url, call->connection);
    call->connection = nullptr;
  }
  const bool unhealthy = call->upstream_failed || call->status >= 500;
  const bool retryable = unhealthy || call->status == 429;
  routes_[call->model].router->OnDone(call->pick, !unhealthy, NowMs());
  metrics_.attempts.Add(
      {model, backend,
       call->upstream_failed
           ? "error"
           : (call->status >= 500 ? "status_5xx" : (call->status == 429 ? "status_429" : "ok"))});
  if (call->started) {
    // Bytes reached the client: no retry. A cut stream ends with an error event.
    if (unhealthy) {
      const std::string event =
          "data: " +
          ErrorBody("the backend's stream was cut", "server_error", "backend_stream_cut") + "\n\n";
      evbuffer* buffer = evbuffer_new();
      evbuffer_add(buffer, event.data(), event.size());
      evhttp_send_reply_chunk(call->client, buffer);
      evbuffer_free(buffer);
    }
    evhttp_send_reply_end(call->client);
    Finish(call, unhealthy ? kOutcomeBackendError : kOutcomeOk);
    return;
  }
  if (retryable) {
    call->tried.push_back(call->pick);
    Router& router = *routes_[call->model].router;
    if (router.TryRetry(NowMs())) {
      metrics_.retries.Add({model});
      Attempt(call);
      return;
    }
    metrics_.budget_exhausted.Add({model});
    const std::string what = call->upstream_failed ? "failed (connection error or timeout)"
                                                   : "answered " + std::to_string(call->status);
    ReplyError(call, call->status == 429 ? 429 : 502,
               "backend \"" + backend + "\" " + what + "; no retry left", "server_error",
               "backend_error", kOutcomeBackendError);
    return;
  }
  if (call->too_large) {
    ReplyError(call, 502, "the backend's reply exceeds the gateway's max_response_bytes",
               "server_error", "response_too_large", kOutcomeBackendError);
    return;
  }
  if (call->status >= 200 && call->status < 300 && !call->stream) {
    const Json reply = Json::parse(call->buffer, nullptr, false);
    if (reply.is_object() && reply.contains("usage") && reply["usage"].is_object()) {
      call->prompt_tokens = reply["usage"].value("prompt_tokens", call->prompt_tokens);
      call->completion_tokens = reply["usage"].value("completion_tokens", call->completion_tokens);
    }
  }
  Reply(call->client, call->status, call->content_type, call->buffer);
  Finish(call, call->status < 400 ? kOutcomeOk : kOutcomeClientError);
}

void Gateway::Impl::Account(Call* call, const char* outcome) {
  const std::string model = call->model < 0 ? "-" : routes_[call->model].config.name;
  const std::string backend = BackendName(call);
  metrics_.requests.Add({model, backend, call->team, outcome});
  if (std::string_view(outcome) != kOutcomeOk) return;
  const double now = NowSeconds();
  metrics_.latency.Observe({model, backend}, now - call->arrived);
  if (call->stream && call->chunks > 0) {
    metrics_.ttft.Observe({model, backend}, call->first_chunk - call->arrived);
    if (call->chunks > 1) {
      metrics_.tpot.Observe({model, backend}, (call->last_chunk - call->first_chunk) /
                                                  static_cast<double>(call->chunks - 1));
    }
  }
  // Tokens: the engine's `usage` when it sent one, else prompt bytes / 4 and one per chunk.
  const std::int64_t in =
      call->prompt_tokens >= 0 ? call->prompt_tokens : (call->prompt_bytes + 3) / 4;
  const std::int64_t out = call->completion_tokens >= 0 ? call->completion_tokens : call->chunks;
  metrics_.tokens.Add({model, backend, call->team, "in"}, static_cast<double>(in));
  metrics_.tokens.Add({model, backend, call->team, "out"}, static_cast<double>(out));
  metrics_.cost.Add({model, backend, call->team},
                    static_cast<double>(in + out) / 1000.0 * BackendOf(call).cost_per_1k_tokens);
}

void Gateway::Impl::Finish(Call* call, const char* outcome) {
  Account(call, outcome);
  if (call->client_connection != nullptr) call->client_connection->call = nullptr;
  calls_.erase(call->client);
  delete call;
}

void Gateway::Impl::Abort(Call* call) {
  if (call->waiting) {
    std::deque<Call*>& queue = waiting_[call->model];
    queue.erase(std::find(queue.begin(), queue.end(), call));
  }
  if (call->upstream != nullptr) {
    // Cancelled: libevent frees the request and resets the connection, without calling back.
    evhttp_cancel_request(call->upstream);
    call->upstream = nullptr;
    routes_[call->model].router->OnDone(call->pick, true, NowMs());
    Release(call->pick.url, call->connection);
    call->connection = nullptr;
  }
  // The client's request has no connection any more: ending it frees it.
  if (call->started) {
    evhttp_send_reply_end(call->client);
  } else {
    evhttp_send_reply(call->client, 499, nullptr, nullptr);
  }
  Finish(call, kOutcomeCancelled);
}

void Gateway::Impl::OnDrainTimer(evutil_socket_t, short, void* self) {
  static_cast<Impl*>(self)->DrainWaiting();
}

void Gateway::Impl::DrainWaiting() {
  const double now = NowSeconds();
  for (auto& [model, queue] : waiting_) {
    Router& router = *routes_[model].router;
    const double max_wait = static_cast<double>(routes_[model].config.max_wait_ms) / 1000;
    while (!queue.empty()) {
      Call* call = queue.front();
      const bool expired = now - call->arrived >= max_wait;
      if (!expired && !router.Choose(call->prefix, call->cheapest, {}, NowMs())) break;
      queue.pop_front();
      call->waiting = false;
      if (expired) {
        ReplyError(call, 503,
                   "no backend of model \"" + routes_[model].config.name +
                       "\" became available within " +
                       std::to_string(routes_[model].config.max_wait_ms) + " ms",
                   "service_unavailable", "no_backend", kOutcomeNoBackend);
      } else {
        Attempt(call);
      }
    }
  }
}

SSL_CTX* Gateway::Impl::TlsContext(const std::string& ca_file) {
  if (const auto it = tls_contexts_.find(ca_file); it != tls_contexts_.end()) return it->second;
  SSL_CTX* context = SSL_CTX_new(TLS_client_method());
  if (context != nullptr) {
    SSL_CTX_set_min_proto_version(context, TLS1_2_VERSION);
    SSL_CTX_set_verify(context, SSL_VERIFY_PEER, nullptr);
    const int loaded = ca_file.empty()
                           ? SSL_CTX_set_default_verify_paths(context)
                           : SSL_CTX_load_verify_locations(context, ca_file.c_str(), nullptr);
    if (loaded != 1) {
      spdlog::error("gateway: cannot load the CA certificates of {}",
                    ca_file.empty() ? "the system's store" : ca_file);
      SSL_CTX_free(context);
      context = nullptr;
    }
  }
  tls_contexts_[ca_file] = context;  // a failure is remembered: every attempt then fails
  return context;
}

evhttp_connection* Gateway::Impl::Connection(const std::string& url, const std::string& ca_file) {
  std::vector<evhttp_connection*>& idle = idle_[url];
  if (!idle.empty()) {
    evhttp_connection* connection = idle.back();
    idle.pop_back();
    return connection;
  }
  const auto address = ParseEndpointUrl(url);  // checked at load or from the server's list
  bufferevent* tls = nullptr;
  if (address->tls) {
    // SNI and the certificate's name are the URL's host; the chain must reach a trusted CA.
    SSL_CTX* context = TlsContext(ca_file);
    SSL* ssl = context == nullptr ? nullptr : SSL_new(context);
    if (ssl == nullptr) return nullptr;  // never plain HTTP to an https endpoint
    SSL_set_tlsext_host_name(ssl, address->host.c_str());
    SSL_set1_host(ssl, address->host.c_str());
    tls = bufferevent_openssl_socket_new(base_, -1, ssl, BUFFEREVENT_SSL_CONNECTING,
                                         BEV_OPT_CLOSE_ON_FREE | BEV_OPT_DEFER_CALLBACKS);
    if (tls == nullptr) return nullptr;
    // Servers often close without close_notify; the reply's framing says whether it is whole.
    bufferevent_openssl_set_allow_dirty_shutdown(tls, 1);
  }
  evhttp_connection* connection = evhttp_connection_base_bufferevent_new(
      base_, dns_, tls, address->host.c_str(), static_cast<ev_uint16_t>(address->port));
  const timeval timeout = ToTimeval(options_.config.backend_timeout_ms);
  evhttp_connection_set_timeout_tv(connection, &timeout);
  evhttp_connection_set_max_headers_size(connection, options_.config.limits.max_header_bytes);
  return connection;
}

void Gateway::Impl::Release(const std::string& url, evhttp_connection* connection) {
  constexpr std::size_t kMaxIdlePerEndpoint = 256;
  if (connection == nullptr) return;
  std::vector<evhttp_connection*>& idle = idle_[url];
  // A TLS connection is not reused: evhttp cannot reconnect an OpenSSL bufferevent that the
  // server closed while it was idle.
  if (url.rfind("http://", 0) == 0 && idle.size() < kMaxIdlePerEndpoint) {
    idle.push_back(connection);
  } else {
    evhttp_connection_free(connection);
  }
}

Result<std::unique_ptr<Gateway>> Gateway::Create(GatewayOptions options) {
  auto impl = std::make_unique<Impl>(std::move(options));
  DROVER_RETURN_IF_ERROR(impl->Bind());
  return std::unique_ptr<Gateway>(new Gateway(std::move(impl)));
}

Gateway::Gateway(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
Gateway::~Gateway() = default;
int Gateway::port() const { return impl_->port(); }
void Gateway::Run() { impl_->Run(); }

}  // namespace drover::gateway
