#pragma once

// KubernetesExecutor: exec::Executor over the Kubernetes API (docs/operations.md, "Executors:
// Kubernetes"). Submit renders the attempt (render.h) and creates its objects, idempotently by
// name: a Job that already exists under the attempt's name (created before a restart) is
// adopted. One thread does the requests; per namespace, two threads keep Reflectors of the
// Jobs and Pods labelled app.kubernetes.io/managed-by=drover. What they observe becomes
// ExecutorEvents:
//   kSubmitted  the Job exists: at = its creationTimestamp, ref.external_id = "NAMESPACE/NAME";
//   kPending    while not started, when the reason changes: "queued in Kueue (LocalQueue q)" for
//               a Job suspended under a kueue queue, "Unschedulable: <the scheduler's message>",
//               "ImagePullBackOff: <message>" (and other container waiting reasons);
//   kStarted    every worker's pod runs: nodes = spec.nodeName by rank, at = the latest
//               startTime;
//   kExited     the Job's condition Complete (exit 0) or Failed: DeadlineExceeded is timed_out,
//               otherwise the exit code of the first failed worker's container (timed_out when
//               its termination message starts with kTimedOutMessage), preempted when
//               its pod was preempted or evicted (DisruptionTarget PreemptionByScheduler,
//               EvictionByEvictionAPI, reason Evicted), node_lost when its node went away
//               (DeletionByTaintManager, DeletionByPodGC, TerminationByKubelet); a Job deleted by
//               Cancel is cancelled (preempted for a preempting stop), one deleted by anyone
//               else node_lost; a create the API server refuses (invalid, forbidden) carries its
//               message.
// After an attempt ends its PodGroup, Service and ResourceClaimTemplate are deleted; the Job
// stays for its logs until ttlSecondsAfterFinished.

#include <atomic>
#include <condition_variable>
#include <deque>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "drover/common/thread_annotations.h"
#include "drover/exec/executor.h"
#include "drover/exec/kubernetes/client.h"
#include "drover/exec/kubernetes/render.h"

namespace drover::exec::kubernetes {

struct ExecutorOptions {
  ClientOptions client;
  // Watched from the start (besides those of submitted and adopted attempts): Adopt looks for
  // attempts without an external id here. Empty: the kubeconfig context's namespace, else
  // "default".
  std::vector<std::string> namespaces;
  int watch_timeout_seconds = 60;    // each watch request; the next resumes where it ended
  DurationMs retry_pause_ms = 1000;  // after the API server could not be reached
  const Clock* clock = nullptr;      // nullptr: the system clock
};

class KubernetesExecutor final : public exec::Executor {
 public:
  // Connects to the API server of `config` (nothing is sent before the first call).
  static Result<std::unique_ptr<KubernetesExecutor>> Create(const KubeConfig& config,
                                                            ExecutorOptions options = {});
  ~KubernetesExecutor() override;

  model::ExecutorKind kind() const override { return model::ExecutorKind::kKubernetes; }
  Status Submit(const model::ExternalLaunch& launch) override;
  Status Cancel(const model::ExternalRef& ref, const model::StopRequest& request) override;
  void Adopt(const std::vector<model::ExternalRef>& refs) override;
  std::vector<model::ExecutorEvent> Poll() override;

 private:
  struct Attempt;
  struct Request {
    enum class Kind { kCreate, kDelete, kLookup, kCleanUp, kListPods } kind;
    std::string name;
    TimeMs not_before = 0;
  };
  struct Watch;

  KubernetesExecutor(KubeConfig config, ExecutorOptions options);
  Result<std::unique_ptr<Client>> NewClient() const;
  void WatchNamespaceLocked(const std::string& namespace_name) REQUIRES(mu_);
  void Enqueue(Request request) REQUIRES(mu_);
  void RequestLoop(Client& client) EXCLUDES(mu_);
  void Handle(Client& client, const Request& request);
  void CreateObjects(Client& client, const std::string& name);
  // A watched change of a Job (`job`) or a Pod.
  void OnChange(bool job, const std::string& type, const nlohmann::json& object) EXCLUDES(mu_);
  // Reports what the cached Job and pods say of attempt `name` that was not reported yet.
  void EvaluateLocked(const std::string& name) REQUIRES(mu_);
  void EmitLocked(Attempt& attempt, model::ExecutorEvent event) REQUIRES(mu_);
  void ExitLocked(Attempt& attempt, model::ExitStatus exit, TimeMs at) REQUIRES(mu_);
  void WatchLoop(Client* client, const std::string& collection, bool jobs) EXCLUDES(mu_);
  TimeMs Now() const;

  const KubeConfig config_;
  const ExecutorOptions options_;
  SystemClock system_clock_;

  Mutex mu_;
  std::condition_variable_any wake_;
  std::atomic<bool> stopping_{false};
  // by attempt name
  std::map<std::string, std::unique_ptr<Attempt>> attempts_ GUARDED_BY(mu_);
  std::map<std::string, nlohmann::json> jobs_ GUARDED_BY(mu_);  // "ns/name" -> the latest Job
  std::map<std::string, nlohmann::json> pods_ GUARDED_BY(mu_);  // "ns/name" -> the latest Pod
  std::deque<Request> requests_ GUARDED_BY(mu_);
  std::vector<model::ExecutorEvent> events_ GUARDED_BY(mu_);
  std::map<std::string, std::unique_ptr<Watch>> watches_ GUARDED_BY(mu_);  // by namespace
  std::vector<Client*> clients_ GUARDED_BY(mu_);  // to Stop() them at the end
  std::unique_ptr<Client> request_client_;
  std::thread request_thread_;
};

// The executor for `kubeconfig_path` (empty: $KUBECONFIG, else ~/.kube/config, else the
// in-cluster service account) and `context` (empty: the current context).
Result<std::unique_ptr<exec::Executor>> NewKubernetesExecutor(const std::string& kubeconfig_path,
                                                              const std::string& context = "",
                                                              ExecutorOptions options = {});

}  // namespace drover::exec::kubernetes
