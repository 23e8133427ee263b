#include "drover/exec/kubernetes/client.h"

#include <fmt/format.h>
#include <httplib.h>
#include <openssl/pem.h>
#include <openssl/x509.h>
#include <yaml-cpp/yaml.h>

#include <chrono>
#include <cstdlib>

#include "drover/common/filesystem.h"

namespace drover::exec::kubernetes {

using nlohmann::json;

namespace {

// ---------------------------------------------------------------------------------------------
// kubeconfig

Result<std::string> DecodeBase64(std::string_view text) {
  auto value = [](char c) -> int {
    if (c >= 'A' && c <= 'Z') return c - 'A';
    if (c >= 'a' && c <= 'z') return c - 'a' + 26;
    if (c >= '0' && c <= '9') return c - '0' + 52;
    if (c == '+' || c == '-') return 62;
    if (c == '/' || c == '_') return 63;
    return -1;
  };
  std::string out;
  int bits = 0;
  int buffer = 0;
  for (char c : text) {
    if (c == '=' || c == '\n' || c == '\r' || c == ' ' || c == '\t') continue;
    const int v = value(c);
    if (v < 0) return InvalidArgument(fmt::format("invalid base64 character '{}'", c));
    buffer = (buffer << 6) | v;
    bits += 6;
    if (bits >= 8) {
      bits -= 8;
      out += static_cast<char>((buffer >> bits) & 0xff);
    }
  }
  return out;
}

// The entry named `name` of a kubeconfig list (clusters, users, contexts) and its index.
std::optional<std::pair<YAML::Node, std::size_t>> Named(const YAML::Node& list,
                                                        const std::string& name) {
  if (!list || !list.IsSequence()) return std::nullopt;
  for (std::size_t i = 0; i < list.size(); ++i) {
    const YAML::Node& entry = list[i];
    if (entry.IsMap() && entry["name"] && entry["name"].IsScalar() &&
        entry["name"].Scalar() == name) {
      return std::make_pair(entry, i);
    }
  }
  return std::nullopt;
}

std::string Text(const YAML::Node& map, const char* key) {
  if (!map || !map.IsMap() || !map[key] || !map[key].IsScalar()) return "";
  return map[key].Scalar();
}

std::string Resolve(const std::string& base_dir, const std::string& path) {
  if (path.empty() || path.front() == '/' || base_dir.empty()) return path;
  return base_dir + "/" + path;
}

}  // namespace

Result<KubeConfig> ParseKubeConfig(std::string_view text, const std::string& file,
                                   const std::string& base_dir, const std::string& context) {
  auto fail = [&](const std::string& field, const std::string& message) {
    return InvalidArgument(fmt::format("{}: {}: {}", file, field, message));
  };
  YAML::Node root;
  try {
    root = YAML::Load(std::string(text));
  } catch (const YAML::Exception& e) {
    return InvalidArgument(fmt::format("{}: invalid YAML: {}", file, e.msg));
  }
  if (!root.IsMap()) return fail("kind", "expected a kubeconfig (kind: Config)");
  const std::string context_name = context.empty() ? Text(root, "current-context") : context;
  if (context_name.empty()) {
    return fail("current-context", "not set; name a context (kubectl config use-context NAME)");
  }
  auto ctx = Named(root["contexts"], context_name);
  if (!ctx) return fail("contexts", fmt::format("no context named '{}'", context_name));
  const std::string ctx_path = fmt::format("contexts[{}].context", ctx->second);
  const YAML::Node ctx_body = ctx->first["context"];
  KubeConfig config;
  config.namespace_name = Text(ctx_body, "namespace");

  const std::string cluster_name = Text(ctx_body, "cluster");
  auto cluster = Named(root["clusters"], cluster_name);
  if (!cluster) {
    return fail(ctx_path + ".cluster", fmt::format("no cluster named '{}'", cluster_name));
  }
  const std::string cluster_path = fmt::format("clusters[{}].cluster", cluster->second);
  const YAML::Node c = cluster->first["cluster"];
  config.server = Text(c, "server");
  if (config.server.rfind("https://", 0) != 0 && config.server.rfind("http://", 0) != 0) {
    return fail(cluster_path + ".server",
                fmt::format("expected an https:// (or http://) URL, found '{}'", config.server));
  }
  config.insecure_skip_tls_verify = Text(c, "insecure-skip-tls-verify") == "true";
  if (std::string data = Text(c, "certificate-authority-data"); !data.empty()) {
    auto pem = DecodeBase64(data);
    if (!pem) return fail(cluster_path + ".certificate-authority-data", pem.error().message);
    config.ca_pem = *pem;
  } else if (std::string path = Text(c, "certificate-authority"); !path.empty()) {
    auto pem = ReadWholeFile(Resolve(base_dir, path));
    if (!pem) return fail(cluster_path + ".certificate-authority", pem.error().message);
    config.ca_pem = *pem;
  }

  const std::string user_name = Text(ctx_body, "user");
  if (user_name.empty()) return config;  // no credentials (an insecure test server)
  auto user = Named(root["users"], user_name);
  if (!user) return fail(ctx_path + ".user", fmt::format("no user named '{}'", user_name));
  const std::string user_path = fmt::format("users[{}].user", user->second);
  const YAML::Node u = user->first["user"];
  if (u && u.IsMap() && (u["exec"] || u["auth-provider"])) {
    return fail(user_path + (u["exec"] ? ".exec" : ".auth-provider"),
                "credential plugins are not supported; give the user a token (e.g. a service "
                "account's) or a client certificate");
  }
  config.token = Text(u, "token");
  if (std::string path = Text(u, "tokenFile"); config.token.empty() && !path.empty()) {
    auto token = ReadWholeFile(Resolve(base_dir, path));
    if (!token) return fail(user_path + ".tokenFile", token.error().message);
    config.token = *token;
    while (!config.token.empty() && std::isspace(static_cast<unsigned char>(config.token.back()))) {
      config.token.pop_back();
    }
  }
  auto pem_field = [&](const char* data_key, const char* file_key, std::string& out) -> Status {
    if (std::string data = Text(u, data_key); !data.empty()) {
      auto pem = DecodeBase64(data);
      if (!pem) return fail(user_path + "." + data_key, pem.error().message);
      out = *pem;
    } else if (std::string path = Text(u, file_key); !path.empty()) {
      auto pem = ReadWholeFile(Resolve(base_dir, path));
      if (!pem) return fail(user_path + "." + file_key, pem.error().message);
      out = *pem;
    }
    return OkStatus();
  };
  DROVER_RETURN_IF_ERROR(
      pem_field("client-certificate-data", "client-certificate", config.client_cert_pem));
  DROVER_RETURN_IF_ERROR(pem_field("client-key-data", "client-key", config.client_key_pem));
  if (config.client_cert_pem.empty() != config.client_key_pem.empty()) {
    return fail(
        user_path + (config.client_cert_pem.empty() ? ".client-certificate" : ".client-key"),
        "a client certificate needs both the certificate and its key");
  }
  return config;
}

Result<KubeConfig> LoadKubeConfig(const std::string& path, const std::string& context) {
  DROVER_ASSIGN_OR_RETURN(auto text, ReadWholeFile(path));
  const std::size_t slash = path.rfind('/');
  const std::string base_dir = slash == std::string::npos ? "." : path.substr(0, slash);
  return ParseKubeConfig(text, path, base_dir, context);
}

Result<KubeConfig> InClusterConfig() {
  const char* host = std::getenv("KUBERNETES_SERVICE_HOST");
  const char* port = std::getenv("KUBERNETES_SERVICE_PORT");
  if (!host || !port || !*host || !*port) {
    return FailedPrecondition(
        "not inside a pod: KUBERNETES_SERVICE_HOST and KUBERNETES_SERVICE_PORT are not set");
  }
  const std::string dir = "/var/run/secrets/kubernetes.io/serviceaccount";
  KubeConfig config;
  const std::string h = host;
  config.server =
      fmt::format("https://{}:{}", h.find(':') != std::string::npos ? "[" + h + "]" : h, port);
  DROVER_ASSIGN_OR_RETURN(config.token, ReadWholeFile(dir + "/token"));
  DROVER_ASSIGN_OR_RETURN(config.ca_pem, ReadWholeFile(dir + "/ca.crt"));
  if (auto ns = ReadWholeFile(dir + "/namespace")) config.namespace_name = *ns;
  return config;
}

std::optional<TimeMs> ParseTime(std::string_view text) {
  int year, month, day, hour, minute, second;
  int consumed = 0;
  const std::string s(text);
  if (std::sscanf(s.c_str(), "%4d-%2d-%2dT%2d:%2d:%2d%n", &year, &month, &day, &hour, &minute,
                  &second, &consumed) != 6) {
    return std::nullopt;
  }
  const std::chrono::year_month_day date{std::chrono::year(year),
                                         std::chrono::month(static_cast<unsigned>(month)),
                                         std::chrono::day(static_cast<unsigned>(day))};
  if (!date.ok()) return std::nullopt;
  const auto midnight = std::chrono::sys_days(date).time_since_epoch();
  TimeMs ms = std::chrono::duration_cast<std::chrono::milliseconds>(midnight).count() +
              ((hour * 60 + minute) * 60 + second) * kMillisPerSecond;
  std::size_t i = static_cast<std::size_t>(consumed);
  if (i < s.size() && s[i] == '.') {
    int scale = 100;
    for (++i; i < s.size() && std::isdigit(static_cast<unsigned char>(s[i])); ++i) {
      ms += (s[i] - '0') * scale;
      scale /= 10;
    }
  }
  if (i < s.size() && (s[i] == '+' || s[i] == '-')) {
    int oh = 0, om = 0;
    if (std::sscanf(s.c_str() + i + 1, "%2d:%2d", &oh, &om) != 2) return std::nullopt;
    const TimeMs offset = (oh * 60 + om) * kMillisPerMinute;
    ms += s[i] == '+' ? -offset : offset;
  } else if (i >= s.size() || (s[i] != 'Z' && s[i] != 'z')) {
    return std::nullopt;
  }
  return ms;
}

// ---------------------------------------------------------------------------------------------
// Client

namespace {

struct Url {
  std::string scheme, host, prefix;
  int port = 0;
};

Result<Url> ParseUrl(const std::string& server) {
  Url url;
  const std::size_t scheme_end = server.find("://");
  if (scheme_end == std::string::npos) return InvalidArgument("server: not a URL: " + server);
  url.scheme = server.substr(0, scheme_end);
  std::string rest = server.substr(scheme_end + 3);
  if (std::size_t slash = rest.find('/'); slash != std::string::npos) {
    url.prefix = rest.substr(slash);
    while (!url.prefix.empty() && url.prefix.back() == '/') url.prefix.pop_back();
    rest = rest.substr(0, slash);
  }
  url.port = url.scheme == "https" ? 443 : 80;
  std::size_t colon = rest.rfind(':');
  if (colon != std::string::npos && rest.find(']', colon) == std::string::npos) {
    url.port = std::atoi(rest.c_str() + colon + 1);
    rest = rest.substr(0, colon);
  }
  if (rest.size() > 2 && rest.front() == '[' && rest.back() == ']') {
    rest = rest.substr(1, rest.size() - 2);
  }
  url.host = rest;
  if (url.host.empty() || url.port <= 0) return InvalidArgument("server: not a URL: " + server);
  return url;
}

struct BioDeleter {
  void operator()(BIO* bio) const { BIO_free(bio); }
};
using BioPtr = std::unique_ptr<BIO, BioDeleter>;

BioPtr MemoryBio(const std::string& pem) {
  return BioPtr(BIO_new_mem_buf(pem.data(), static_cast<int>(pem.size())));
}

std::string QueryEscape(const std::string& text) {
  std::string out;
  for (unsigned char c : text) {
    if (std::isalnum(c) || c == '-' || c == '_' || c == '.' || c == '~' || c == '/') {
      out += static_cast<char>(c);
    } else {
      out += fmt::format("%{:02X}", c);
    }
  }
  return out;
}

// The Error of a non-2xx reply, from its Status object when it has one.
Error StatusError(int status, const std::string& body, const std::string& what) {
  json parsed = json::parse(body, nullptr, /*allow_exceptions=*/false);
  std::string reason, message;
  if (parsed.is_object()) {
    reason = parsed.value("reason", "");
    message = parsed.value("message", "");
  }
  if (message.empty()) message = body.substr(0, 200);
  ErrorCode code = ErrorCode::kInternal;
  if (status == 400 || status == 422) {
    code = ErrorCode::kInvalidArgument;
  } else if (status == 401 || status == 403) {
    code = ErrorCode::kFailedPrecondition;
  } else if (status == 404) {
    code = ErrorCode::kNotFound;
  } else if (status == 409) {
    code = reason == "AlreadyExists" ? ErrorCode::kAlreadyExists : ErrorCode::kAborted;
  } else if (status == 410) {
    code = ErrorCode::kAborted;
  } else if (status == 429) {
    code = ErrorCode::kResourceExhausted;
  } else if (status >= 500) {
    code = ErrorCode::kUnavailable;
  }
  return Error{
      code,
      fmt::format("{}: HTTP {}{}: {}", what, status, reason.empty() ? "" : " " + reason, message),
      {}};
}

DurationMs RetryAfterMs(const httplib::Response& response, DurationMs cap) {
  const std::string value = response.get_header_value("Retry-After");
  DurationMs ms = kMillisPerSecond;
  if (!value.empty()) {
    char* end = nullptr;
    const long seconds = std::strtol(value.c_str(), &end, 10);
    if (end != value.c_str() && seconds >= 0) ms = seconds * kMillisPerSecond;
  }
  return std::min(ms, cap);
}

}  // namespace

Result<std::unique_ptr<Client>> Client::Connect(const KubeConfig& config, ClientOptions options) {
  DROVER_ASSIGN_OR_RETURN(auto url, ParseUrl(config.server));
  std::unique_ptr<httplib::ClientImpl> http;
  if (url.scheme == "https") {
    std::unique_ptr<httplib::SSLClient> ssl;
    if (!config.client_cert_pem.empty()) {
      BioPtr cert_bio = MemoryBio(config.client_cert_pem);
      BioPtr key_bio = MemoryBio(config.client_key_pem);
      X509* cert = PEM_read_bio_X509(cert_bio.get(), nullptr, nullptr, nullptr);
      EVP_PKEY* key = PEM_read_bio_PrivateKey(key_bio.get(), nullptr, nullptr, nullptr);
      if (!cert || !key) {
        X509_free(cert);
        EVP_PKEY_free(key);
        return InvalidArgument(fmt::format("client certificate: cannot read the {} as PEM",
                                           cert ? "key" : "certificate"));
      }
      ssl = std::make_unique<httplib::SSLClient>(url.host, url.port, cert, key);
      X509_free(cert);  // the SSL context holds its own references
      EVP_PKEY_free(key);
    } else {
      ssl = std::make_unique<httplib::SSLClient>(url.host, url.port);
    }
    if (!ssl->is_valid()) return Internal("cannot set up TLS (OpenSSL)");
    if (!config.ca_pem.empty()) {
      X509_STORE* store = X509_STORE_new();
      BioPtr bio = MemoryBio(config.ca_pem);
      int count = 0;
      while (X509* cert = PEM_read_bio_X509(bio.get(), nullptr, nullptr, nullptr)) {
        X509_STORE_add_cert(store, cert);
        X509_free(cert);
        ++count;
      }
      if (count == 0) {
        X509_STORE_free(store);
        return InvalidArgument("certificate-authority: no PEM certificate found");
      }
      ssl->set_ca_cert_store(store);  // owned by the SSL context from now on
    }
    ssl->enable_server_certificate_verification(!config.insecure_skip_tls_verify);
    http = std::move(ssl);
  } else if (url.scheme == "http") {
    http = std::make_unique<httplib::ClientImpl>(url.host, url.port);
  } else {
    return InvalidArgument(fmt::format("server: unsupported scheme '{}'", url.scheme));
  }
  http->set_connection_timeout(5, 0);
  http->set_keep_alive(true);
  http->set_tcp_nodelay(true);
  if (!config.token.empty()) http->set_bearer_token_auth(config.token);
  http->set_default_headers({{"Accept", "application/json"}, {"User-Agent", "drover"}});
  return std::unique_ptr<Client>(new Client(url.prefix, std::move(http), options));
}

Client::Client(std::string prefix, std::unique_ptr<httplib::ClientImpl> http, ClientOptions options)
    : prefix_(std::move(prefix)), http_(std::move(http)), options_(options) {}

Client::~Client() = default;

void Client::Stop() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stopped_ = true;
  }
  cv_.notify_all();
  http_->stop();
}

bool Client::SleepUnlessStopped(DurationMs ms) {
  std::unique_lock<std::mutex> lock(mu_);
  return !cv_.wait_for(lock, std::chrono::milliseconds(ms), [&] { return stopped_.load(); });
}

Result<json> Client::Send(const std::string& method, const std::string& path,
                          const std::string& body) {
  const std::string target = prefix_ + path;
  const std::string what = fmt::format("{} {}", method, path);
  const DurationMs timeout = options_.request_timeout_ms;
  // httplib takes whole seconds and microseconds.
  http_->set_read_timeout(timeout / kMillisPerSecond, (timeout % kMillisPerSecond) * 1000);
  for (int attempt = 1;; ++attempt) {
    if (stopped_) return Unavailable(what + ": the client is stopped");
    httplib::Result result = method == "GET" ? http_->Get(target.c_str())
                             : method == "POST"
                                 ? http_->Post(target.c_str(), body, "application/json")
                                 : http_->Delete(target.c_str(), body, "application/json");
    if (!result) {
      return Unavailable(fmt::format("{}: cannot reach the API server ({})", what,
                                     httplib::to_string(result.error())));
    }
    if (result->status == 429 && attempt < options_.max_attempts) {
      ++throttled_;
      if (!SleepUnlessStopped(RetryAfterMs(*result, options_.max_retry_after_ms))) {
        return Unavailable(what + ": the client is stopped");
      }
      continue;
    }
    if (result->status < 200 || result->status >= 300) {
      return tl::unexpected(StatusError(result->status, result->body, what));
    }
    json parsed = json::parse(result->body, nullptr, /*allow_exceptions=*/false);
    if (parsed.is_discarded()) return Internal(what + ": the reply is not JSON");
    return parsed;
  }
}

Result<json> Client::Create(const std::string& collection, const json& object) {
  return Send("POST", collection, object.dump(-1, ' ', false, json::error_handler_t::replace));
}

Result<json> Client::Get(const std::string& path) { return Send("GET", path, ""); }

Status Client::Delete(const std::string& path) {
  const json options = {
      {"kind", "DeleteOptions"}, {"apiVersion", "v1"}, {"propagationPolicy", "Background"}};
  DROVER_RETURN_IF_ERROR(Send("DELETE", path, options.dump()));
  return OkStatus();
}

Result<json> Client::List(const std::string& collection, const std::string& label_selector) {
  std::string path = collection;
  if (!label_selector.empty()) path += "?labelSelector=" + QueryEscape(label_selector);
  return Send("GET", path, "");
}

Result<WatchEnd> Client::Watch(const std::string& collection, const std::string& label_selector,
                               const std::string& resource_version, int timeout_seconds,
                               const std::function<bool(const WatchEvent&)>& on_event) {
  std::string path = fmt::format("{}?watch=1&allowWatchBookmarks=true&timeoutSeconds={}",
                                 collection, timeout_seconds);
  if (!resource_version.empty()) path += "&resourceVersion=" + QueryEscape(resource_version);
  if (!label_selector.empty()) path += "&labelSelector=" + QueryEscape(label_selector);
  const std::string what = "WATCH " + collection;
  // The server ends the stream after timeout_seconds; a little more before giving up on it.
  http_->set_read_timeout(timeout_seconds + 5, 0);

  WatchEnd end;
  end.resource_version = resource_version;
  for (int attempt = 1;; ++attempt) {
    if (stopped_) return Unavailable(what + ": the client is stopped");
    int status = 0;
    std::string error_body;  // a non-200 reply's body
    std::string pending;     // an incomplete line of the stream
    std::optional<Error> stream_error;
    DurationMs retry_after = 0;
    auto on_response = [&](const httplib::Response& response) {
      status = response.status;
      if (status == 429) retry_after = RetryAfterMs(response, options_.max_retry_after_ms);
      return true;
    };
    auto on_data = [&](const char* data, std::size_t size) {
      if (stopped_) {
        end.stopped = true;
        return false;
      }
      if (status != 200) {
        error_body.append(data, size);
        return true;
      }
      pending.append(data, size);
      std::size_t newline;
      while ((newline = pending.find('\n')) != std::string::npos) {
        const std::string line = pending.substr(0, newline);
        pending.erase(0, newline + 1);
        if (line.find_first_not_of(" \r\t") == std::string::npos) continue;
        json parsed = json::parse(line, nullptr, /*allow_exceptions=*/false);
        if (!parsed.is_object() || !parsed.contains("type")) {
          stream_error =
              Error{ErrorCode::kInternal, what + ": not a watch event: " + line.substr(0, 200), {}};
          return false;
        }
        WatchEvent event{parsed.value("type", ""), parsed.value("object", json::object())};
        if (event.type == "ERROR") {
          if (event.object.value("code", 0) == 410) {
            end.gone = true;
          } else {
            stream_error = Error{ErrorCode::kInternal,
                                 fmt::format("{}: ERROR event: {}", what, event.object.dump()),
                                 {}};
          }
          return false;
        }
        if (std::string rv = ResourceVersionOf(event.object); !rv.empty()) {
          end.resource_version = rv;
        }
        if (!on_event(event)) {
          end.stopped = true;
          return false;
        }
      }
      return true;
    };
    httplib::Result result =
        http_->Get((prefix_ + path).c_str(), httplib::Headers{}, on_response, on_data);
    if (stream_error) return tl::unexpected(*stream_error);
    if (end.gone || end.stopped) return end;
    if (stopped_) return Unavailable(what + ": the client is stopped");
    if (status == 429 && attempt < options_.max_attempts) {
      ++throttled_;
      if (!SleepUnlessStopped(retry_after)) return Unavailable(what + ": the client is stopped");
      continue;
    }
    if (status == 410) {
      end.gone = true;
      return end;
    }
    if (status != 0 && status != 200) return tl::unexpected(StatusError(status, error_body, what));
    if (!result) {
      // A read timeout or a closed connection ends this watch; the next one resumes from
      // end.resource_version. Only a failed connection is an error.
      if (status == 0) {
        return Unavailable(fmt::format("{}: cannot reach the API server ({})", what,
                                       httplib::to_string(result.error())));
      }
    }
    return end;
  }
}

// ---------------------------------------------------------------------------------------------
// Reflector

std::string ObjectKey(const json& object) {
  const json meta = object.value("metadata", json::object());
  return meta.value("namespace", "") + "/" + meta.value("name", "");
}

std::string ResourceVersionOf(const json& object) {
  if (!object.is_object()) return "";
  auto meta = object.find("metadata");
  if (meta == object.end() || !meta->is_object()) return "";
  return meta->value("resourceVersion", "");
}

Reflector::Reflector(std::string collection, std::string label_selector, Handler handler)
    : collection_(std::move(collection)),
      label_selector_(std::move(label_selector)),
      handler_(std::move(handler)) {}

void Reflector::Deliver(const std::string& type, const json& object) {
  const std::string key = ObjectKey(object);
  auto it = known_.find(key);
  if (type == "DELETED") {
    if (it == known_.end()) return;
    known_.erase(it);
    handler_(type, object);
    return;
  }
  if (it != known_.end() && ResourceVersionOf(it->second) == ResourceVersionOf(object)) return;
  const std::string delivered = it == known_.end() ? "ADDED" : "MODIFIED";
  known_[key] = object;
  handler_(delivered, object);
}

Status Reflector::Relist(Client& client) {
  DROVER_ASSIGN_OR_RETURN(auto list, client.List(collection_, label_selector_));
  ++lists_;
  listed_ = true;
  resource_version_ = ResourceVersionOf(list);
  std::map<std::string, json> current;
  for (const json& item : list.value("items", json::array())) current[ObjectKey(item)] = item;
  // Objects deleted while no watch saw it.
  std::vector<json> gone;
  for (const auto& [key, object] : known_) {
    if (!current.contains(key)) gone.push_back(object);
  }
  for (const json& object : gone) Deliver("DELETED", object);
  for (const auto& [key, object] : current) Deliver("MODIFIED", object);
  return OkStatus();
}

Status Reflector::Step(Client& client, int watch_timeout_seconds) {
  if (!listed_) DROVER_RETURN_IF_ERROR(Relist(client));
  DROVER_ASSIGN_OR_RETURN(
      auto end, client.Watch(collection_, label_selector_, resource_version_, watch_timeout_seconds,
                             [&](const WatchEvent& event) {
                               if (event.type != "BOOKMARK") Deliver(event.type, event.object);
                               return true;
                             }));
  resource_version_ = end.resource_version;
  if (end.gone) return Relist(client);
  return OkStatus();
}

}  // namespace drover::exec::kubernetes
