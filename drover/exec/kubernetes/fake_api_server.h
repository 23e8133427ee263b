#pragma once

// FakeApiServer: a small Kubernetes API server on 127.0.0.1 for tests (no real one can run on
// Drover's build machines; docs/operations.md says what was and was not run against a real
// cluster). It speaks the wire format the client depends on, and nothing more:
//   - namespaced collections under /api/v1 and /apis/GROUP/VERSION: POST (create; 409 with an
//     AlreadyExists Status for a taken name), GET of an object (404 NotFound Status) or of the
//     collection (a List with metadata.resourceVersion; labelSelector k=v[,k=v]), DELETE
//     (propagationPolicy Background also deletes a Job's pods);
//   - ?watch=1: a chunked stream of {"type", "object"} lines after the given resourceVersion,
//     BOOKMARK events when allowWatchBookmarks=true, the end after timeoutSeconds;
//     a resourceVersion older than the last Compact() is 410 Gone: an ERROR event with a
//     Status of code 410 (as kube-apiserver sends it), or the HTTP status when
//     GoneAsHttpStatus(true);
//   - Throttle(n, seconds): the next n requests are 429 with Retry-After;
//   - discovery documents: /version, /api, /apis, /api/v1, /apis/batch/v1.
// Every object gets metadata.uid, resourceVersion (one counter for everything, as etcd's) and
// creationTimestamp. Tests drive the cluster's side through the methods below (a Job
// controller, kubelets and schedulers are not simulated beyond them).

#include <condition_variable>
#include <map>
#include <memory>
#include <mutex>
#include <nlohmann/json.hpp>
#include <string>
#include <thread>
#include <vector>

namespace httplib {
class Server;
struct Response;
}  // namespace httplib

namespace drover::exec::kubernetes {

class FakeApiServer {
 public:
  // HTTPS: the server's certificate and key (PEM); with client_ca_pem, clients must present a
  // certificate it signed.
  struct Tls {
    std::string cert_pem;
    std::string key_pem;
    std::string client_ca_pem;
  };

  FakeApiServer();  // plain HTTP
  explicit FakeApiServer(const Tls& tls);
  ~FakeApiServer();  // stops serving; open watches end

  // Serves on 127.0.0.1 at a free port; false if it cannot listen.
  bool Start();
  std::string url() const;  // "http://127.0.0.1:PORT" ("https://" with TLS)
  // A kubeconfig for url() (no credentials) in namespace `namespace_name`.
  std::string KubeConfigYaml(const std::string& namespace_name = "default") const;

  // --- the cluster's side -------------------------------------------------------------------
  // Stores `object` (its metadata.namespace, name) as if created by a controller; returns it
  // with the server's metadata.
  nlohmann::json Put(const std::string& collection, nlohmann::json object);
  // Applies `change` (a JSON merge patch, RFC 7386) to an object; a MODIFIED event.
  nlohmann::json Patch(const std::string& collection, const std::string& name,
                       const nlohmann::json& change);
  bool Remove(const std::string& collection, const std::string& name);  // a DELETED event
  std::optional<nlohmann::json> Find(const std::string& collection, const std::string& name) const;
  std::vector<nlohmann::json> Items(const std::string& collection) const;

  // The Job controller and the kubelet, reduced to what tests need: a pod per index of Job
  // `job` in `namespace_name` running on `nodes[index]`, then its end.
  void RunPods(const std::string& namespace_name, const std::string& job,
               const std::vector<std::string>& nodes);
  // The pod of index `index` ends with `exit_code`; `reason` ("" or e.g. "Evicted") and a
  // DisruptionTarget condition reason (e.g. "PreemptionByScheduler") describe an eviction;
  // `message` is the container's termination message.
  void EndPod(const std::string& namespace_name, const std::string& job, int index, int exit_code,
              const std::string& reason = "", const std::string& disruption = "",
              const std::string& message = "");
  // Sets the Job's terminal condition: "Complete", or "Failed" with `reason`
  // ("BackoffLimitExceeded", "DeadlineExceeded").
  void FinishJob(const std::string& namespace_name, const std::string& job,
                 const std::string& condition, const std::string& reason = "");

  // --- faults ---------------------------------------------------------------------------------
  // Forgets the history: watches from any resourceVersion before now get 410 Gone.
  void Compact();
  void GoneAsHttpStatus(bool yes);
  // The next `count` requests are answered 429 with Retry-After: `retry_after_seconds`.
  void Throttle(int count, int retry_after_seconds);
  // Ends every open watch (as a server restart or a load balancer timeout would).
  void DropWatches();

  // Requests so far, "METHOD PATH?QUERY", in order.
  std::vector<std::string> requests() const;
  // The Authorization header of the last request ("Bearer TOKEN"), "" if it had none.
  std::string last_authorization() const;
  int watches_started() const;

 private:
  struct Event {
    long rv;
    std::string collection;
    std::string type;
    nlohmann::json object;
  };

  void Route();
  // Answers 429 with Retry-After if a Throttle() count is left, and counts it down.
  bool Throttled(httplib::Response& res);
  bool ThrottledLocked(httplib::Response& res);
  nlohmann::json StoreLocked(const std::string& collection, nlohmann::json object,
                             const std::string& type);
  void EmitLocked(const std::string& collection, const std::string& type,
                  const nlohmann::json& object);
  std::string Collection(const std::string& path, std::string* name) const;

  std::unique_ptr<httplib::Server> server_;
  std::thread thread_;
  int port_ = 0;
  bool tls_ = false;
  std::string last_authorization_;

  mutable std::mutex mu_;
  std::condition_variable changed_;
  long rv_ = 100;
  long compacted_rv_ = 0;
  long watch_generation_ = 0;  // DropWatches() moves it on
  bool stopping_ = false;
  bool gone_as_http_ = false;
  int throttle_count_ = 0;
  int throttle_seconds_ = 1;
  int watches_started_ = 0;
  long uid_ = 0;
  std::map<std::string, std::map<std::string, nlohmann::json>> objects_;  // collection -> name
  std::vector<Event> events_;
  std::vector<std::string> requests_;
};

}  // namespace drover::exec::kubernetes
