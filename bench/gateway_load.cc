// gateway_load: the load generator of the inference benchmarks (docs/benchmarks.md, "Inference
// gateway"). One libevent thread drives many keep-alive connections against an OpenAI-compatible
// URL (the gateway, or a stand-in engine directly):
//   - open loop at --rate requests/s (a request is sent when due, whatever the replies; bursts of
//     --burst-rate for --burst-ms every --burst-every-ms), or
//   - closed loop with --concurrency requests always in flight (for the maximum throughput).
// Prompts are drawn from --prefixes distinct prefixes; --stream 1 asks for SSE replies and
// measures the time to the first chunk. With --kill-pid P --kill-at-s T it sends SIGKILL to P at
// T seconds and reports the failures and slow replies after it (the route-around measurement).
// Prints one JSON object: counts, requests/s, latency and time-to-first-token percentiles (ms).

#include <event2/buffer.h>
#include <event2/event.h>
#include <event2/http.h>
#include <event2/keyvalq_struct.h>
#include <signal.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <nlohmann/json.hpp>
#include <random>
#include <string>
#include <vector>

namespace {

using Json = nlohmann::json;

struct Options {
  std::string host = "127.0.0.1";
  int port = 0;
  std::string path = "/v1/completions";
  std::string model = "stand-in";
  std::string label;
  double rate = 100;
  int concurrency = 0;  // > 0: closed loop
  double duration_s = 10;
  bool stream = false;
  int prefixes = 16;
  int max_tokens = 16;
  int max_connections = 1024;
  int burst_every_ms = 0, burst_ms = 0;
  double burst_rate = 0;
  int kill_pid = 0;
  double kill_at_s = 0;
};

double Now() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

struct Load;

struct Request {
  Load* load;
  evhttp_connection* connection;
  double sent = 0, first_chunk = 0;
};

struct Result {
  double sent, done, first_chunk;
  int status;
};

struct Load {
  Options options;
  event_base* base = nullptr;
  std::vector<evhttp_connection*> idle;
  int open_connections = 0;
  int in_flight = 0;
  std::int64_t sent = 0, dropped = 0;
  double start = 0, sent_until = 0;
  std::vector<Result> results;
  std::vector<std::string> bodies;
  std::mt19937_64 random{7};
  bool stopping = false, killed = false;
  double killed_at = 0;
  event* tick = nullptr;
};

void Send(Load& load);

void OnChunk(evhttp_request*, void* arg) {
  Request* r = static_cast<Request*>(arg);
  if (r->first_chunk == 0) r->first_chunk = Now();
}

void OnDone(evhttp_request* response, void* arg) {
  Request* r = static_cast<Request*>(arg);
  Load& load = *r->load;
  const double now = Now();
  const int status = response == nullptr ? 0 : evhttp_request_get_response_code(response);
  load.results.push_back({r->sent, now, r->first_chunk == 0 ? now : r->first_chunk, status});
  load.idle.push_back(r->connection);
  --load.in_flight;
  delete r;
  if (load.options.concurrency > 0 && !load.stopping) Send(load);
  if (load.stopping && load.in_flight == 0) event_base_loopbreak(load.base);
}

void Send(Load& load) {
  evhttp_connection* connection = nullptr;
  if (!load.idle.empty()) {
    connection = load.idle.back();
    load.idle.pop_back();
  } else if (load.open_connections < load.options.max_connections) {
    connection = evhttp_connection_base_new(load.base, nullptr, load.options.host.c_str(),
                                            static_cast<ev_uint16_t>(load.options.port));
    evhttp_connection_set_timeout(connection, 120);
    ++load.open_connections;
  } else {
    ++load.dropped;
    return;
  }
  auto* r = new Request{&load, connection, Now(), 0};
  evhttp_request* request = evhttp_request_new(&OnDone, r);
  evhttp_request_set_chunked_cb(request, &OnChunk);
  evkeyvalq* headers = evhttp_request_get_output_headers(request);
  evhttp_add_header(headers, "Host", load.options.host.c_str());
  evhttp_add_header(headers, "Content-Type", "application/json");
  const std::string& body = load.bodies[load.random() % load.bodies.size()];
  evbuffer_add(evhttp_request_get_output_buffer(request), body.data(), body.size());
  ++load.in_flight;
  ++load.sent;
  evhttp_make_request(connection, request, EVHTTP_REQ_POST, load.options.path.c_str());
}

double RateAt(const Options& o, double elapsed) {
  if (o.burst_every_ms <= 0) return o.rate;
  const auto ms = static_cast<std::int64_t>(elapsed * 1000);
  return ms % o.burst_every_ms < o.burst_ms ? o.burst_rate : o.rate;
}

void OnTick(evutil_socket_t, short, void* arg) {
  Load& load = *static_cast<Load*>(arg);
  const double now = Now();
  const double elapsed = now - load.start;
  if (load.options.kill_pid > 0 && !load.killed && elapsed >= load.options.kill_at_s) {
    kill(load.options.kill_pid, SIGKILL);
    load.killed = true;
    load.killed_at = now;
  }
  if (elapsed >= load.options.duration_s) {
    load.stopping = true;
    event_del(load.tick);
    if (load.in_flight == 0) event_base_loopbreak(load.base);
    return;
  }
  if (load.options.concurrency > 0) return;
  // Requests due since the last tick at the current rate (open loop).
  const double step = now - load.sent_until;
  load.sent_until = now;
  static double owed = 0;
  owed += step * RateAt(load.options, elapsed);
  while (owed >= 1) {
    owed -= 1;
    Send(load);
  }
}

double Percentile(std::vector<double> values, double p) {
  if (values.empty()) return 0;
  std::sort(values.begin(), values.end());
  const auto index = static_cast<std::size_t>(p * static_cast<double>(values.size() - 1) + 0.5);
  return values[std::min(index, values.size() - 1)];
}

int Usage(const std::string& message) {
  std::fprintf(stderr,
               "gateway_load: %s\nflags: --url http://HOST:PORT --path P --model M --rate R "
               "--concurrency C --duration-s D --stream 0|1 --prefixes K --max-tokens N "
               "--max-connections N --burst-every-ms P --burst-ms B --burst-rate R2 --kill-pid P "
               "--kill-at-s T --label L\n",
               message.c_str());
  return 2;
}

}  // namespace

int main(int argc, char** argv) {
  Load load;
  Options& o = load.options;
  std::string url;
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string flag = argv[i], value = argv[i + 1];
    if (flag == "--url")
      url = value;
    else if (flag == "--path")
      o.path = value;
    else if (flag == "--model")
      o.model = value;
    else if (flag == "--label")
      o.label = value;
    else if (flag == "--rate")
      o.rate = std::atof(value.c_str());
    else if (flag == "--concurrency")
      o.concurrency = std::atoi(value.c_str());
    else if (flag == "--duration-s")
      o.duration_s = std::atof(value.c_str());
    else if (flag == "--stream")
      o.stream = value == "1";
    else if (flag == "--prefixes")
      o.prefixes = std::max(1, std::atoi(value.c_str()));
    else if (flag == "--max-tokens")
      o.max_tokens = std::atoi(value.c_str());
    else if (flag == "--max-connections")
      o.max_connections = std::atoi(value.c_str());
    else if (flag == "--burst-every-ms")
      o.burst_every_ms = std::atoi(value.c_str());
    else if (flag == "--burst-ms")
      o.burst_ms = std::atoi(value.c_str());
    else if (flag == "--burst-rate")
      o.burst_rate = std::atof(value.c_str());
    else if (flag == "--kill-pid")
      o.kill_pid = std::atoi(value.c_str());
    else if (flag == "--kill-at-s")
      o.kill_at_s = std::atof(value.c_str());
    else
      return Usage("unknown flag " + flag);
  }
  const std::size_t colon = url.rfind(':');
  if (url.rfind("http://", 0) != 0 || colon == std::string::npos || colon < 7) {
    return Usage("--url: http://HOST:PORT is required");
  }
  o.host = url.substr(7, colon - 7);
  o.port = std::atoi(url.c_str() + colon + 1);
  const bool chat = o.path.find("chat") != std::string::npos;
  for (int k = 0; k < o.prefixes; ++k) {
    const std::string prompt = "prefix " + std::to_string(k) + ": a shared system prompt";
    Json body = {{"model", o.model}, {"max_tokens", o.max_tokens}, {"stream", o.stream}};
    if (chat) {
      body["messages"] = Json::array({{{"role", "user"}, {"content", prompt}}});
    } else {
      body["prompt"] = prompt;
    }
    load.bodies.push_back(body.dump());
  }
  signal(SIGPIPE, SIG_IGN);
  load.base = event_base_new();
  load.start = load.sent_until = Now();
  load.tick = event_new(load.base, -1, EV_PERSIST, &OnTick, &load);
  const timeval every{0, 1000};
  event_add(load.tick, &every);
  if (o.concurrency > 0) {
    for (int i = 0; i < o.concurrency; ++i) Send(load);
  }
  event_base_dispatch(load.base);
  const double elapsed = Now() - load.start;

  std::vector<double> latency, ttft;
  std::map<int, int> statuses;
  int failed = 0, failed_after_kill = 0;
  double last_failure_after_kill = 0, last_slow_after_kill = 0;
  for (const Result& r : load.results) {
    ++statuses[r.status];
    if (r.status != 200) ++failed;
    latency.push_back((r.done - r.sent) * 1000);
    ttft.push_back((r.first_chunk - r.sent) * 1000);
  }
  const double p50 = Percentile(latency, 0.5);
  if (load.killed) {
    for (const Result& r : load.results) {
      if (r.done < load.killed_at) continue;
      if (r.status != 200) {
        ++failed_after_kill;
        last_failure_after_kill = std::max(last_failure_after_kill, r.done - load.killed_at);
      }
      if ((r.done - r.sent) * 1000 > 3 * p50 + 5) {
        last_slow_after_kill = std::max(last_slow_after_kill, r.done - load.killed_at);
      }
    }
  }
  Json statuses_json = Json::object();
  for (const auto& [status, count] : statuses) statuses_json[std::to_string(status)] = count;
  Json out = {{"label", o.label},
              {"sent", load.sent},
              {"completed", load.results.size()},
              {"failed", failed},
              {"dropped_no_connection", load.dropped},
              {"statuses", statuses_json},
              {"seconds", elapsed},
              {"requests_per_s", static_cast<double>(load.results.size()) / elapsed},
              {"latency_ms",
               {{"p50", p50},
                {"p90", Percentile(latency, 0.9)},
                {"p99", Percentile(latency, 0.99)},
                {"max", Percentile(latency, 1)}}},
              {"ttft_ms", {{"p50", Percentile(ttft, 0.5)}, {"p99", Percentile(ttft, 0.99)}}},
              {"connections", load.open_connections}};
  if (load.killed) {
    out["kill"] = {{"failed_after_kill", failed_after_kill},
                   {"last_failure_after_kill_ms", last_failure_after_kill * 1000},
                   {"last_slow_reply_after_kill_ms", last_slow_after_kill * 1000}};
  }
  std::printf("%s\n", out.dump().c_str());
  return 0;
}
