// drover-fake-engine: a stand-in for an inference engine (vLLM's OpenAI-compatible server), for
// the gateway's tests and benchmarks (docs/inference.md, "The stand-in engine"). One libevent
// thread serves every connection; each sequence is a timer, so thousands of concurrent streams
// cost memory, not threads.
//
// Serves POST /v1/completions and /v1/chat/completions (non-streamed JSON, or with
// "stream": true Server-Sent Events `data: {...}` chunks, one per token, ending `data: [DONE]`),
// GET /v1/models, GET /health, GET /metrics (vLLM's names: vllm:num_requests_running,
// vllm:num_requests_waiting, vllm:request_success_total, vllm:prompt_tokens_total,
// vllm:generation_tokens_total, vllm:time_to_first_token_seconds,
// vllm:e2e_request_latency_seconds), and POST /control (test-only: {"fail_rate", "fail_status",
// "hang_rate", "health_status"} changes the injected faults at run time).
//
// A sequence's first token comes --ttft-ms after it starts, each next one --tpot-ms later, and it
// ends after --tokens tokens (or the request's max_tokens, if fewer). At most --max-seqs run at
// once; more wait in a queue (answered 503 beyond --max-waiting). --fail-rate of the requests are
// answered --fail-status at once; --hang-rate are never answered. Each token's text is
// --token-bytes long (padded; default its natural " tN"), for streams of a chosen size.
//
// SIGTERM drains, as a replica being preempted must (docs/inference.md, "Draining"): /health
// answers 503 at once, requests still arriving are served (a router may send some until it
// hears the replica is out), and the engine exits once nothing runs or waits and no request
// arrived for --drain-quiet-ms. A second SIGTERM, or SIGINT, exits at once.
//
// --tls-cert FILE --tls-key FILE serve HTTPS instead (PEM; the ready file then says https://),
// the stand-in for an external provider; --api-key KEY answers completions 401 unless they carry
// "Authorization: Bearer KEY".

#include <event2/buffer.h>
#include <event2/bufferevent_ssl.h>
#include <event2/event.h>
#include <event2/http.h>
#include <event2/keyvalq_struct.h>
#include <openssl/ssl.h>

#include <chrono>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <random>
#include <set>
#include <string>
#include <vector>

#include "drover/common/prometheus.h"

namespace {

using Json = nlohmann::json;
namespace prometheus = drover::prometheus;

struct Settings {
  std::string host = "127.0.0.1";
  int port = 0;
  std::string name = "engine";
  std::vector<std::string> models = {"stand-in"};
  int ttft_ms = 20;
  int tpot_ms = 5;
  int tokens = 16;
  int max_seqs = 64;
  int max_waiting = 4096;
  double fail_rate = 0;
  int fail_status = 500;
  double hang_rate = 0;
  int health_status = 200;
  std::uint64_t seed = 1;
  std::string ready_file;
  int drain_quiet_ms = 1500;  // above a gateway's 1 s poll of the server's endpoints
  int token_bytes = 0;        // 0: " tN" as is
  std::string tls_cert, tls_key, api_key;
};

double Now() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

struct Engine;

struct Sequence {
  Engine* engine = nullptr;
  evhttp_request* request = nullptr;
  evhttp_connection* connection = nullptr;
  event* timer = nullptr;
  bool chat = false;
  bool stream = false;
  bool hanging = false;
  bool started = false;  // reply head sent
  std::string id, model;
  int tokens = 0, emitted = 0;
  std::int64_t prompt_tokens = 0;
  double arrived = 0;
  std::string text;
};

struct Engine {
  Settings settings;
  event_base* base = nullptr;
  std::mt19937_64 random{1};
  std::set<Sequence*> running;
  std::deque<Sequence*> waiting;
  std::map<evhttp_request*, Sequence*> by_request;
  std::int64_t next_id = 0;
  bool draining = false;    // SIGTERM heard
  double last_arrival = 0;  // Now() of the latest completion request
  event* drain_check = nullptr;
  double success = 0, prompt_tokens = 0, generation_tokens = 0;
  prometheus::HistogramData ttft{
      {0.001, 0.005, 0.01, 0.02, 0.04, 0.06, 0.08, 0.1, 0.25, 0.5, 0.75, 1, 2.5, 5, 7.5, 10}};
  prometheus::HistogramData e2e{
      {0.01, 0.05, 0.1, 0.3, 0.5, 0.8, 1, 1.5, 2, 2.5, 5, 10, 15, 20, 30, 60}};
};

void Reply(evhttp_request* request, int status, const std::string& type, const std::string& body) {
  evhttp_add_header(evhttp_request_get_output_headers(request), "Content-Type", type.c_str());
  evbuffer* buffer = evbuffer_new();
  evbuffer_add(buffer, body.data(), body.size());
  evhttp_send_reply(request, status, nullptr, buffer);
  evbuffer_free(buffer);
}

void ReplyError(evhttp_request* request, int status, const std::string& message) {
  Reply(
      request, status, "application/json",
      Json{{"error",
            {{"message", message}, {"type", "engine_error"}, {"param", nullptr}, {"code", status}}}}
          .dump());
}

void SendChunk(evhttp_request* request, const std::string& text) {
  evbuffer* buffer = evbuffer_new();
  evbuffer_add(buffer, text.data(), text.size());
  evhttp_send_reply_chunk(request, buffer);
  evbuffer_free(buffer);
}

Json Usage(const Sequence& s) {
  return {{"prompt_tokens", s.prompt_tokens},
          {"completion_tokens", s.emitted},
          {"total_tokens", s.prompt_tokens + s.emitted}};
}

Json Envelope(const Sequence& s, bool chunk) {
  return {{"id", s.id},
          {"object",
           s.chat ? (chunk ? "chat.completion.chunk" : "chat.completion") : "text_completion"},
          {"created", std::time(nullptr)},
          {"model", s.model},
          {"system_fingerprint", s.engine->settings.name}};
}

void StartNext(Engine& engine);

// Ends `s` (its reply already finished or its client gone) and starts the next waiting one.
void Retire(Sequence* s) {
  Engine& engine = *s->engine;
  if (s->timer != nullptr) event_free(s->timer);
  if (s->connection != nullptr) evhttp_connection_set_closecb(s->connection, nullptr, nullptr);
  engine.running.erase(s);
  engine.by_request.erase(s->request);
  delete s;
  StartNext(engine);
}

void OnToken(evutil_socket_t, short, void* arg) {
  Sequence* s = static_cast<Sequence*>(arg);
  Engine& engine = *s->engine;
  std::string token = " t" + std::to_string(s->emitted);
  if (static_cast<int>(token.size()) < engine.settings.token_bytes) {
    token.resize(static_cast<std::size_t>(engine.settings.token_bytes), 'x');
  }
  ++s->emitted;
  if (s->emitted == 1) engine.ttft.Observe(Now() - s->arrived);
  const bool last = s->emitted >= s->tokens;
  if (s->stream) {
    if (!s->started) {
      s->started = true;
      evkeyvalq* headers = evhttp_request_get_output_headers(s->request);
      evhttp_add_header(headers, "Content-Type", "text/event-stream");
      evhttp_send_reply_start(s->request, 200, "OK");
    }
    Json chunk = Envelope(*s, true);
    Json choice = {{"index", 0}, {"finish_reason", last ? Json("length") : Json(nullptr)}};
    if (s->chat) {
      choice["delta"] = {{"content", token}};
    } else {
      choice["text"] = token;
    }
    chunk["choices"] = Json::array({choice});
    if (last) chunk["usage"] = Usage(*s);
    SendChunk(s->request, "data: " + chunk.dump() + "\n\n");
  } else {
    s->text += token;
  }
  if (!last) {
    const timeval next{0, engine.settings.tpot_ms * 1000};
    evtimer_add(s->timer, &next);
    return;
  }
  engine.success += 1;
  engine.generation_tokens += s->emitted;
  engine.prompt_tokens += static_cast<double>(s->prompt_tokens);
  engine.e2e.Observe(Now() - s->arrived);
  if (s->stream) {
    SendChunk(s->request, "data: [DONE]\n\n");
    evhttp_send_reply_end(s->request);
  } else {
    Json reply = Envelope(*s, false);
    Json choice = {{"index", 0}, {"finish_reason", "length"}};
    if (s->chat) {
      choice["message"] = {{"role", "assistant"}, {"content", s->text}};
    } else {
      choice["text"] = s->text;
    }
    reply["choices"] = Json::array({choice});
    reply["usage"] = Usage(*s);
    Reply(s->request, 200, "application/json", reply.dump());
  }
  Retire(s);
}

void StartNext(Engine& engine) {
  while (static_cast<int>(engine.running.size()) < engine.settings.max_seqs &&
         !engine.waiting.empty()) {
    Sequence* s = engine.waiting.front();
    engine.waiting.pop_front();
    engine.running.insert(s);
    s->timer = evtimer_new(engine.base, &OnToken, s);
    const timeval first{engine.settings.ttft_ms / 1000, (engine.settings.ttft_ms % 1000) * 1000};
    evtimer_add(s->timer, &first);
  }
}

// The client went away: its sequence stops (a waiting one leaves the queue).
void Cancel(Sequence* s) {
  Engine& engine = *s->engine;
  s->connection = nullptr;
  if (s->started) {
    evhttp_send_reply_end(s->request);
  } else {
    evhttp_send_reply(s->request, 499, "Client Closed", nullptr);
  }
  for (auto it = engine.waiting.begin(); it != engine.waiting.end(); ++it) {
    if (*it == s) {
      engine.waiting.erase(it);
      break;
    }
  }
  Retire(s);
}

void OnClose(evhttp_connection*, void* arg) { Cancel(static_cast<Sequence*>(arg)); }

void Completion(Engine& engine, evhttp_request* request, bool chat) {
  const Settings& settings = engine.settings;
  if (!settings.api_key.empty()) {
    const char* authorization =
        evhttp_find_header(evhttp_request_get_input_headers(request), "Authorization");
    if (authorization == nullptr || authorization != "Bearer " + settings.api_key) {
      ReplyError(request, 401, "Incorrect API key provided.");
      return;
    }
  }
  std::uniform_real_distribution<double> unit(0, 1);
  if (settings.fail_rate > 0 && unit(engine.random) < settings.fail_rate) {
    ReplyError(request, settings.fail_status, "injected failure");
    return;
  }
  evbuffer* input = evhttp_request_get_input_buffer(request);
  std::string text(evbuffer_get_length(input), '\0');
  evbuffer_copyout(input, text.data(), text.size());
  const Json body = Json::parse(text, nullptr, false);
  if (!body.is_object() || !body.contains("model") || !body["model"].is_string()) {
    ReplyError(request, 400, "a JSON object with a string `model` is required");
    return;
  }
  const std::string model = body["model"];
  if (std::find(settings.models.begin(), settings.models.end(), model) == settings.models.end()) {
    ReplyError(request, 404, "The model `" + model + "` does not exist.");
    return;
  }
  if (static_cast<int>(engine.waiting.size()) >= settings.max_waiting) {
    ReplyError(request, 503, "the waiting queue is full");
    return;
  }
  auto* s = new Sequence;
  s->engine = &engine;
  s->request = request;
  s->chat = chat;
  s->model = model;
  s->stream = body.value("stream", false);
  s->tokens = settings.tokens;
  if (body.contains("max_tokens") && body["max_tokens"].is_number_integer()) {
    s->tokens = std::max(1, std::min(s->tokens, body["max_tokens"].get<int>()));
  }
  s->prompt_tokens = static_cast<std::int64_t>(text.size() + 3) / 4;
  s->arrived = Now();
  engine.last_arrival = s->arrived;
  s->id = (chat ? "chatcmpl-" : "cmpl-") + settings.name + "-" + std::to_string(engine.next_id++);
  s->connection = evhttp_request_get_connection(request);
  evhttp_connection_set_closecb(s->connection, &OnClose, s);
  engine.by_request[request] = s;
  if (settings.hang_rate > 0 && unit(engine.random) < settings.hang_rate) {
    s->hanging = true;  // never answered; ends when its client goes away
    engine.running.insert(s);
    return;
  }
  engine.waiting.push_back(s);
  StartNext(engine);
}

std::string Metrics(const Engine& engine) {
  using prometheus::Labels;
  const Labels labels = {{"model_name", engine.settings.models.front()}};
  prometheus::ExpositionWriter w;
  const std::vector<std::pair<Labels, double>> running = {
      {labels, static_cast<double>(engine.running.size())}};
  const std::vector<std::pair<Labels, double>> waiting = {
      {labels, static_cast<double>(engine.waiting.size())}};
  w.Gauge("vllm:num_requests_running", "Number of requests running on the engine.", running);
  w.Gauge("vllm:num_requests_waiting", "Number of requests waiting to be processed.", waiting);
  const std::vector<std::pair<Labels, double>> success = {{labels, engine.success}};
  const std::vector<std::pair<Labels, double>> prompt = {{labels, engine.prompt_tokens}};
  const std::vector<std::pair<Labels, double>> generation = {{labels, engine.generation_tokens}};
  w.Counter("vllm:request_success_total", "Requests completed.", success);
  w.Counter("vllm:prompt_tokens_total", "Prefill tokens processed.", prompt);
  w.Counter("vllm:generation_tokens_total", "Generation tokens processed.", generation);
  const std::vector<std::pair<Labels, prometheus::HistogramData>> ttft = {{labels, engine.ttft}};
  const std::vector<std::pair<Labels, prometheus::HistogramData>> e2e = {{labels, engine.e2e}};
  w.Histogram("vllm:time_to_first_token_seconds", "Time to first token.", ttft);
  w.Histogram("vllm:e2e_request_latency_seconds", "End to end request latency.", e2e);
  return w.Take();
}

void Control(Engine& engine, evhttp_request* request) {
  evbuffer* input = evhttp_request_get_input_buffer(request);
  std::string text(evbuffer_get_length(input), '\0');
  evbuffer_copyout(input, text.data(), text.size());
  const Json body = Json::parse(text, nullptr, false);
  if (!body.is_object()) {
    ReplyError(request, 400, "a JSON object is required");
    return;
  }
  Settings& s = engine.settings;
  s.fail_rate = body.value("fail_rate", s.fail_rate);
  s.fail_status = body.value("fail_status", s.fail_status);
  s.hang_rate = body.value("hang_rate", s.hang_rate);
  s.health_status = body.value("health_status", s.health_status);
  Reply(request, 200, "application/json",
        Json{{"fail_rate", s.fail_rate},
             {"fail_status", s.fail_status},
             {"hang_rate", s.hang_rate},
             {"health_status", s.health_status}}
            .dump());
}

void OnRequest(evhttp_request* request, void* arg) {
  Engine& engine = *static_cast<Engine*>(arg);
  if (evhttp_request_get_uri(request) == nullptr) {  // a pending reply's connection failed
    if (auto it = engine.by_request.find(request); it != engine.by_request.end()) {
      Cancel(it->second);
    } else {
      evhttp_send_error(request, 400, nullptr);
    }
    return;
  }
  const char* raw_path = evhttp_uri_get_path(evhttp_request_get_evhttp_uri(request));
  const std::string path = raw_path == nullptr ? "" : raw_path;
  const bool post = evhttp_request_get_command(request) == EVHTTP_REQ_POST;
  if (path == "/v1/completions" && post) return Completion(engine, request, false);
  if (path == "/v1/chat/completions" && post) return Completion(engine, request, true);
  if (path == "/control" && post) return Control(engine, request);
  if (path == "/health") {
    if (engine.draining) return ReplyError(request, 503, "draining");
    return Reply(request, engine.settings.health_status, "application/json", "{}");
  }
  if (path == "/metrics") return Reply(request, 200, "text/plain; version=0.0.4", Metrics(engine));
  if (path == "/v1/models") {
    Json data = Json::array();
    for (const std::string& model : engine.settings.models) {
      data.push_back({{"id", model}, {"object", "model"}, {"owned_by", "drover-fake-engine"}});
    }
    return Reply(request, 200, "application/json", Json{{"object", "list"}, {"data", data}}.dump());
  }
  ReplyError(request, 404, "no route " + path);
}

void OnSignal(evutil_socket_t, short, void* base) {
  event_base_loopbreak(static_cast<event_base*>(base));
}

// While draining, every 50 ms: exits once idle and quiet for --drain-quiet-ms.
void OnDrainCheck(evutil_socket_t, short, void* arg) {
  auto& engine = *static_cast<Engine*>(arg);
  const bool quiet = Now() - engine.last_arrival >= engine.settings.drain_quiet_ms / 1000.0;
  if (engine.running.empty() && engine.waiting.empty() && quiet) {
    event_base_loopbreak(engine.base);
  }
}

void OnTerm(evutil_socket_t fd, short what, void* arg) {
  auto& engine = *static_cast<Engine*>(arg);
  if (engine.draining) return OnSignal(fd, what, engine.base);
  engine.draining = true;
  std::fprintf(stderr, "drover-fake-engine %s: SIGTERM: draining\n", engine.settings.name.c_str());
  engine.drain_check = event_new(engine.base, -1, EV_PERSIST, &OnDrainCheck, &engine);
  const timeval period{0, 50'000};
  event_add(engine.drain_check, &period);
}

// The TLS server's bufferevent for each accepted connection (--tls-cert).
bufferevent* TlsConnection(event_base* base, void* context) {
  return bufferevent_openssl_socket_new(base, -1, SSL_new(static_cast<SSL_CTX*>(context)),
                                        BUFFEREVENT_SSL_ACCEPTING, BEV_OPT_CLOSE_ON_FREE);
}

int Usage(const char* message) {
  std::fprintf(stderr,
               "drover-fake-engine: %s\nflags: --port N (default $DROVER_PORT, else any) --host H "
               "--name NAME --models a,b --ttft-ms N --tpot-ms N --tokens N --max-seqs N "
               "--max-waiting N --fail-rate F --fail-status N --hang-rate F --seed N "
               "--ready-file F --drain-quiet-ms N --token-bytes N --tls-cert F --tls-key F "
               "--api-key KEY\n",
               message);
  return 2;
}

}  // namespace

int main(int argc, char** argv) {
  Engine engine;
  Settings& s = engine.settings;
  if (const char* port = std::getenv("DROVER_PORT"); port != nullptr && *port != '\0') {
    s.port = std::atoi(port);
  }
  for (int i = 1; i < argc; ++i) {
    const std::string flag = argv[i];
    if (i + 1 >= argc) return Usage(("missing the value of " + flag).c_str());
    const std::string value = argv[++i];
    char* end = nullptr;
    const double number = std::strtod(value.c_str(), &end);
    const bool numeric = end != value.c_str() && *end == '\0' && number >= 0;
    if (flag == "--host") {
      s.host = value;
    } else if (flag == "--name") {
      s.name = value;
    } else if (flag == "--ready-file") {
      s.ready_file = value;
    } else if (flag == "--tls-cert") {
      s.tls_cert = value;
    } else if (flag == "--tls-key") {
      s.tls_key = value;
    } else if (flag == "--api-key") {
      s.api_key = value;
    } else if (flag == "--models") {
      s.models.clear();
      for (std::size_t at = 0; at <= value.size();) {
        const std::size_t comma = std::min(value.find(',', at), value.size());
        if (comma > at) s.models.push_back(value.substr(at, comma - at));
        at = comma + 1;
      }
      if (s.models.empty()) return Usage("--models: at least one name");
    } else if (!numeric) {
      return Usage((flag + ": not a number >= 0, or an unknown flag").c_str());
    } else if (flag == "--port") {
      s.port = static_cast<int>(number);
    } else if (flag == "--ttft-ms") {
      s.ttft_ms = static_cast<int>(number);
    } else if (flag == "--tpot-ms") {
      s.tpot_ms = static_cast<int>(number);
    } else if (flag == "--tokens") {
      s.tokens = std::max(1, static_cast<int>(number));
    } else if (flag == "--max-seqs") {
      s.max_seqs = std::max(1, static_cast<int>(number));
    } else if (flag == "--max-waiting") {
      s.max_waiting = static_cast<int>(number);
    } else if (flag == "--fail-rate") {
      s.fail_rate = number;
    } else if (flag == "--fail-status") {
      s.fail_status = static_cast<int>(number);
    } else if (flag == "--hang-rate") {
      s.hang_rate = number;
    } else if (flag == "--token-bytes") {
      s.token_bytes = static_cast<int>(std::min(number, 1e6));
    } else if (flag == "--seed") {
      s.seed = static_cast<std::uint64_t>(number);
    } else if (flag == "--drain-quiet-ms") {
      s.drain_quiet_ms = static_cast<int>(number);
    } else {
      return Usage(("unknown flag " + flag).c_str());
    }
  }
  if (s.tpot_ms >= 1000) return Usage("--tpot-ms: below 1000");
  std::signal(SIGPIPE, SIG_IGN);
  engine.random.seed(s.seed);
  engine.base = event_base_new();
  evhttp* http = evhttp_new(engine.base);
  evhttp_set_gencb(http, &OnRequest, &engine);
  evhttp_set_max_body_size(http, 4 << 20);
  SSL_CTX* tls = nullptr;
  if (!s.tls_cert.empty() || !s.tls_key.empty()) {
    tls = SSL_CTX_new(TLS_server_method());
    if (SSL_CTX_use_certificate_chain_file(tls, s.tls_cert.c_str()) != 1 ||
        SSL_CTX_use_PrivateKey_file(tls, s.tls_key.c_str(), SSL_FILETYPE_PEM) != 1) {
      return Usage("--tls-cert/--tls-key: cannot load the certificate and its key");
    }
    evhttp_set_bevcb(http, &TlsConnection, tls);
  }
  evhttp_bound_socket* socket = evhttp_bind_socket_with_handle(http, s.host.c_str(), s.port);
  if (socket == nullptr) return Usage(("cannot listen on port " + std::to_string(s.port)).c_str());
  sockaddr_in address{};
  socklen_t length = sizeof(address);
  getsockname(evhttp_bound_socket_get_fd(socket), reinterpret_cast<sockaddr*>(&address), &length);
  const std::string url = (tls != nullptr ? "https://" : "http://") + s.host + ":" +
                          std::to_string(ntohs(address.sin_port));
  if (!s.ready_file.empty()) {
    std::ofstream(s.ready_file + ".tmp") << url << "\n";
    std::rename((s.ready_file + ".tmp").c_str(), s.ready_file.c_str());
  }
  std::fprintf(stderr, "drover-fake-engine %s: serving on %s\n", s.name.c_str(), url.c_str());
  event* sigint = evsignal_new(engine.base, SIGINT, &OnSignal, engine.base);
  event* sigterm = evsignal_new(engine.base, SIGTERM, &OnTerm, &engine);
  event_add(sigint, nullptr);
  event_add(sigterm, nullptr);
  event_base_dispatch(engine.base);
  event_free(sigint);
  event_free(sigterm);
  if (engine.drain_check != nullptr) event_free(engine.drain_check);
  evhttp_free(http);
  if (tls != nullptr) SSL_CTX_free(tls);
  event_base_free(engine.base);
  return 0;
}
