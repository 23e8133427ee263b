#include "drover/exec/kubernetes/executor.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <set>

namespace drover::exec::kubernetes {

using nlohmann::json;

namespace {

constexpr char kSelector[] = "app.kubernetes.io/managed-by=drover";

std::string JobsCollection(const std::string& namespace_name) {
  return fmt::format("/apis/batch/v1/namespaces/{}/jobs", namespace_name);
}
std::string PodsCollection(const std::string& namespace_name) {
  return fmt::format("/api/v1/namespaces/{}/pods", namespace_name);
}

const json& Field(const json& object, std::initializer_list<const char*> path) {
  static const json kNull;
  const json* at = &object;
  for (const char* key : path) {
    if (!at->is_object()) return kNull;
    auto it = at->find(key);
    if (it == at->end()) return kNull;
    at = &*it;
  }
  return *at;
}

std::string Text(const json& object, std::initializer_list<const char*> path) {
  const json& value = Field(object, path);
  return value.is_string() ? value.get<std::string>() : "";
}

int PodIndex(const json& pod) {
  const std::string index =
      Text(pod, {"metadata", "annotations", "batch.kubernetes.io/job-completion-index"});
  return index.empty() ? 0 : std::atoi(index.c_str());
}

// The first condition of `type` with status "True", or null.
const json* TrueCondition(const json& object, const std::string& type) {
  const json& conditions = Field(object, {"status", "conditions"});
  if (!conditions.is_array()) return nullptr;
  for (const json& condition : conditions) {
    if (condition.value("type", "") == type && condition.value("status", "") == "True") {
      return &condition;
    }
  }
  return nullptr;
}

// The exit of a failed worker's pod: its container's exit code, and whether it was preempted
// or lost with its node.
model::ExitStatus PodExit(const json& pod) {
  model::ExitStatus exit;
  exit.exit_code = 1;
  const json& statuses = Field(pod, {"status", "containerStatuses"});
  if (statuses.is_array()) {
    for (const json& status : statuses) {
      if (status.value("name", "") != kContainerName) continue;
      const json& terminated = Field(status, {"state", "terminated"});
      if (terminated.is_object()) {
        exit.exit_code = terminated.value("exitCode", 1);
        exit.signal = terminated.value("signal", 0);
        if (exit.signal != 0) exit.exit_code = -1;
        // The container stopped the worker at the job's timeout (render.cc, Command).
        const std::string message = terminated.value("message", "");
        if (message.starts_with(kTimedOutMessage)) {
          exit.timed_out = true;
          exit.message = message.substr(0, message.find('\n'));
        }
      }
    }
  }
  std::string why = Text(pod, {"status", "reason"});
  std::string detail = Text(pod, {"status", "message"});
  if (const json* disruption = TrueCondition(pod, "DisruptionTarget")) {
    why = disruption->value("reason", why);
    if (detail.empty()) detail = disruption->value("message", "");
  }
  static const std::set<std::string> kPreempted = {
      "PreemptionByScheduler", "PreemptionByKubeScheduler", "EvictionByEvictionAPI", "Evicted"};
  static const std::set<std::string> kNodeLost = {"DeletionByTaintManager",
                                                  "DeletionByPodGC",
                                                  "TerminationByKubelet",
                                                  "NodeLost",
                                                  "NodeShutdown",
                                                  "Shutdown",
                                                  "Terminated"};
  exit.preempted = kPreempted.contains(why);
  exit.node_lost = !exit.preempted && kNodeLost.contains(why);
  const std::string timed_out = exit.message;
  exit.message = fmt::format("pod {} on node {}", Text(pod, {"metadata", "name"}),
                             Text(pod, {"spec", "nodeName"}));
  if (!timed_out.empty()) exit.message += ": " + timed_out;
  if (!why.empty()) exit.message += ": " + why;
  if (!detail.empty()) exit.message += ": " + detail;
  return exit;
}

// Why a Job that has not started waits, or "" when nothing says.
std::string PendingReason(const json& job, const std::vector<const json*>& pods) {
  if (Field(job, {"spec", "suspend"}) == true) {
    const std::string queue = Text(job, {"metadata", "labels", "kueue.x-k8s.io/queue-name"});
    return queue.empty() ? "suspended" : fmt::format("queued in Kueue (LocalQueue {})", queue);
  }
  static const std::set<std::string> kWaiting = {
      "ErrImagePull",         "ImagePullBackOff",           "InvalidImageName",
      "CreateContainerError", "CreateContainerConfigError", "CrashLoopBackOff"};
  for (const json* pod : pods) {
    if (Text(*pod, {"status", "phase"}) != "Pending") continue;
    const json& conditions = Field(*pod, {"status", "conditions"});
    if (conditions.is_array()) {
      for (const json& condition : conditions) {
        if (condition.value("type", "") == "PodScheduled" &&
            condition.value("status", "") == "False") {
          return fmt::format("{}: {}", condition.value("reason", "Unschedulable"),
                             condition.value("message", ""));
        }
      }
    }
    const json& statuses = Field(*pod, {"status", "containerStatuses"});
    if (!statuses.is_array()) continue;
    for (const json& status : statuses) {
      const json& waiting = Field(status, {"state", "waiting"});
      const std::string reason = waiting.is_object() ? waiting.value("reason", "") : "";
      if (kWaiting.contains(reason)) {
        return fmt::format("{}: {}", reason, waiting.value("message", ""));
      }
    }
  }
  return "";
}

}  // namespace

struct KubernetesExecutor::Attempt {
  model::ExternalRef ref;
  std::string namespace_name;
  std::vector<json> objects;  // to create (the Job last); empty for an adopted attempt
  int workers = 1;
  bool job_seen = false;  // the Job was in the cache once (so its absence is a deletion)
  bool submitted = false;
  bool started = false;
  bool exited = false;
  bool cancel_requested = false;
  model::StopRequest stop;
  bool pods_listed = false;  // a Failed Job's pods were listed directly
  std::string pending_reason;
  std::vector<std::string> extra_paths;  // PodGroup, Service, claim template: deleted at the end
};

struct KubernetesExecutor::Watch {
  std::vector<std::unique_ptr<Client>> clients;
  std::vector<std::thread> threads;
};

Result<std::unique_ptr<KubernetesExecutor>> KubernetesExecutor::Create(const KubeConfig& config,
                                                                       ExecutorOptions options) {
  if (options.namespaces.empty()) {
    options.namespaces = {config.namespace_name.empty() ? "default" : config.namespace_name};
  }
  std::unique_ptr<KubernetesExecutor> executor(new KubernetesExecutor(config, options));
  DROVER_ASSIGN_OR_RETURN(executor->request_client_, executor->NewClient());
  {
    MutexLock lock(executor->mu_);
    for (const std::string& ns : options.namespaces) executor->WatchNamespaceLocked(ns);
    executor->clients_.push_back(executor->request_client_.get());
  }
  executor->request_thread_ =
      std::thread([raw = executor.get()] { raw->RequestLoop(*raw->request_client_); });
  return executor;
}

KubernetesExecutor::KubernetesExecutor(KubeConfig config, ExecutorOptions options)
    : config_(std::move(config)), options_(std::move(options)) {}

KubernetesExecutor::~KubernetesExecutor() {
  std::vector<Client*> clients;
  {
    MutexLock lock(mu_);
    stopping_ = true;
    clients = clients_;
  }
  wake_.notify_all();
  for (Client* client : clients) client->Stop();
  if (request_thread_.joinable()) request_thread_.join();
  for (auto& [ns, watch] : watches_) {
    for (std::thread& thread : watch->threads) thread.join();
  }
}

Result<std::unique_ptr<Client>> KubernetesExecutor::NewClient() const {
  return Client::Connect(config_, options_.client);
}

TimeMs KubernetesExecutor::Now() const {
  return options_.clock ? options_.clock->Now() : system_clock_.Now();
}

void KubernetesExecutor::WatchNamespaceLocked(const std::string& namespace_name) {
  if (stopping_ || watches_.contains(namespace_name)) return;
  auto watch = std::make_unique<Watch>();
  for (const bool jobs : {true, false}) {
    auto client = NewClient();
    if (!client) continue;  // the config was valid for the first client; it stays valid
    Client* raw = client->get();
    clients_.push_back(raw);
    watch->clients.push_back(std::move(*client));
    const std::string collection =
        jobs ? JobsCollection(namespace_name) : PodsCollection(namespace_name);
    watch->threads.emplace_back(
        [this, raw, collection, jobs] { WatchLoop(raw, collection, jobs); });
  }
  watches_[namespace_name] = std::move(watch);
}

void KubernetesExecutor::WatchLoop(Client* client, const std::string& collection, bool jobs) {
  Reflector reflector(collection, kSelector, [this, jobs](const std::string& type, const json& o) {
    OnChange(jobs, type, o);
  });
  while (!stopping_) {
    if (reflector.Step(*client, options_.watch_timeout_seconds)) continue;
    MutexLock lock(mu_);
    wake_.wait_for(lock, std::chrono::milliseconds(options_.retry_pause_ms),
                   [&] { return stopping_.load(); });
  }
}

void KubernetesExecutor::Enqueue(Request request) {
  requests_.push_back(std::move(request));
  wake_.notify_all();
}

Status KubernetesExecutor::Submit(const model::ExternalLaunch& launch) {
  DROVER_ASSIGN_OR_RETURN(auto rendered, Render(launch));
  MutexLock lock(mu_);
  if (attempts_.contains(rendered.name)) return OkStatus();  // submitted before: one Job
  auto attempt = std::make_unique<Attempt>();
  attempt->ref = launch.ref;
  attempt->ref.executor = model::ExecutorKind::kKubernetes;
  attempt->namespace_name = rendered.namespace_name;
  attempt->objects = std::move(rendered.objects);
  attempt->workers = launch.spec.workers;
  attempts_[rendered.name] = std::move(attempt);
  WatchNamespaceLocked(rendered.namespace_name);
  Enqueue({Request::Kind::kCreate, rendered.name});
  return OkStatus();
}

Status KubernetesExecutor::Cancel(const model::ExternalRef& ref,
                                  const model::StopRequest& request) {
  MutexLock lock(mu_);
  auto it = attempts_.find(ref.name);
  if (it == attempts_.end()) {
    return NotFound(fmt::format("{}: not an attempt of this executor", ref.name));
  }
  Attempt& attempt = *it->second;
  if (attempt.exited || attempt.cancel_requested) return OkStatus();
  attempt.cancel_requested = true;
  attempt.stop = request;
  Enqueue({Request::Kind::kDelete, ref.name});
  return OkStatus();
}

void KubernetesExecutor::Adopt(const std::vector<model::ExternalRef>& refs) {
  MutexLock lock(mu_);
  for (const model::ExternalRef& ref : refs) {
    if (attempts_.contains(ref.name)) continue;
    auto attempt = std::make_unique<Attempt>();
    attempt->ref = ref;
    attempt->ref.executor = model::ExecutorKind::kKubernetes;
    // external_id is "NAMESPACE/NAME"; without one the Job is looked for in the namespaces
    // watched from the start.
    if (const std::size_t slash = ref.external_id.find('/'); slash != std::string::npos) {
      attempt->namespace_name = ref.external_id.substr(0, slash);
    }
    attempt->submitted = !ref.external_id.empty();
    if (!attempt->namespace_name.empty()) WatchNamespaceLocked(attempt->namespace_name);
    attempts_[ref.name] = std::move(attempt);
    Enqueue({Request::Kind::kLookup, ref.name});
  }
}

std::vector<model::ExecutorEvent> KubernetesExecutor::Poll() {
  MutexLock lock(mu_);
  std::vector<model::ExecutorEvent> events;
  events.swap(events_);
  return events;
}

void KubernetesExecutor::RequestLoop(Client& client) {
  while (true) {
    Request request;
    {
      MutexLock lock(mu_);
      auto ready = [&]() REQUIRES(mu_) {
        const TimeMs now = Now();
        return std::find_if(requests_.begin(), requests_.end(),
                            [&](const Request& r) { return r.not_before <= now; });
      };
      wake_.wait_for(lock, std::chrono::milliseconds(100),
                     [&]() REQUIRES(mu_) { return stopping_ || ready() != requests_.end(); });
      if (stopping_) return;
      auto it = ready();
      if (it == requests_.end()) continue;
      request = *it;
      requests_.erase(it);
    }
    Handle(client, request);
  }
}

void KubernetesExecutor::Handle(Client& client, const Request& request) {
  auto retry = [&] {
    MutexLock lock(mu_);
    Request again = request;
    again.not_before = Now() + options_.retry_pause_ms;
    Enqueue(again);
  };
  auto transient = [](const Error& error) {
    return error.code == ErrorCode::kUnavailable || error.code == ErrorCode::kResourceExhausted;
  };
  std::string namespace_name;
  std::vector<std::string> extra_paths;
  {
    MutexLock lock(mu_);
    auto it = attempts_.find(request.name);
    if (it == attempts_.end()) return;
    namespace_name = it->second->namespace_name;
    extra_paths = it->second->extra_paths;
  }
  switch (request.kind) {
    case Request::Kind::kCreate:
      CreateObjects(client, request.name);
      return;
    case Request::Kind::kDelete: {
      Status deleted = client.Delete(JobsCollection(namespace_name) + "/" + request.name);
      if (!deleted && transient(deleted.error())) return retry();
      for (const std::string& path : extra_paths) (void)client.Delete(path);
      MutexLock lock(mu_);
      Attempt& attempt = *attempts_.at(request.name);
      if (!deleted && deleted.error().code == ErrorCode::kNotFound && !attempt.exited) {
        // Never created (refused, or cancelled before it was): the cancellation ends it.
        attempt.job_seen = true;
        jobs_.erase(namespace_name + "/" + request.name);
      }
      EvaluateLocked(request.name);
      return;
    }
    case Request::Kind::kLookup: {
      std::vector<std::string> namespaces;
      if (namespace_name.empty()) {
        namespaces = options_.namespaces;
      } else {
        namespaces = {namespace_name};
      }
      for (const std::string& ns : namespaces) {
        auto job = client.Get(JobsCollection(ns) + "/" + request.name);
        if (!job && transient(job.error())) return retry();
        if (!job) continue;
        MutexLock lock(mu_);
        Attempt& attempt = *attempts_.at(request.name);
        attempt.namespace_name = ns;
        WatchNamespaceLocked(ns);
        jobs_.emplace(ns + "/" + request.name, *job);
        EvaluateLocked(request.name);
        return;
      }
      MutexLock lock(mu_);
      Attempt& attempt = *attempts_.at(request.name);
      if (attempt.exited) return;
      model::ExitStatus exit;
      exit.node_lost = true;
      exit.message = fmt::format(
          "no Kubernetes Job named {} in namespace {}: it was deleted (or never created) while "
          "Drover was not watching",
          request.name, fmt::join(namespaces, ", "));
      ExitLocked(attempt, exit, Now());
      return;
    }
    case Request::Kind::kCleanUp:
      for (const std::string& path : extra_paths) (void)client.Delete(path);
      return;
    case Request::Kind::kListPods: {
      auto pods = client.List(PodsCollection(namespace_name),
                              fmt::format("{}={}", kAttemptNameLabel, request.name));
      if (!pods && transient(pods.error())) return retry();
      MutexLock lock(mu_);
      if (pods) {
        for (const json& pod : pods->value("items", json::array())) {
          // A pod's phase never leaves Succeeded or Failed: such a copy is the newest there is.
          // Another one may be older than what the watch delivered meanwhile, which stays.
          const std::string phase = Text(pod, {"status", "phase"});
          if (phase == "Failed" || phase == "Succeeded") {
            pods_[ObjectKey(pod)] = pod;
          } else {
            pods_.emplace(ObjectKey(pod), pod);
          }
        }
      }
      attempts_.at(request.name)->pods_listed = true;
      EvaluateLocked(request.name);
      return;
    }
  }
}

void KubernetesExecutor::CreateObjects(Client& client, const std::string& name) {
  std::vector<json> objects;
  {
    MutexLock lock(mu_);
    objects = attempts_.at(name)->objects;
  }
  for (const json& object : objects) {
    auto collection = CollectionPath(object);
    if (!collection) continue;  // Render only makes objects it has collections for
    const bool is_job = object.value("kind", "") == "Job";
    const std::string path = *collection + "/" + object["metadata"].value("name", "");
    auto created = client.Create(*collection, object);
    if (!created && created.error().code == ErrorCode::kAlreadyExists) {
      // Created before (by an earlier process): adopt it, if it is this attempt's.
      created = client.Get(path);
      if (created && Text(*created, {"metadata", "labels", kAttemptNameLabel}) != name) {
        created = InvalidArgument(fmt::format(
            "a {} named {} exists in namespace {} that Drover did not create for this attempt",
            object.value("kind", ""), name, object["metadata"].value("namespace", "")));
      }
    }
    if (!created && (created.error().code == ErrorCode::kUnavailable ||
                     created.error().code == ErrorCode::kResourceExhausted)) {
      MutexLock lock(mu_);
      Enqueue({Request::Kind::kCreate, name, Now() + options_.retry_pause_ms});
      return;
    }
    MutexLock lock(mu_);
    Attempt& attempt = *attempts_.at(name);
    if (!created) {
      if (attempt.exited) return;
      model::ExitStatus exit;
      exit.message = fmt::format("the Kubernetes API refused the {}: {}", object.value("kind", ""),
                                 created.error().message);
      ExitLocked(attempt, exit, Now());
      return;
    }
    if (!is_job) {
      if (std::find(attempt.extra_paths.begin(), attempt.extra_paths.end(), path) ==
          attempt.extra_paths.end()) {
        attempt.extra_paths.push_back(path);
      }
      continue;
    }
    jobs_.emplace(ObjectKey(*created), *created);  // the watch's copy, when newer, stays
    EvaluateLocked(name);
  }
}

void KubernetesExecutor::OnChange(bool job, const std::string& type, const json& object) {
  MutexLock lock(mu_);
  std::map<std::string, json>& cache = job ? jobs_ : pods_;
  if (type == "DELETED") {
    cache.erase(ObjectKey(object));
  } else {
    cache[ObjectKey(object)] = object;
  }
  // A Job is named as its attempt; a pod carries the attempt's name as a label.
  EvaluateLocked(job ? Text(object, {"metadata", "name"})
                     : Text(object, {"metadata", "labels", kAttemptNameLabel}));
}

void KubernetesExecutor::EmitLocked(Attempt& attempt, model::ExecutorEvent event) {
  event.ref = attempt.ref;
  events_.push_back(std::move(event));
}

void KubernetesExecutor::ExitLocked(Attempt& attempt, model::ExitStatus exit, TimeMs at) {
  attempt.exited = true;
  model::ExecutorEvent event;
  event.kind = model::ExecutorEvent::Kind::kExited;
  event.at = at;
  event.exit = std::move(exit);
  EmitLocked(attempt, std::move(event));
  if (!attempt.extra_paths.empty()) Enqueue({Request::Kind::kCleanUp, attempt.ref.name});
}

void KubernetesExecutor::EvaluateLocked(const std::string& name) {
  auto it = attempts_.find(name);
  if (it == attempts_.end() || it->second->exited) return;
  Attempt& attempt = *it->second;
  const std::string key = attempt.namespace_name + "/" + name;
  auto job_it = jobs_.find(key);
  if (job_it == jobs_.end()) {
    if (!attempt.job_seen) return;  // not created yet
    model::ExitStatus exit;
    if (attempt.cancel_requested) {
      (attempt.stop.preempt ? exit.preempted : exit.cancelled) = true;
      exit.message = attempt.stop.reason;
    } else {
      // Nothing in Kubernetes deletes a running Job on its own (a lost node takes pods, not
      // Jobs): someone did, so the job ends cancelled, as after an `scancel` outside Drover,
      // instead of coming back as a new Job.
      exit.cancelled = true;
      exit.message = fmt::format("the Kubernetes Job {} was deleted outside Drover", key);
    }
    ExitLocked(attempt, exit, Now());
    return;
  }
  const json& job = job_it->second;
  attempt.job_seen = true;
  if (const json& parallelism = Field(job, {"spec", "parallelism"}); parallelism.is_number()) {
    attempt.workers = std::max(1, parallelism.get<int>());
  }
  if (!attempt.submitted) {
    attempt.submitted = true;
    attempt.ref.external_id = key;
    model::ExecutorEvent event;
    event.kind = model::ExecutorEvent::Kind::kSubmitted;
    event.at = ParseTime(Text(job, {"metadata", "creationTimestamp"})).value_or(Now());
    EmitLocked(attempt, std::move(event));
  }
  attempt.ref.external_id = key;

  std::vector<const json*> pods;
  for (const auto& [pod_key, pod] : pods_) {
    if (Text(pod, {"metadata", "labels", kAttemptNameLabel}) == name &&
        Text(pod, {"metadata", "namespace"}) == attempt.namespace_name) {
      pods.push_back(&pod);
    }
  }
  std::stable_sort(pods.begin(), pods.end(),
                   [](const json* a, const json* b) { return PodIndex(*a) < PodIndex(*b); });

  auto report_started = [&](bool all_required, TimeMs fallback) REQUIRES(mu_) {
    if (attempt.started) return;
    std::vector<std::string> nodes;
    TimeMs at = 0;
    for (const json* pod : pods) {
      const std::string phase = Text(*pod, {"status", "phase"});
      const std::string node = Text(*pod, {"spec", "nodeName"});
      if (node.empty() || (phase != "Running" && phase != "Succeeded" && phase != "Failed")) {
        continue;
      }
      nodes.push_back(node);
      at = std::max(at, ParseTime(Text(*pod, {"status", "startTime"})).value_or(0));
    }
    if (all_required && static_cast<int>(nodes.size()) < attempt.workers) return;
    if (!all_required && nodes.empty() && fallback == 0) return;
    attempt.started = true;
    model::ExecutorEvent event;
    event.kind = model::ExecutorEvent::Kind::kStarted;
    event.at = at > 0 ? at : fallback;
    event.nodes = std::move(nodes);
    EmitLocked(attempt, std::move(event));
  };

  if (const json* complete = TrueCondition(job, "Complete")) {
    const TimeMs at =
        ParseTime(Text(job, {"status", "completionTime"}))
            .value_or(ParseTime(complete->value("lastTransitionTime", "")).value_or(Now()));
    report_started(false, at);
    model::ExitStatus exit;
    exit.exit_code = 0;
    ExitLocked(attempt, exit, at);
    return;
  }
  if (const json* failed = TrueCondition(job, "Failed")) {
    const TimeMs at = ParseTime(failed->value("lastTransitionTime", "")).value_or(Now());
    const std::string reason = failed->value("reason", "");
    model::ExitStatus exit;
    if (attempt.cancel_requested) {
      (attempt.stop.preempt ? exit.preempted : exit.cancelled) = true;
      exit.message = attempt.stop.reason;
    } else if (reason == "DeadlineExceeded") {
      // The backstop: the timeout plus the queue allowance passed (render.cc).
      exit.timed_out = true;
      exit.message = fmt::format("the Job ran past its activeDeadlineSeconds{}: {}",
                                 attempt.started ? "" : " before all its workers ran",
                                 failed->value("message", ""));
    } else {
      auto first_failed = std::find_if(pods.begin(), pods.end(), [](const json* pod) {
        return Text(*pod, {"status", "phase"}) == "Failed";
      });
      if (first_failed == pods.end() && !attempt.pods_listed) {
        // The pod watch may lag behind the Job's: ask for the pods themselves.
        Enqueue({Request::Kind::kListPods, name});
        return;
      }
      if (first_failed != pods.end()) {
        exit = PodExit(**first_failed);
      } else {
        exit.exit_code = 1;
        exit.message = fmt::format("the Job failed ({}: {}); its failed pod is gone", reason,
                                   failed->value("message", ""));
      }
    }
    report_started(true, 0);
    ExitLocked(attempt, exit, at);
    return;
  }

  report_started(true, 0);
  if (attempt.started) return;
  const std::string reason = PendingReason(job, pods);
  if (!reason.empty() && reason != attempt.pending_reason) {
    attempt.pending_reason = reason;
    model::ExecutorEvent event;
    event.kind = model::ExecutorEvent::Kind::kPending;
    event.at = Now();
    event.reason = reason;
    EmitLocked(attempt, std::move(event));
  }
}

Result<std::unique_ptr<exec::Executor>> NewKubernetesExecutor(const std::string& kubeconfig_path,
                                                              const std::string& context,
                                                              ExecutorOptions options) {
  std::string path = kubeconfig_path;
  if (path.empty()) {
    if (const char* env = std::getenv("KUBECONFIG"); env && *env) {
      path = std::string(env).substr(0, std::string(env).find(':'));
    } else if (const char* home = std::getenv("HOME"); home && *home) {
      const std::string candidate = std::string(home) + "/.kube/config";
      if (std::filesystem::exists(candidate)) path = candidate;
    }
  }
  DROVER_ASSIGN_OR_RETURN(auto config,
                          path.empty() ? InClusterConfig() : LoadKubeConfig(path, context));
  DROVER_ASSIGN_OR_RETURN(auto executor, KubernetesExecutor::Create(config, std::move(options)));
  return std::unique_ptr<exec::Executor>(std::move(executor));
}

}  // namespace drover::exec::kubernetes
