#include "drover/gateway/config.h"

#include <yaml-cpp/yaml.h>

#include <cstdlib>
#include <set>

#include "drover/common/filesystem.h"

namespace drover::gateway {
namespace {

// Reads one YAML file, reporting the first error at its node's position.
class Reader {
 public:
  explicit Reader(std::string file) : file_(std::move(file)) {}

  tl::unexpected<Error> Fail(const YAML::Node& node, const std::string& field,
                             const std::string& reason) const {
    const YAML::Mark mark = node.Mark();
    return InvalidArgument(file_ + ":" + std::to_string(mark.line + 1) + ":" +
                           std::to_string(mark.column + 1) + ": " + field + ": " + reason);
  }

  Status CheckKeys(const YAML::Node& map, const std::string& field,
                   const std::set<std::string>& known) const {
    if (!map.IsMap()) return Fail(map, field, "must be a mapping");
    for (const auto& entry : map) {
      const std::string key = entry.first.as<std::string>();
      if (!known.contains(key)) return Fail(entry.first, field + "." + key, "unknown field");
    }
    return OkStatus();
  }

  template <typename T>
  Status Read(const YAML::Node& map, const std::string& key, const std::string& field, T& out,
              bool required = false) const {
    const YAML::Node node = map[key];
    if (!node) return required ? Fail(map, field + "." + key, "is required") : OkStatus();
    try {
      out = node.as<T>();
    } catch (const YAML::Exception&) {
      return Fail(node, field + "." + key, "has the wrong type");
    }
    return OkStatus();
  }

  Status Positive(const YAML::Node& map, const std::string& key, const std::string& field,
                  std::int64_t& out) const {
    DROVER_RETURN_IF_ERROR(Read(map, key, field, out));
    if (out <= 0) return Fail(map[key], field + "." + key, "must be positive");
    return OkStatus();
  }

  Result<std::string> Secret(const YAML::Node& map, const std::string& field,
                             const std::string& file_key, const std::string& env_key) const {
    std::string path, env;
    DROVER_RETURN_IF_ERROR(Read(map, file_key, field, path));
    DROVER_RETURN_IF_ERROR(Read(map, env_key, field, env));
    if (!path.empty()) {
      auto text = ReadWholeFile(path);
      if (!text) return Fail(map[file_key], field + "." + file_key, "cannot read " + path);
      std::string key = *text;
      while (!key.empty() && (key.back() == '\n' || key.back() == '\r')) key.pop_back();
      return key;
    }
    if (!env.empty()) {
      const char* value = std::getenv(env.c_str());
      if (value == nullptr) return Fail(map[env_key], field + "." + env_key, "is not set");
      return std::string(value);
    }
    return std::string();
  }

 private:
  std::string file_;
};

Status ParseBackend(const Reader& r, const YAML::Node& node, const std::string& field,
                    BackendConfig& out) {
  DROVER_RETURN_IF_ERROR(r.CheckKeys(node, field,
                                     {"name", "service", "endpoints", "cost_per_1k_tokens", "model",
                                      "api_key_file", "api_key_env", "health_path", "ca_file"}));
  DROVER_RETURN_IF_ERROR(r.Read(node, "name", field, out.name, true));
  DROVER_RETURN_IF_ERROR(r.Read(node, "service", field, out.service));
  DROVER_RETURN_IF_ERROR(r.Read(node, "endpoints", field, out.endpoints));
  DROVER_RETURN_IF_ERROR(r.Read(node, "cost_per_1k_tokens", field, out.cost_per_1k_tokens));
  DROVER_RETURN_IF_ERROR(r.Read(node, "model", field, out.model));
  DROVER_RETURN_IF_ERROR(r.Read(node, "health_path", field, out.health_path));
  DROVER_RETURN_IF_ERROR(r.Read(node, "ca_file", field, out.ca_file));
  if (!out.ca_file.empty() && !ReadWholeFile(out.ca_file)) {
    return r.Fail(node["ca_file"], field + ".ca_file", "cannot read " + out.ca_file);
  }
  if (out.health_path.empty() || out.health_path[0] != '/' ||
      out.health_path.find_first_of(" \r\n") != std::string::npos) {
    return r.Fail(node["health_path"], field + ".health_path", "must be a path starting with /");
  }
  if (out.cost_per_1k_tokens < 0) {
    return r.Fail(node["cost_per_1k_tokens"], field + ".cost_per_1k_tokens", "must be >= 0");
  }
  if (out.service.empty() && out.endpoints.empty()) {
    return r.Fail(node, field, "needs endpoints or a service");
  }
  for (std::size_t i = 0; i < out.endpoints.size(); ++i) {
    if (!ParseEndpointUrl(out.endpoints[i])) {
      return r.Fail(node["endpoints"][i], field + ".endpoints[" + std::to_string(i) + "]",
                    "must be http://HOST:PORT or https://HOST:PORT");
    }
    while (out.endpoints[i].back() == '/') out.endpoints[i].pop_back();
  }
  DROVER_ASSIGN_OR_RETURN(out.api_key, r.Secret(node, field, "api_key_file", "api_key_env"));
  return OkStatus();
}

Status ParseModel(const Reader& r, const YAML::Node& node, const std::string& field,
                  ModelConfig& out) {
  DROVER_RETURN_IF_ERROR(r.CheckKeys(node, field,
                                     {"name", "policy", "prefix_bytes", "epsilon", "virtual_nodes",
                                      "max_waiting", "max_wait_ms", "backends"}));
  DROVER_RETURN_IF_ERROR(r.Read(node, "name", field, out.name, true));
  std::string policy = "least-outstanding";
  DROVER_RETURN_IF_ERROR(r.Read(node, "policy", field, policy));
  if (policy == "least-outstanding") {
    out.route.policy = Policy::kLeastOutstanding;
  } else if (policy == "prefix-affinity") {
    out.route.policy = Policy::kPrefixAffinity;
  } else {
    return r.Fail(node["policy"], field + ".policy",
                  "must be least-outstanding or prefix-affinity, not \"" + policy + "\"");
  }
  DROVER_RETURN_IF_ERROR(r.Read(node, "prefix_bytes", field, out.prefix_bytes));
  DROVER_RETURN_IF_ERROR(r.Read(node, "max_waiting", field, out.max_waiting));
  DROVER_RETURN_IF_ERROR(r.Positive(node, "max_wait_ms", field, out.max_wait_ms));
  if (out.max_waiting < 0) return r.Fail(node, field + ".max_waiting", "must be >= 0");
  DROVER_RETURN_IF_ERROR(r.Read(node, "epsilon", field, out.route.epsilon));
  DROVER_RETURN_IF_ERROR(r.Read(node, "virtual_nodes", field, out.route.virtual_nodes));
  if (out.prefix_bytes <= 0) return r.Fail(node, field + ".prefix_bytes", "must be positive");
  if (out.route.epsilon <= 0) return r.Fail(node, field + ".epsilon", "must be positive");
  if (out.route.virtual_nodes <= 0 || out.route.virtual_nodes > 1024) {
    return r.Fail(node, field + ".virtual_nodes", "must be 1 to 1024");
  }
  const YAML::Node backends = node["backends"];
  if (!backends || !backends.IsSequence() || backends.size() == 0) {
    return r.Fail(node, field + ".backends", "must list at least one backend");
  }
  for (std::size_t i = 0; i < backends.size(); ++i) {
    BackendConfig backend;
    DROVER_RETURN_IF_ERROR(
        ParseBackend(r, backends[i], field + ".backends[" + std::to_string(i) + "]", backend));
    out.backends.push_back(std::move(backend));
  }
  return OkStatus();
}

}  // namespace

Result<EndpointAddress> ParseEndpointUrl(const std::string& url) {
  EndpointAddress address;
  std::string rest;
  if (url.rfind("http://", 0) == 0) {
    rest = url.substr(std::string_view("http://").size());
  } else if (url.rfind("https://", 0) == 0) {
    address.tls = true;
    rest = url.substr(std::string_view("https://").size());
  } else {
    return InvalidArgument("not an http:// or https:// URL: " + url);
  }
  while (!rest.empty() && rest.back() == '/') rest.pop_back();
  const std::size_t colon = rest.rfind(':');
  if (colon == std::string::npos || colon == 0 || rest.find('/') != std::string::npos) {
    return InvalidArgument("not http[s]://HOST:PORT: " + url);
  }
  int port = 0;
  for (char c : rest.substr(colon + 1)) {
    if (c < '0' || c > '9' || port > 65535) return InvalidArgument("bad port in " + url);
    port = port * 10 + (c - '0');
  }
  if (port <= 0 || port > 65535) return InvalidArgument("bad port in " + url);
  address.host = rest.substr(0, colon);
  address.port = port;
  return address;
}

Result<std::pair<std::string, int>> SplitHttpUrl(const std::string& url) {
  DROVER_ASSIGN_OR_RETURN(EndpointAddress address, ParseEndpointUrl(url));
  if (address.tls) return InvalidArgument("not an http:// URL: " + url);
  return std::make_pair(address.host, address.port);
}

Result<GatewayConfig> ParseConfig(const std::string& text, const std::string& file) {
  YAML::Node root;
  try {
    root = YAML::Load(text);
  } catch (const YAML::ParserException& e) {
    return InvalidArgument(file + ":" + std::to_string(e.mark.line + 1) + ":" +
                           std::to_string(e.mark.column + 1) + ": " + e.msg);
  }
  const Reader r(file);
  GatewayConfig config;
  DROVER_RETURN_IF_ERROR(
      r.CheckKeys(root, "config",
                  {"models", "teams", "breaker", "retry_budget", "limits", "dns",
                   "probe_interval_ms", "backend_timeout_ms", "poll_interval_ms"}));
  const YAML::Node models = root["models"];
  if (!models || !models.IsSequence() || models.size() == 0) {
    return r.Fail(root, "models", "must list at least one model");
  }
  std::set<std::string> names;
  for (std::size_t i = 0; i < models.size(); ++i) {
    ModelConfig model;
    const std::string field = "models[" + std::to_string(i) + "]";
    DROVER_RETURN_IF_ERROR(ParseModel(r, models[i], field, model));
    if (!names.insert(model.name).second) {
      return r.Fail(models[i], field + ".name", "duplicate model \"" + model.name + "\"");
    }
    config.models.push_back(std::move(model));
  }
  if (const YAML::Node teams = root["teams"]) {
    if (!teams.IsSequence()) return r.Fail(teams, "teams", "must be a list");
    for (std::size_t i = 0; i < teams.size(); ++i) {
      const std::string field = "teams[" + std::to_string(i) + "]";
      DROVER_RETURN_IF_ERROR(r.CheckKeys(teams[i], field, {"name", "key_file", "key_env"}));
      TeamConfig team;
      DROVER_RETURN_IF_ERROR(r.Read(teams[i], "name", field, team.name, true));
      DROVER_ASSIGN_OR_RETURN(team.key, r.Secret(teams[i], field, "key_file", "key_env"));
      if (team.key.empty()) return r.Fail(teams[i], field, "needs key_file or key_env");
      config.teams.push_back(std::move(team));
    }
  }
  if (const YAML::Node breaker = root["breaker"]) {
    DROVER_RETURN_IF_ERROR(
        r.CheckKeys(breaker, "breaker", {"failure_threshold", "open_ms", "max_open_ms"}));
    std::int64_t threshold = config.breaker.failure_threshold;
    DROVER_RETURN_IF_ERROR(r.Positive(breaker, "failure_threshold", "breaker", threshold));
    config.breaker.failure_threshold = static_cast<int>(threshold);
    DROVER_RETURN_IF_ERROR(r.Positive(breaker, "open_ms", "breaker", config.breaker.open_ms));
    DROVER_RETURN_IF_ERROR(
        r.Positive(breaker, "max_open_ms", "breaker", config.breaker.max_open_ms));
    if (config.breaker.max_open_ms < config.breaker.open_ms) {
      return r.Fail(breaker, "breaker.max_open_ms", "must be at least open_ms");
    }
  }
  if (const YAML::Node budget = root["retry_budget"]) {
    DROVER_RETURN_IF_ERROR(
        r.CheckKeys(budget, "retry_budget", {"ratio", "min_retries", "window_ms"}));
    DROVER_RETURN_IF_ERROR(r.Read(budget, "ratio", "retry_budget", config.retry_budget.ratio));
    DROVER_RETURN_IF_ERROR(
        r.Read(budget, "min_retries", "retry_budget", config.retry_budget.min_retries));
    DROVER_RETURN_IF_ERROR(
        r.Positive(budget, "window_ms", "retry_budget", config.retry_budget.window_ms));
    if (config.retry_budget.ratio < 0 || config.retry_budget.min_retries < 0) {
      return r.Fail(budget, "retry_budget", "ratio and min_retries must be >= 0");
    }
  }
  if (const YAML::Node limits = root["limits"]) {
    DROVER_RETURN_IF_ERROR(
        r.CheckKeys(limits, "limits",
                    {"max_body_bytes", "max_header_bytes", "max_json_depth", "max_response_bytes",
                     "max_in_flight", "max_connections", "stream_buffer_bytes"}));
    GatewayLimits& l = config.limits;
    DROVER_RETURN_IF_ERROR(r.Positive(limits, "max_body_bytes", "limits", l.max_body_bytes));
    DROVER_RETURN_IF_ERROR(r.Positive(limits, "max_header_bytes", "limits", l.max_header_bytes));
    DROVER_RETURN_IF_ERROR(
        r.Positive(limits, "max_response_bytes", "limits", l.max_response_bytes));
    DROVER_RETURN_IF_ERROR(
        r.Positive(limits, "stream_buffer_bytes", "limits", l.stream_buffer_bytes));
    std::int64_t depth = l.max_json_depth, in_flight = l.max_in_flight,
                 connections = l.max_connections;
    DROVER_RETURN_IF_ERROR(r.Positive(limits, "max_json_depth", "limits", depth));
    DROVER_RETURN_IF_ERROR(r.Positive(limits, "max_in_flight", "limits", in_flight));
    DROVER_RETURN_IF_ERROR(r.Positive(limits, "max_connections", "limits", connections));
    if (connections > 1000000) {
      return r.Fail(limits["max_connections"], "limits.max_connections", "must be at most 1000000");
    }
    l.max_json_depth = static_cast<int>(depth);
    l.max_in_flight = static_cast<int>(in_flight);
    l.max_connections = static_cast<int>(connections);
  }
  if (const YAML::Node dns = root["dns"]) {
    DROVER_RETURN_IF_ERROR(r.CheckKeys(dns, "dns", {"nameservers", "timeout_ms", "attempts"}));
    DROVER_RETURN_IF_ERROR(r.Read(dns, "nameservers", "dns", config.dns.nameservers));
    DROVER_RETURN_IF_ERROR(r.Positive(dns, "timeout_ms", "dns", config.dns.timeout_ms));
    std::int64_t attempts = config.dns.attempts;
    DROVER_RETURN_IF_ERROR(r.Positive(dns, "attempts", "dns", attempts));
    if (attempts > 10) return r.Fail(dns["attempts"], "dns.attempts", "must be 1 to 10");
    config.dns.attempts = static_cast<int>(attempts);
    for (std::size_t i = 0; i < config.dns.nameservers.size(); ++i) {
      const std::string& server = config.dns.nameservers[i];
      if (server.empty() ||
          server.find_first_not_of("0123456789.:[]abcdefABCDEF") != std::string::npos) {
        return r.Fail(dns["nameservers"][i], "dns.nameservers[" + std::to_string(i) + "]",
                      "must be IP or IP:PORT");
      }
    }
  }
  DROVER_RETURN_IF_ERROR(r.Positive(root, "probe_interval_ms", "config", config.probe_interval_ms));
  DROVER_RETURN_IF_ERROR(
      r.Positive(root, "backend_timeout_ms", "config", config.backend_timeout_ms));
  DROVER_RETURN_IF_ERROR(r.Positive(root, "poll_interval_ms", "config", config.poll_interval_ms));
  return config;
}

Result<GatewayConfig> LoadConfig(const std::string& path) {
  DROVER_ASSIGN_OR_RETURN(std::string text, ReadWholeFile(path));
  return ParseConfig(text, path);
}

}  // namespace drover::gateway
