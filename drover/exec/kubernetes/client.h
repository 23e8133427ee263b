#pragma once

// A small client of the Kubernetes REST API (docs/operations.md, "Executors: Kubernetes"):
// kubeconfig loading, create / get / delete / list, and watches that survive an expired
// resourceVersion. HTTPS goes through cpp-httplib with OpenSSL; the cluster's CA, a bearer token
// or a client certificate come from the kubeconfig.
//
// Wire behaviour, as the API server speaks it:
//   - errors are Status objects ({"kind": "Status", "reason", "message", "code"}); 409
//     AlreadyExists is kAlreadyExists, 404 kNotFound, 400/422 kInvalidArgument, 401/403
//     kFailedPrecondition, 5xx and unreachable servers kUnavailable;
//   - 429 Too Many Requests (API priority and fairness) is retried after its Retry-After
//     seconds, at most ClientOptions::max_attempts times in all;
//   - a watch is a chunked stream of one JSON event per line, {"type", "object"}; BOOKMARK
//     events only move the resourceVersion on; a resourceVersion the server no longer has is
//     410 Gone, as the HTTP status or as an ERROR event whose object is a Status with code 410.
//     Reflector re-lists then and carries on from the list's resourceVersion.
//
// A Client is used by one thread at a time; Stop() may be called from any thread.

#include <atomic>
#include <condition_variable>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>

#include "drover/common/clock.h"
#include "drover/common/result.h"

namespace httplib {
class ClientImpl;
}

namespace drover::exec::kubernetes {

// Where the API server is and how to authenticate, from a kubeconfig's current (or named)
// context.
struct KubeConfig {
  std::string server;  // "https://host:6443" (a path after the port prefixes every request)
  std::string ca_pem;  // the cluster's CA certificates, PEM; empty: the system's
  bool insecure_skip_tls_verify = false;
  std::string token;            // bearer token
  std::string client_cert_pem;  // client certificate and key, PEM
  std::string client_key_pem;
  std::string namespace_name;  // the context's namespace; "" when it names none
};

// Reads a kubeconfig. `context` empty: its current-context. Relative file paths
// (certificate-authority, client-certificate, client-key, tokenFile) are relative to the
// kubeconfig's directory. Errors name the file and the field, e.g.
// "/home/a/.kube/config: users[0].user.exec: exec credential plugins are not supported; ...".
Result<KubeConfig> LoadKubeConfig(const std::string& path, const std::string& context = "");
// The same from text; `base_dir` resolves relative paths, `file` names the text in messages.
Result<KubeConfig> ParseKubeConfig(std::string_view text, const std::string& file,
                                   const std::string& base_dir, const std::string& context = "");
// Inside a pod: the service account's token, CA and namespace and the API server from
// KUBERNETES_SERVICE_HOST / KUBERNETES_SERVICE_PORT.
Result<KubeConfig> InClusterConfig();

// RFC 3339 time ("2025-01-02T03:04:05Z", fractions and offsets allowed) in ms since the epoch.
std::optional<TimeMs> ParseTime(std::string_view text);

struct ClientOptions {
  DurationMs request_timeout_ms = 30'000;
  int max_attempts = 6;  // tries of one request while the server answers 429
  // Retry-After above this is cut to it; a 429 without the header waits one second.
  DurationMs max_retry_after_ms = 60'000;
};

struct WatchEvent {
  std::string type;  // ADDED, MODIFIED, DELETED, BOOKMARK, ERROR
  nlohmann::json object;
};

// How a watch ended.
struct WatchEnd {
  bool gone = false;             // 410: the resourceVersion is too old; list again
  bool stopped = false;          // the handler asked to stop, or Stop() was called
  std::string resource_version;  // the last one seen (the start one if none)
};

class Client {
 public:
  static Result<std::unique_ptr<Client>> Connect(const KubeConfig& config,
                                                 ClientOptions options = {});
  ~Client();

  // POST `object` to `collection` ("/apis/batch/v1/namespaces/ns/jobs"); the created object.
  Result<nlohmann::json> Create(const std::string& collection, const nlohmann::json& object);
  Result<nlohmann::json> Get(const std::string& path);
  // DELETE with propagationPolicy=Background (the Job's pods go with it).
  Status Delete(const std::string& path);
  // The List object ({"metadata": {"resourceVersion"}, "items"}), optionally by labels
  // ("drover.dev/attempt-name=drover-3-1").
  Result<nlohmann::json> List(const std::string& collection, const std::string& label_selector);
  // Streams the collection's changes after `resource_version` until the server ends the stream
  // (after `timeout_seconds`), `on_event` returns false, or Stop(). ERROR events with code 410
  // end it with `gone`; other ERROR events are kInternal.
  Result<WatchEnd> Watch(const std::string& collection, const std::string& label_selector,
                         const std::string& resource_version, int timeout_seconds,
                         const std::function<bool(const WatchEvent&)>& on_event);

  // Ends a request in flight and every later one (kUnavailable); for shutting down.
  void Stop();

  // Requests answered 429 and retried, since the start.
  int throttled() const { return throttled_.load(); }

 private:
  Client(std::string prefix, std::unique_ptr<httplib::ClientImpl> http, ClientOptions options);
  // Sends with the retries described above; `handle` gets every non-429 reply.
  Result<nlohmann::json> Send(const std::string& method, const std::string& path,
                              const std::string& body);
  bool SleepUnlessStopped(DurationMs ms);

  std::string prefix_;
  std::unique_ptr<httplib::ClientImpl> http_;
  ClientOptions options_;
  std::atomic<bool> stopped_{false};
  std::atomic<int> throttled_{0};
  std::mutex mu_;
  std::condition_variable cv_;
};

// Keeps a collection's objects in step with the server and hands each change to `handler`
// exactly once: the first Step lists (every object as ADDED), later Steps watch from the last
// resourceVersion. After 410 Gone it lists again and hands over only the difference from what
// it had delivered: objects whose resourceVersion moved (MODIFIED), new ones (ADDED) and those
// gone (DELETED, with the last object delivered). BOOKMARKs only move the resourceVersion.
class Reflector {
 public:
  using Handler = std::function<void(const std::string& type, const nlohmann::json& object)>;
  Reflector(std::string collection, std::string label_selector, Handler handler);

  // One list (when needed) and one watch of at most `watch_timeout_seconds`. An unreachable
  // server is the error; the caller pauses and calls again.
  Status Step(Client& client, int watch_timeout_seconds);

  const std::string& resource_version() const { return resource_version_; }
  int lists() const { return lists_; }  // 1 + the re-lists after 410 Gone

 private:
  Status Relist(Client& client);
  void Deliver(const std::string& type, const nlohmann::json& object);

  std::string collection_;
  std::string label_selector_;
  Handler handler_;
  std::string resource_version_;
  bool listed_ = false;
  int lists_ = 0;
  std::map<std::string, nlohmann::json> known_;  // "namespace/name" -> the last object delivered
};

// "namespace/name" of an object.
std::string ObjectKey(const nlohmann::json& object);
// metadata.resourceVersion, "" if none.
std::string ResourceVersionOf(const nlohmann::json& object);

}  // namespace drover::exec::kubernetes
