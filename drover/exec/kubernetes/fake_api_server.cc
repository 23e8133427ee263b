#include "drover/exec/kubernetes/fake_api_server.h"

#include <fmt/format.h>
#include <httplib.h>
#include <openssl/pem.h>
#include <openssl/x509.h>

#include <chrono>
#include <ctime>
#include <sstream>

namespace drover::exec::kubernetes {

using nlohmann::json;

namespace {

std::string Now() {
  const std::time_t now = std::time(nullptr);
  std::tm tm{};
  gmtime_r(&now, &tm);
  char text[32];
  std::strftime(text, sizeof text, "%Y-%m-%dT%H:%M:%SZ", &tm);
  return text;
}

json StatusObject(int code, const std::string& reason, const std::string& message,
                  const json& details = nullptr) {
  json status = {{"kind", "Status"},    {"apiVersion", "v1"}, {"metadata", json::object()},
                 {"status", "Failure"}, {"message", message}, {"reason", reason},
                 {"code", code}};
  if (!details.is_null()) status["details"] = details;
  return status;
}

void Reply(httplib::Response& res, int code, const json& body) {
  res.status = code;
  res.set_content(body.dump(), "application/json");
}

// "jobs" of "/apis/batch/v1/namespaces/ns/jobs".
std::string Resource(const std::string& collection) {
  return collection.substr(collection.rfind('/') + 1);
}

// "ns" of "/apis/batch/v1/namespaces/ns/jobs".
std::string NamespaceOf(const std::string& collection) {
  const std::size_t start = collection.find("/namespaces/") + 12;
  return collection.substr(start, collection.rfind('/') - start);
}

// kind and apiVersion of a collection's objects.
std::pair<std::string, std::string> KindOf(const std::string& collection) {
  static const std::map<std::string, std::string> kKinds = {
      {"jobs", "Job"},
      {"pods", "Pod"},
      {"services", "Service"},
      {"podgroups", "PodGroup"},
      {"resourceclaimtemplates", "ResourceClaimTemplate"}};
  const std::string resource = Resource(collection);
  auto kind = kKinds.find(resource);
  std::string api_version;
  if (collection.rfind("/api/", 0) == 0) {
    api_version = "v1";
  } else {
    const std::size_t start = 6;  // after "/apis/"
    const std::size_t ns = collection.find("/namespaces/");
    api_version = collection.substr(start, ns - start);
  }
  return {kind == kKinds.end() ? "Unknown" : kind->second, api_version};
}

bool MatchesSelector(const json& object, const std::string& selector) {
  if (selector.empty()) return true;
  const json labels = object.value("metadata", json::object()).value("labels", json::object());
  std::stringstream terms(selector);
  std::string term;
  while (std::getline(terms, term, ',')) {
    const std::size_t eq = term.find('=');
    if (eq == std::string::npos) {
      if (!labels.contains(term)) return false;
      continue;
    }
    const std::string key = term.substr(0, eq);
    const std::string value = term.substr(term[eq + 1] == '=' ? eq + 2 : eq + 1);
    if (!labels.contains(key) || labels[key] != value) return false;
  }
  return true;
}

}  // namespace

FakeApiServer::FakeApiServer() : server_(std::make_unique<httplib::Server>()) {}

FakeApiServer::FakeApiServer(const Tls& tls) : tls_(true) {
  auto bio = [](const std::string& pem) {
    return BIO_new_mem_buf(pem.data(), static_cast<int>(pem.size()));
  };
  BIO* cert_bio = bio(tls.cert_pem);
  BIO* key_bio = bio(tls.key_pem);
  X509* cert = PEM_read_bio_X509(cert_bio, nullptr, nullptr, nullptr);
  EVP_PKEY* key = PEM_read_bio_PrivateKey(key_bio, nullptr, nullptr, nullptr);
  X509_STORE* client_ca = nullptr;
  if (!tls.client_ca_pem.empty()) {
    client_ca = X509_STORE_new();
    BIO* ca_bio = bio(tls.client_ca_pem);
    while (X509* ca = PEM_read_bio_X509(ca_bio, nullptr, nullptr, nullptr)) {
      X509_STORE_add_cert(client_ca, ca);
      X509_free(ca);
    }
    BIO_free(ca_bio);
  }
  // The SSL context takes its own references to the certificate and key, and the store.
  server_ = std::make_unique<httplib::SSLServer>(cert, key, client_ca);
  X509_free(cert);
  EVP_PKEY_free(key);
  BIO_free(cert_bio);
  BIO_free(key_bio);
}

FakeApiServer::~FakeApiServer() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stopping_ = true;
  }
  changed_.notify_all();
  server_->stop();
  if (thread_.joinable()) thread_.join();
}

bool FakeApiServer::Start() {
  Route();
  port_ = server_->bind_to_any_port("127.0.0.1");
  if (port_ <= 0) return false;
  thread_ = std::thread([this] { server_->listen_after_bind(); });
  // The socket listens already (connections queue); wait for the accept loop all the same.
  while (!server_->is_running()) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  return true;
}

std::string FakeApiServer::url() const {
  return fmt::format("{}://127.0.0.1:{}", tls_ ? "https" : "http", port_);
}

std::string FakeApiServer::KubeConfigYaml(const std::string& namespace_name) const {
  return fmt::format(
      "apiVersion: v1\nkind: Config\ncurrent-context: fake\nclusters:\n- name: fake\n  cluster:\n"
      "    server: {}\ncontexts:\n- name: fake\n  context:\n    cluster: fake\n"
      "    namespace: {}\n",
      url(), namespace_name);
}

std::string FakeApiServer::Collection(const std::string& path, std::string* name) const {
  std::vector<std::string> parts;
  std::stringstream stream(path);
  std::string part;
  while (std::getline(stream, part, '/')) {
    if (!part.empty()) parts.push_back(part);
  }
  // api/v1/namespaces/NS/RES[/NAME] or apis/G/V/namespaces/NS/RES[/NAME]
  const std::size_t length = !parts.empty() && parts[0] == "api" ? 5 : 6;
  if (parts.size() < length || parts.size() > length + 1 || parts[length - 3] != "namespaces") {
    return "";
  }
  std::string collection;
  for (std::size_t i = 0; i < length; ++i) collection += "/" + parts[i];
  if (name) *name = parts.size() > length ? parts[length] : "";
  return collection;
}

json FakeApiServer::StoreLocked(const std::string& collection, json object,
                                const std::string& type) {
  json& meta = object["metadata"];
  const auto [kind, api_version] = KindOf(collection);
  object["kind"] = kind;
  object["apiVersion"] = api_version;
  if (!meta.contains("uid")) meta["uid"] = fmt::format("uid-{}", ++uid_);
  if (!meta.contains("creationTimestamp")) meta["creationTimestamp"] = Now();
  meta["resourceVersion"] = std::to_string(++rv_);
  objects_[collection][meta.value("name", "")] = object;
  EmitLocked(collection, type, object);
  return object;
}

void FakeApiServer::EmitLocked(const std::string& collection, const std::string& type,
                               const json& object) {
  events_.push_back({std::stol(object["metadata"]["resourceVersion"].get<std::string>()),
                     collection, type, object});
  changed_.notify_all();
}

json FakeApiServer::Put(const std::string& collection, json object) {
  std::lock_guard<std::mutex> lock(mu_);
  const bool exists = objects_[collection].contains(object["metadata"].value("name", ""));
  return StoreLocked(collection, std::move(object), exists ? "MODIFIED" : "ADDED");
}

json FakeApiServer::Patch(const std::string& collection, const std::string& name,
                          const json& change) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = objects_[collection].find(name);
  if (it == objects_[collection].end()) return nullptr;
  json object = it->second;
  object.merge_patch(change);
  return StoreLocked(collection, std::move(object), "MODIFIED");
}

bool FakeApiServer::Remove(const std::string& collection, const std::string& name) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = objects_[collection].find(name);
  if (it == objects_[collection].end()) return false;
  json object = it->second;
  objects_[collection].erase(it);
  object["metadata"]["resourceVersion"] = std::to_string(++rv_);
  EmitLocked(collection, "DELETED", object);
  return true;
}

std::optional<json> FakeApiServer::Find(const std::string& collection,
                                        const std::string& name) const {
  std::lock_guard<std::mutex> lock(mu_);
  auto c = objects_.find(collection);
  if (c == objects_.end()) return std::nullopt;
  auto it = c->second.find(name);
  if (it == c->second.end()) return std::nullopt;
  return it->second;
}

std::vector<json> FakeApiServer::Items(const std::string& collection) const {
  std::lock_guard<std::mutex> lock(mu_);
  std::vector<json> items;
  auto c = objects_.find(collection);
  if (c == objects_.end()) return items;
  for (const auto& [name, object] : c->second) items.push_back(object);
  return items;
}

void FakeApiServer::RunPods(const std::string& namespace_name, const std::string& job,
                            const std::vector<std::string>& nodes) {
  const std::string jobs = fmt::format("/apis/batch/v1/namespaces/{}/jobs", namespace_name);
  const std::string pods = fmt::format("/api/v1/namespaces/{}/pods", namespace_name);
  auto object = Find(jobs, job);
  if (!object) return;
  const json& template_ = (*object)["spec"]["template"];
  for (std::size_t index = 0; index < nodes.size(); ++index) {
    json pod = {{"metadata", template_.value("metadata", json::object())},
                {"spec", template_["spec"]},
                {"status", json::object()}};
    json& meta = pod["metadata"];
    meta["name"] = fmt::format("{}-{}-fake", job, index);
    meta["namespace"] = namespace_name;
    meta["labels"]["batch.kubernetes.io/job-name"] = job;
    meta["labels"]["job-name"] = job;
    meta["labels"]["batch.kubernetes.io/job-completion-index"] = std::to_string(index);
    meta["annotations"]["batch.kubernetes.io/job-completion-index"] = std::to_string(index);
    pod["spec"]["nodeName"] = nodes[index];
    json running = {{"name", "main"}, {"state", {{"running", {{"startedAt", Now()}}}}}};
    pod["status"] = {
        {"phase", "Running"}, {"startTime", Now()}, {"containerStatuses", json::array({running})}};
    Put(pods, pod);
  }
  Patch(jobs, job,
        {{"status", {{"active", static_cast<int>(nodes.size())}, {"startTime", Now()}}}});
}

void FakeApiServer::EndPod(const std::string& namespace_name, const std::string& job, int index,
                           int exit_code, const std::string& reason, const std::string& disruption,
                           const std::string& message) {
  const std::string pods = fmt::format("/api/v1/namespaces/{}/pods", namespace_name);
  json terminated = {{"exitCode", exit_code},
                     {"reason", exit_code == 0 ? "Completed" : "Error"},
                     {"finishedAt", Now()}};
  if (!message.empty()) terminated["message"] = message;
  json container = {{"name", "main"}, {"state", {{"terminated", terminated}}}};
  json status = {{"phase", exit_code == 0 ? "Succeeded" : "Failed"},
                 {"containerStatuses", json::array({container})}};
  if (!reason.empty()) status["reason"] = reason;
  if (!disruption.empty()) {
    status["conditions"] = json::array({{{"type", "DisruptionTarget"},
                                         {"status", "True"},
                                         {"reason", disruption},
                                         {"lastTransitionTime", Now()}}});
  }
  Patch(pods, fmt::format("{}-{}-fake", job, index), {{"status", status}});
}

void FakeApiServer::FinishJob(const std::string& namespace_name, const std::string& job,
                              const std::string& condition, const std::string& reason) {
  const std::string jobs = fmt::format("/apis/batch/v1/namespaces/{}/jobs", namespace_name);
  auto object = Find(jobs, job);
  if (!object) return;
  json conditions = object->value("status", json::object()).value("conditions", json::array());
  conditions.push_back(
      {{"type", condition}, {"status", "True"}, {"reason", reason}, {"lastTransitionTime", Now()}});
  json status = {{"conditions", conditions}, {"active", 0}};
  if (condition == "Complete") status["completionTime"] = Now();
  Patch(jobs, job, {{"status", status}});
}

void FakeApiServer::Compact() {
  std::lock_guard<std::mutex> lock(mu_);
  compacted_rv_ = rv_;
  events_.clear();
}

void FakeApiServer::GoneAsHttpStatus(bool yes) {
  std::lock_guard<std::mutex> lock(mu_);
  gone_as_http_ = yes;
}

void FakeApiServer::Throttle(int count, int retry_after_seconds) {
  std::lock_guard<std::mutex> lock(mu_);
  throttle_count_ = count;
  throttle_seconds_ = retry_after_seconds;
}

void FakeApiServer::DropWatches() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    ++watch_generation_;
  }
  changed_.notify_all();
}

std::vector<std::string> FakeApiServer::requests() const {
  std::lock_guard<std::mutex> lock(mu_);
  return requests_;
}

std::string FakeApiServer::last_authorization() const {
  std::lock_guard<std::mutex> lock(mu_);
  return last_authorization_;
}

int FakeApiServer::watches_started() const {
  std::lock_guard<std::mutex> lock(mu_);
  return watches_started_;
}

bool FakeApiServer::ThrottledLocked(httplib::Response& res) {
  if (throttle_count_ == 0) return false;
  --throttle_count_;
  res.set_header("Retry-After", std::to_string(throttle_seconds_));
  Reply(res, 429,
        StatusObject(429, "TooManyRequests",
                     "the server has received too many requests and has asked us to try "
                     "again later",
                     {{"retryAfterSeconds", throttle_seconds_}}));
  return true;
}

bool FakeApiServer::Throttled(httplib::Response& res) {
  std::lock_guard<std::mutex> lock(mu_);
  return ThrottledLocked(res);
}

void FakeApiServer::Route() {
  // Every request is recorded here. A request without a body may be throttled here too; one with
  // a body (POST, DELETE) is throttled by its handler, after httplib has read the body: a reply
  // before that would leave the body on the kept-alive connection, to be read as the start of
  // the client's next request (HTTP 400), where a real API server drains it first.
  server_->set_pre_routing_handler([this](const httplib::Request& req, httplib::Response& res) {
    std::lock_guard<std::mutex> lock(mu_);
    std::string query;
    for (const auto& [key, value] : req.params) {
      query += (query.empty() ? "?" : "&") + key + "=" + value;
    }
    requests_.push_back(req.method + " " + req.path + query);
    last_authorization_ = req.get_header_value("Authorization");
    const bool has_body = req.method == "POST" || req.method == "DELETE";
    if (!has_body && ThrottledLocked(res)) return httplib::Server::HandlerResponse::Handled;
    return httplib::Server::HandlerResponse::Unhandled;
  });

  server_->Get("/version", [](const httplib::Request&, httplib::Response& res) {
    Reply(res, 200,
          {{"major", "1"},
           {"minor", "32"},
           {"gitVersion", "v1.32.0-drover-fake"},
           {"platform", "linux/amd64"}});
  });
  server_->Get("/api", [this](const httplib::Request&, httplib::Response& res) {
    Reply(res, 200,
          {{"kind", "APIVersions"},
           {"versions", json::array({"v1"})},
           {"serverAddressByClientCIDRs",
            json::array({{{"clientCIDR", "0.0.0.0/0"},
                          {"serverAddress", fmt::format("127.0.0.1:{}", port_)}}})}});
  });
  server_->Get("/apis", [](const httplib::Request&, httplib::Response& res) {
    const json batch = {{"groupVersion", "batch/v1"}, {"version", "v1"}};
    Reply(res, 200,
          {{"kind", "APIGroupList"},
           {"apiVersion", "v1"},
           {"groups", json::array({{{"name", "batch"},
                                    {"versions", json::array({batch})},
                                    {"preferredVersion", batch}}})}});
  });
  auto resource = [](const std::string& name, const std::string& kind) {
    return json{{"name", name},
                {"singularName", ""},
                {"namespaced", true},
                {"kind", kind},
                {"verbs", {"create", "delete", "get", "list", "watch"}}};
  };
  server_->Get("/api/v1", [resource](const httplib::Request&, httplib::Response& res) {
    Reply(res, 200,
          {{"kind", "APIResourceList"},
           {"groupVersion", "v1"},
           {"resources", {resource("pods", "Pod"), resource("services", "Service")}}});
  });
  server_->Get("/apis/batch/v1", [resource](const httplib::Request&, httplib::Response& res) {
    Reply(res, 200,
          {{"kind", "APIResourceList"},
           {"apiVersion", "v1"},
           {"groupVersion", "batch/v1"},
           {"resources", json::array({resource("jobs", "Job")})}});
  });

  server_->Post(R"(/.*)", [this](const httplib::Request& req, httplib::Response& res) {
    if (Throttled(res)) return;
    std::string name;
    const std::string collection = Collection(req.path, &name);
    json object = json::parse(req.body, nullptr, /*allow_exceptions=*/false);
    if (collection.empty() || !name.empty() || !object.is_object()) {
      Reply(res, 400, StatusObject(400, "BadRequest", "not a namespaced collection or not JSON"));
      return;
    }
    name = object["metadata"].value("name", "");
    std::lock_guard<std::mutex> lock(mu_);
    const auto [kind, api_version] = KindOf(collection);
    if (name.empty()) {
      Reply(res, 422, StatusObject(422, "Invalid", "metadata.name: Required value"));
      return;
    }
    if (objects_[collection].contains(name)) {
      std::string group = api_version.find('/') == std::string::npos
                              ? ""
                              : api_version.substr(0, api_version.find('/'));
      const std::string resource_name = Resource(collection);
      Reply(res, 409,
            StatusObject(409, "AlreadyExists",
                         fmt::format("{}{}{} \"{}\" already exists", resource_name,
                                     group.empty() ? "" : ".", group, name),
                         {{"name", name}, {"group", group}, {"kind", resource_name}}));
      return;
    }
    object["metadata"]["namespace"] = NamespaceOf(collection);
    if (Resource(collection) == "jobs" && !object.contains("status")) {
      object["status"] = json::object();
    }
    Reply(res, 201, StoreLocked(collection, std::move(object), "ADDED"));
  });

  server_->Delete(R"(/.*)", [this](const httplib::Request& req, httplib::Response& res) {
    if (Throttled(res)) return;
    std::string name;
    const std::string collection = Collection(req.path, &name);
    json options = json::parse(req.body, nullptr, /*allow_exceptions=*/false);
    std::string propagation = req.get_param_value("propagationPolicy");
    if (options.is_object()) propagation = options.value("propagationPolicy", propagation);
    std::optional<json> object = Find(collection, name);
    if (collection.empty() || name.empty() || !object) {
      Reply(res, 404,
            StatusObject(404, "NotFound",
                         fmt::format("{} \"{}\" not found", Resource(collection), name)));
      return;
    }
    Remove(collection, name);
    if (Resource(collection) == "jobs" && propagation == "Background") {
      const std::string pods = fmt::format("/api/v1/namespaces/{}/pods", NamespaceOf(collection));
      for (const json& pod : Items(pods)) {
        if (MatchesSelector(pod, "batch.kubernetes.io/job-name=" + name)) {
          Remove(pods, pod["metadata"]["name"]);
        }
      }
    }
    Reply(res, 200,
          {{"kind", "Status"},
           {"apiVersion", "v1"},
           {"status", "Success"},
           {"details", {{"name", name}, {"kind", Resource(collection)}}}});
  });

  server_->Get(R"(/.*)", [this](const httplib::Request& req, httplib::Response& res) {
    std::string name;
    const std::string collection = Collection(req.path, &name);
    if (collection.empty()) {
      Reply(res, 404,
            StatusObject(404, "NotFound", "the server could not find the requested resource"));
      return;
    }
    if (!name.empty()) {
      if (auto object = Find(collection, name)) {
        Reply(res, 200, *object);
      } else {
        Reply(res, 404,
              StatusObject(404, "NotFound",
                           fmt::format("{} \"{}\" not found", Resource(collection), name),
                           {{"name", name}, {"kind", Resource(collection)}}));
      }
      return;
    }
    const std::string selector = req.get_param_value("labelSelector");
    if (req.get_param_value("watch") != "1" && req.get_param_value("watch") != "true") {
      std::lock_guard<std::mutex> lock(mu_);
      json items = json::array();
      for (const auto& [key, object] : objects_[collection]) {
        if (MatchesSelector(object, selector)) items.push_back(object);
      }
      const auto [kind, api_version] = KindOf(collection);
      Reply(res, 200,
            {{"kind", kind + "List"},
             {"apiVersion", api_version},
             {"metadata", {{"resourceVersion", std::to_string(rv_)}}},
             {"items", items}});
      return;
    }

    // A watch.
    const std::string rv_text = req.get_param_value("resourceVersion");
    const long from = rv_text.empty() ? -1 : std::stol(rv_text);
    const bool bookmarks = req.get_param_value("allowWatchBookmarks") == "true";
    int timeout_seconds = 1800;
    if (req.has_param("timeoutSeconds")) {
      timeout_seconds = std::stoi(req.get_param_value("timeoutSeconds"));
    }
    bool gone = false;
    long generation = 0;
    {
      std::lock_guard<std::mutex> lock(mu_);
      ++watches_started_;
      gone = from >= 0 && from < compacted_rv_;
      generation = watch_generation_;
      if (gone && gone_as_http_) {
        Reply(res, 410,
              StatusObject(410, "Expired",
                           fmt::format("too old resource version: {} ({})", from, compacted_rv_)));
        return;
      }
    }
    struct State {
      long sent;
      bool initial = true;
      std::chrono::steady_clock::time_point deadline;
      std::chrono::steady_clock::time_point last_write;
    };
    auto state = std::make_shared<State>();
    state->sent = from;
    state->deadline = std::chrono::steady_clock::now() + std::chrono::seconds(timeout_seconds);
    state->last_write = std::chrono::steady_clock::now();
    const auto [kind, api_version] = KindOf(collection);
    res.set_chunked_content_provider(
        "application/json", [this, state, collection, selector, bookmarks, gone, generation, kind,
                             api_version](std::size_t, httplib::DataSink& sink) {
          auto write = [&](const std::string& type, const json& object) {
            const std::string line = json{{"type", type}, {"object", object}}.dump() + "\n";
            state->last_write = std::chrono::steady_clock::now();
            return sink.write(line.data(), line.size());
          };
          if (gone) {
            write("ERROR", StatusObject(410, "Expired", "too old resource version"));
            sink.done();
            return true;
          }
          std::unique_lock<std::mutex> lock(mu_);
          if (state->initial && state->sent < 0) {
            // No resourceVersion: the current objects as ADDED, then the changes.
            for (const auto& [key, object] : objects_[collection]) {
              if (MatchesSelector(object, selector)) write("ADDED", object);
            }
            state->sent = rv_;
          }
          auto pending = [&] { return !events_.empty() && events_.back().rv > state->sent; };
          if (state->initial && bookmarks && !pending()) {
            write("BOOKMARK", {{"kind", kind},
                               {"apiVersion", api_version},
                               {"metadata", {{"resourceVersion", std::to_string(rv_)}}}});
            state->sent = std::max(state->sent, rv_);
          }
          state->initial = false;
          const auto wake = std::min(
              state->deadline, std::chrono::steady_clock::now() + std::chrono::milliseconds(500));
          changed_.wait_until(lock, wake, [&] {
            return stopping_ || watch_generation_ != generation || pending();
          });
          if (stopping_ || watch_generation_ != generation ||
              std::chrono::steady_clock::now() >= state->deadline) {
            sink.done();
            return true;
          }
          for (const Event& event : events_) {
            if (event.rv <= state->sent || event.collection != collection) continue;
            state->sent = event.rv;
            if (MatchesSelector(event.object, selector) && !write(event.type, event.object)) {
              return false;
            }
          }
          if (bookmarks &&
              std::chrono::steady_clock::now() - state->last_write > std::chrono::seconds(1)) {
            write("BOOKMARK", {{"kind", kind},
                               {"apiVersion", api_version},
                               {"metadata", {{"resourceVersion", std::to_string(rv_)}}}});
          }
          return true;
        });
  });
}

}  // namespace drover::exec::kubernetes
