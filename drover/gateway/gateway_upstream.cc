#include <event2/buffer.h>
#include <event2/keyvalq_struct.h>
#include <spdlog/spdlog.h>

#include <cstdlib>

#include "drover/gateway/gateway_impl.h"

namespace drover::gateway {

void Gateway::Impl::OnProbeTimer(evutil_socket_t, short, void* self) {
  static_cast<Impl*>(self)->Probe();
}

void Gateway::Impl::Probe() {
  // Every endpoint of a backend without an API key (external providers are not probed: they may
  // have no /health, and a probe may cost), once even if several models route to it.
  std::map<std::string, const BackendConfig*> urls;  // URL -> its backend (health_path, CAs)
  for (const Route& route : routes_) {
    for (std::size_t b = 0; b < route.config.backends.size(); ++b) {
      if (!route.config.backends[b].api_key.empty()) continue;
      for (const Endpoint& endpoint : route.router->backends()[b].endpoints) {
        urls.emplace(endpoint.url, &route.config.backends[b]);
      }
    }
  }
  for (const auto& [url, backend] : urls) {
    if (probing_.contains(url)) continue;
    const std::string& path = backend->health_path;
    evhttp_connection* connection = Connection(url, backend->ca_file);
    if (connection == nullptr) {
      ProbeDone(ProbeCall{this, url, nullptr}, false);
      continue;
    }
    probing_.insert(url);
    auto* probe = new ProbeCall{this, url, connection};
    evhttp_request* request = evhttp_request_new(
        [](evhttp_request* response, void* arg) {
          std::unique_ptr<ProbeCall> probe(static_cast<ProbeCall*>(arg));
          probe->gateway->ProbeDone(
              *probe, response != nullptr && evhttp_request_get_response_code(response) == 200);
        },
        probe);
    const std::string host = url.substr(url.find("://") + 3);
    evhttp_add_header(evhttp_request_get_output_headers(request), "Host", host.c_str());
    if (evhttp_make_request(probe->connection, request, EVHTTP_REQ_GET, path.c_str()) != 0) {
      std::unique_ptr<ProbeCall> failed(probe);
      ProbeDone(*failed, false);
    }
  }
}

void Gateway::Impl::ProbeDone(const ProbeCall& probe, bool healthy) {
  probing_.erase(probe.url);
  Release(probe.url, probe.connection);
  const TimeMs now = NowMs();
  for (Route& route : routes_) {
    for (std::size_t b = 0; b < route.config.backends.size(); ++b) {
      route.router->OnProbe(Pick{static_cast<int>(b), probe.url}, healthy, now);
    }
  }
}

void Gateway::Impl::OnPollTimer(evutil_socket_t, short, void* self) {
  Impl* impl = static_cast<Impl*>(self);
  impl->Poll();
  impl->PostLoad();
}

evhttp_request* Gateway::Impl::ServerRequest(void (*done)(evhttp_request*, void*)) {
  if (server_ == nullptr) {
    server_ = evhttp_connection_base_new(base_, dns_, server_host_.c_str(),
                                         static_cast<ev_uint16_t>(server_port_));
    const timeval timeout = ToTimeval(options_.config.poll_interval_ms * 5);
    evhttp_connection_set_timeout_tv(server_, &timeout);
  }
  evhttp_request* request = evhttp_request_new(done, this);
  evkeyvalq* headers = evhttp_request_get_output_headers(request);
  const std::string host = server_host_ + ":" + std::to_string(server_port_);
  evhttp_add_header(headers, "Host", host.c_str());
  if (!options_.token.empty()) {
    evhttp_add_header(headers, "Authorization", ("Bearer " + options_.token).c_str());
  }
  return request;
}

void Gateway::Impl::Poll() {
  if (poll_in_flight_) return;
  poll_in_flight_ = true;
  evhttp_request* request = ServerRequest([](evhttp_request* response, void* self) {
    Impl* impl = static_cast<Impl*>(self);
    impl->poll_in_flight_ = false;
    const int code = response == nullptr ? 0 : evhttp_request_get_response_code(response);
    Json services;
    if (code == 200) {
      evbuffer* input = evhttp_request_get_input_buffer(response);
      std::string text(evbuffer_get_length(input), '\0');
      evbuffer_copyout(input, text.data(), text.size());
      services = Json::parse(text, nullptr, false);
    }
    if (code == 200 && services.is_object() && services.contains("services") &&
        services["services"].is_array()) {
      impl->ApplyServices(services["services"]);
      return;
    }
    // Keep serving the last list; warn at most every 30 s.
    const TimeMs now = NowMs();
    if (now - impl->last_poll_warning_ >= 30 * kMillisPerSecond) {
      impl->last_poll_warning_ = now;
      spdlog::warn("gateway: GET /v1/services failed (status {}); keeping the last endpoints",
                   code);
    }
  });
  if (evhttp_make_request(server_, request, EVHTTP_REQ_GET, "/v1/services") != 0) {
    poll_in_flight_ = false;
  }
}

void Gateway::Impl::ApplyServices(const Json& services) {
  // A service's ready endpoints with a valid http:// URL; the rest (not ready, malformed) are
  // not routable.
  std::map<std::string, std::pair<std::vector<std::string>, std::vector<std::string>>> ready;
  for (const Json& service : services) {
    if (!service.is_object() || !service.contains("name") || !service["name"].is_string()) {
      continue;
    }
    auto& [urls, names] = ready[service["name"].get<std::string>()];
    if (!service.contains("endpoints") || !service["endpoints"].is_array()) continue;
    for (const Json& endpoint : service["endpoints"]) {
      if (!endpoint.is_object() || !endpoint.value("ready", false)) continue;
      const std::string url = endpoint.value("url", std::string());
      if (!SplitHttpUrl(url)) continue;
      urls.push_back(url);
      names.push_back(endpoint.contains("job") ? "job " + endpoint["job"].dump() : url);
    }
  }
  for (Route& route : routes_) {
    for (std::size_t b = 0; b < route.config.backends.size(); ++b) {
      const BackendConfig& config = route.config.backends[b];
      if (config.service.empty()) continue;
      std::vector<std::string> urls = config.endpoints, names = config.endpoints;
      if (const auto it = ready.find(config.service); it != ready.end()) {
        urls.insert(urls.end(), it->second.first.begin(), it->second.first.end());
        names.insert(names.end(), it->second.second.begin(), it->second.second.end());
      }
      route.router->SetEndpoints(static_cast<int>(b), urls, names);
    }
  }
  DrainWaiting();
}

void Gateway::Impl::PostLoad() {
  // Each service's signal over the window since the last post: requests sent to it, and
  // attempts in flight now (each endpoint once, however many models route to it).
  const TimeMs now = NowMs();
  std::map<std::string, std::map<std::string, int>> outstanding;  // service -> url -> count
  for (const Route& route : routes_) {
    for (std::size_t b = 0; b < route.config.backends.size(); ++b) {
      const std::string& service = route.config.backends[b].service;
      if (service.empty()) continue;
      auto& by_url = outstanding[service];
      for (const Endpoint& endpoint : route.router->backends()[b].endpoints) {
        by_url[endpoint.url] += endpoint.outstanding;
      }
    }
  }
  std::map<std::string, int> waiting;  // service -> requests waiting for a model it serves
  for (const auto& [model, queue] : waiting_) {
    std::set<std::string> services;
    for (const BackendConfig& backend : routes_[model].config.backends) {
      if (!backend.service.empty()) services.insert(backend.service);
    }
    for (const std::string& service : services) waiting[service] += static_cast<int>(queue.size());
  }
  for (const auto& [service, by_url] : outstanding) {
    int in_flight = 0;
    for (const auto& [url, count] : by_url) in_flight += count;
    const std::string body = Json{{"in_flight", in_flight},
                                  {"waiting", waiting[service]},
                                  {"requests", service_requests_[service]},
                                  {"window_ms", now - load_window_start_}}
                                 .dump();
    evhttp_request* request = ServerRequest([](evhttp_request*, void*) {});
    evhttp_add_header(evhttp_request_get_output_headers(request), "Content-Type",
                      "application/json");
    evbuffer_add(evhttp_request_get_output_buffer(request), body.data(), body.size());
    char* escaped = evhttp_uriencode(service.c_str(), -1, 0);
    const std::string path = "/v1/services/" + std::string(escaped) + "/load";
    free(escaped);
    evhttp_make_request(server_, request, EVHTTP_REQ_POST, path.c_str());
  }
  service_requests_.clear();
  load_window_start_ = now;
}

}  // namespace drover::gateway
