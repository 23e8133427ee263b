// ControlPlane's core (control_plane.h lists the files of the rest): start-up and recovery, the
// loop, Commit and the effects it carries out, and the job calls of the API. Over the ~800-line
// guide because these share the loop's invariants (what runs under mu_, in what order a step
// is persisted and its effects carried out); a reader needs them together.

#include "drover/server/control_plane.h"

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <pwd.h>
#include <spdlog/spdlog.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <functional>
#include <map>
#include <optional>
#include <string_view>
#include <thread>
#include <utility>
#include <vector>

#include "drover/agent/outputs.h"
#include "drover/model/access.h"
#include "drover/model/dependency.h"
#include "drover/os/threads.h"
#include "drover/os/unix_account.h"
#include "drover/server/secret.h"

namespace drover::server {

void ExitForRestart(const Error& error) {
  spdlog::critical("cannot persist state, exiting so that a restart recovers: {}",
                   error.ToString());
  std::_Exit(70);
}

namespace {

// Runs `work` with the file permissions of a job's account (Job::run_as) when this process is
// root and the account is another: the job wrote its staging files as that account, so a link
// or a FIFO it left there must not make the server read, move or remove what the account may
// not (os::WithFileIdentityOf); and its inputs are looked for as it. Only where `fs` has owners
// (FileSystem::HasOwners; tests' in-memory one has none and runs `work` as it is). `task` ends
// the error's "on the server, which ..." (what the server needed the account for). An error
// when the account cannot be had (`work` did not run).
Status AsJobAccount(const FileSystem& fs, const std::string& run_as, bool may_run_as_root,
                    std::string_view task, const std::function<void()>& work) {
  if (!fs.HasOwners()) {
    work();
    return OkStatus();
  }
  DROVER_ASSIGN_OR_RETURN(std::optional<os::UnixAccount> account,
                          os::OtherAccountToRunAs(run_as, may_run_as_root,
                                                  fmt::format("on the server, which {}", task)));
  if (!account) {
    work();
    return OkStatus();
  }
  return os::WithFileIdentityOf(*account, work);
}

// `options` with server_user, when empty, set to the name of this process's effective user.
control::Options WithServerUser(control::Options options) {
  if (options.server_user.empty()) {
    if (const passwd* entry = getpwuid(geteuid())) options.server_user = entry->pw_name;
  }
  return options;
}

}  // namespace

ControlPlane::ControlPlane(std::unique_ptr<store::Store> store, const Clock& clock,
                           ControlPlaneOptions options, FileSystem& fs)
    : store_(std::move(store)),
      clock_(clock),
      options_(std::move(options)),
      fs_(fs),
      agents_(*store_, options_.join_token),
      tokens_(*store_, options_.job_token_key.empty() ? NewCredential().value_or("")
                                                      : options_.job_token_key),
      audit_(*store_, options_.audit_flush_interval_ms),
      usage_(*store_),
      events_(options_.events, clock_),
      controller_(WithServerUser(options_.control)) {
  MutexLock lock(mu_);
  PublishPolicy();
}

ControlPlane::~ControlPlane() { Stop(); }

void ControlPlane::AddLocalNode(const model::Node& node,
                                std::unique_ptr<agent::WorkerRuntime> runtime,
                                std::string runs_dir) {
  MutexLock lock(mu_);
  nodes_[node.name] = NodeEntry{std::move(runtime), nullptr, std::move(runs_dir)};
  control::Step step;
  controller_.UpsertNode(node, clock_.Now(), step);
  // A failed write stopped the plane (on_store_failure); Start then says so.
  static_cast<void>(Commit(step));
}

void ControlPlane::AddExecutor(std::unique_ptr<exec::Executor> executor) {
  MutexLock lock(mu_);
  const model::ExecutorKind kind = executor->kind();
  executors_[kind] = std::move(executor);
}

void ControlPlane::SetSecretStore(std::unique_ptr<SecretStore> secrets) {
  secrets_ = std::move(secrets);
}

Status ControlPlane::Start() {
  DROVER_ASSIGN_OR_RETURN(std::vector<model::Job> stored, store_->ListJobs(store::JobFilter{}));
  DROVER_ASSIGN_OR_RETURN(model::FairShareHistory history, store_->GetFairShare());
  DROVER_ASSIGN_OR_RETURN(std::vector<store::NodeAdminRecord> node_admin, store_->ListNodeAdmin());
  DROVER_RETURN_IF_ERROR(agents_.Load());
  DROVER_RETURN_IF_ERROR(tokens_.Load());
  {
    MutexLock lock(mu_);
    // The saved fair-share history first, decayed over the downtime as time without usage:
    // Restore then holds the running jobs from now on.
    std::vector<std::string> dropped = controller_.RestoreFairShare(history, clock_.Now());
    if (!dropped.empty()) {
      spdlog::warn("the policy has no queue {}: its saved fair-share history was dropped",
                   fmt::join(dropped, ", "));
    }
    policy_history_dropped_ = std::move(dropped);
    fair_share_loaded_ = true;
    fair_share_saved_at_ = clock_.Now();
    for (store::NodeAdminRecord& record : node_admin) {
      controller_.RestoreNodeAdmin(record.node, std::move(record.admin));
    }
    control::Step step;
    controller_.Restore(std::move(stored), clock_.Now(), step);
    // Re-attach to the workers an earlier server launched; launch those that never started.
    std::map<NodeId, std::vector<model::WorkerKey>> live;
    for (const auto& [node, key] : controller_.LiveWorkers()) live[node].push_back(key);
    for (const auto& [node, keys] : live) {
      auto it = nodes_.find(node);
      if (it == nodes_.end()) {
        // A remote node: adopted when its agent registers, lost if it does not in time.
        AddRemote(node);
        continue;
      }
      for (const model::WorkerKey& key : it->second.runtime->Adopt(keys)) {
        controller_.Relaunch(key, step);
      }
    }
    RestoreLostNodes();
    std::map<model::ExecutorKind, std::vector<model::ExternalRef>> handed;
    for (model::ExternalRef& ref : controller_.LiveExternal()) {
      handed[ref.executor].push_back(std::move(ref));
    }
    for (auto& [kind, refs] : handed) {
      auto executor = executors_.find(kind);
      if (executor != executors_.end()) {
        executor->second->Adopt(refs);
        continue;
      }
      for (const model::ExternalRef& ref : refs) {
        model::ExecutorEvent lost;
        lost.ref = ref;
        lost.kind = model::ExecutorEvent::Kind::kExited;
        lost.at = clock_.Now();
        lost.exit.node_lost = true;
        lost.exit.message = fmt::format("this server has no {} executor to re-attach to it",
                                        model::ExecutorKindName(kind));
        controller_.OnExecutorEvent(lost, step);
      }
    }
    controller_.Schedule(clock_.Now(), step);
    DROVER_RETURN_IF_ERROR(Commit(step));
    DROVER_RETURN_IF_ERROR(RestoreCrons());
    DROVER_RETURN_IF_ERROR(RestoreServices());
  }
  CarryOutEffects(/*wait=*/true);  // the relaunches and the first placements, before the loop
  if (options_.run_loop) {
    {
      MutexLock lock(mu_);
      loop_started_ = true;
    }
    loop_ = std::thread([this] { Loop(); });
    if (options_.run_prober) {
      prober_ = std::make_unique<ServiceProber>(
          [this] { return DueProbes(); },
          [this](std::vector<ProbeResult> results) { OnProbeResults(std::move(results)); });
      prober_->Start();
    }
  }
  for (const auto& sampler : samplers_) sampler->Start();
  return OkStatus();
}

void ControlPlane::Stop() {
  {
    MutexLock lock(mu_);
    if (stopping_) return;
    stopping_ = true;
  }
  for (const auto& sampler : samplers_) sampler->Stop();
  if (prober_) prober_->Stop();
  wake_loop_.notify_all();
  changed_.notify_all();
  if (loop_.joinable()) loop_.join();
  {
    MutexLock lock(mu_);
    if (!store_failed_) SaveFairShare();
  }
  audit_.Stop();
}

void ControlPlane::SaveFairShare() {
  if (!fair_share_loaded_) return;  // would overwrite the saved history with an empty one
  fair_share_saved_at_ = clock_.Now();
  Status saved = store_->PutFairShare(controller_.FairShareHistory(fair_share_saved_at_));
  if (!saved) spdlog::error("saving the fair-share history failed: {}", saved.error().message);
}

// What a turn of the loop looked at without mu_ (Gather), for Absorb.
struct ControlPlane::Observation {
  // Every runtime's events, in each one's order, with the node whose runtime reported each.
  std::vector<std::pair<NodeId, model::WorkerEvent>> worker_events;
  std::vector<model::ExecutorEvent> executor_events;  // every executor's, in each one's order
  // Each waiting job looked at, with the paths of its inputs that are missing.
  std::vector<std::pair<JobId, std::vector<std::string>>> inputs;
  // The policy file looked at (empty: none was), what the look saw (nullopt: it could not be
  // looked at) and, when that differed from the previous look, what reading it gave.
  std::string policy_path;
  std::optional<FileInfo> policy_stamp;
  std::optional<Result<PolicyFile>> policy_read;
};

void ControlPlane::RunOnce() {
  {
    MutexLock turn(turn_mu_);
    Observation seen = Gather(/*check_policy=*/true, /*check_inputs=*/true);
    MutexLock lock(mu_);
    control::Step step;
    Absorb(seen, step);
    schedule_requested_ = false;
    ScheduleCycle(step);
    static_cast<void>(Commit(step));  // a failed write stopped the plane (on_store_failure)
  }
  CarryOutEffects(/*wait=*/true);
}

ControlPlane::Observation ControlPlane::Gather(bool check_policy, bool check_inputs) {
  Observation seen;
  std::vector<std::pair<NodeId, std::shared_ptr<agent::WorkerRuntime>>> runtimes;
  std::vector<exec::Executor*> executors;
  std::vector<control::Controller::InputCheck> to_check;
  std::optional<FileInfo> policy_seen;
  {
    MutexLock lock(mu_);
    runtimes.reserve(nodes_.size());
    for (const auto& [name, entry] : nodes_) runtimes.emplace_back(name, entry.runtime);
    for (const auto& [kind, executor] : executors_) executors.push_back(executor.get());
    if (check_inputs) to_check = controller_.InputsToCheck();
    if (check_policy) {
      seen.policy_path = policy_file_;
      policy_seen = policy_file_seen_;
    }
  }
  for (const auto& [node, runtime] : runtimes) {
    for (model::WorkerEvent& event : runtime->Poll()) {
      seen.worker_events.emplace_back(node, std::move(event));
    }
  }
  for (exec::Executor* executor : executors) {
    for (model::ExecutorEvent& event : executor->Poll()) {
      seen.executor_events.push_back(std::move(event));
    }
  }
  // Each job's inputs are looked for with its account's file permissions, so that a job learns
  // only what its account may see (not whether a path exists in a folder only root may enter);
  // the jobs of one account together. An account this machine does not know: as the server.
  std::map<std::pair<std::string, bool>, std::vector<control::Controller::InputCheck*>> accounts;
  for (control::Controller::InputCheck& check : to_check) {
    accounts[{check.run_as, check.may_run_as_root}].push_back(&check);
  }
  for (const auto& entry : accounts) {
    const std::vector<control::Controller::InputCheck*>& checks = entry.second;
    const auto look = [&] {
      for (control::Controller::InputCheck* check : checks) {
        std::vector<std::string> missing;
        for (std::string& path : check->paths) {
          if (!fs_.Stat(path)) missing.push_back(std::move(path));  // absent, or not to be seen
        }
        seen.inputs.emplace_back(check->job, std::move(missing));
      }
    };
    if (!AsJobAccount(fs_, entry.first.first, entry.first.second, "looks for job inputs", look)) {
      look();  // did not run
    }
  }
  if (!seen.policy_path.empty()) {
    Result<FileInfo> looked = fs_.Stat(seen.policy_path);
    if (looked) seen.policy_stamp = *looked;
    if (seen.policy_stamp != policy_seen) seen.policy_read = ReadPolicyFile(seen.policy_path);
  }
  return seen;
}

void ControlPlane::Absorb(Observation& seen, control::Step& step) {
  for (control::StopWorker& stop : std::exchange(pending_stops_, {})) {
    effects_.push_back(std::move(stop));
  }
  // A policy file replaced meanwhile (LoadPolicyFile) is the new one's business.
  if (seen.policy_read && seen.policy_path == policy_file_) {
    OnPolicyFileChanged(seen.policy_path, seen.policy_stamp, *std::move(seen.policy_read));
  }
  RunDueCrons();
  bool any = false;
  for (const auto& [id, missing] : seen.inputs) {
    controller_.OnInputsChecked(id, missing, clock_.Now(), step);  // ignored if not waiting now
    if (missing.empty()) any = true;
  }
  // A node speaks for its own workers only (as for their logs and usage): what an agent, broken
  // or hostile, reports of a worker placed elsewhere (started, exited with output values,
  // checkpointed) changes nothing, and is logged once per node and turn.
  std::map<NodeId, std::pair<int, model::WorkerKey>> foreign;  // node -> count, the first key
  for (const auto& [node, event] : seen.worker_events) {
    const model::Worker* worker = controller_.FindWorker(event.key);
    if (worker == nullptr) continue;  // no such worker: the controller would ignore it too
    if (worker->node != node) {
      auto& [count, first] = foreign[node];
      if (count++ == 0) first = event.key;
      continue;
    }
    if (OnRuntimeEvent(event, step)) any = true;
  }
  for (const auto& [node, ignored] : foreign) {
    spdlog::warn(
        "node {} reported {} event(s) of workers placed on other nodes (the first: worker {} of "
        "job {} attempt {}): ignored",
        node.value(), ignored.first, ignored.second.rank, ignored.second.job.value(),
        ignored.second.attempt);
  }
  for (const model::ExecutorEvent& event : seen.executor_events) {
    controller_.OnExecutorEvent(event, step);
    any = true;
  }
  if (CheckAgents(step)) any = true;
  // After the events: a replica that just ended is replaced in the same turn.
  ReconcileServices(step);
  if (any) schedule_requested_ = true;
}

void ControlPlane::Loop() {
  using Steady = std::chrono::steady_clock;
  Steady::time_point last_cycle_start{};
  Steady::time_point next_due{};           // the earliest start of the next cycle
  Steady::time_point next_policy_check{};  // the next look at the policy file
  Steady::time_point next_input_check{};   // the next look for waiting jobs' inputs
  while (true) {
    {
      MutexLock turn(turn_mu_);
      const bool check_policy = Steady::now() >= next_policy_check;
      const bool check_inputs = Steady::now() >= next_input_check;
      Observation seen = Gather(check_policy, check_inputs);
      if (check_policy) {
        next_policy_check =
            Steady::now() + std::chrono::milliseconds(options_.policy_check_interval_ms);
      }
      if (check_inputs) {
        next_input_check =
            Steady::now() + std::chrono::milliseconds(options_.input_check_interval_ms);
      }
      MutexLock lock(mu_);
      if (stopping_ || store_failed_) return;
      control::Step step;
      Absorb(seen, step);
      // A cycle costs time in proportion to the queue. One runs when something changed, but not
      // before the previous cycle's duration has passed again since it ended, so cycles take at
      // most half the time and a stream of submissions is decided in batches; and one runs every
      // idle_cycle_ms regardless (retry backoffs ending).
      Steady::time_point start = Steady::now();
      if ((schedule_requested_ && start >= next_due) ||
          start - last_cycle_start >= std::chrono::milliseconds(options_.idle_cycle_ms)) {
        schedule_requested_ = false;
        ScheduleCycle(step);
        Steady::time_point end = Steady::now();
        last_cycle_start = start;
        next_due = end + (end - start);
      }
      static_cast<void>(Commit(step));  // a failed write ends the loop (store_failed_)
      if (!store_failed_ &&
          clock_.Now() - fair_share_saved_at_ >= options_.fair_share_save_interval_ms) {
        SaveFairShare();
      }
    }
    CarryOutEffects(/*wait=*/false);
    MutexLock lock(mu_);
    if (stopping_ || store_failed_) return;
    // Effects queued since (an API call's) wake it, unless a runner at work takes them.
    auto effects_waiting = [this]()
                               REQUIRES(mu_) { return !effects_.empty() && !effects_running_; };
    if (schedule_requested_) {
      wake_loop_.wait_until(lock, next_due,
                            [&]() REQUIRES(mu_) { return stopping_ || effects_waiting(); });
    } else {
      Steady::time_point until =
          Steady::now() + std::chrono::milliseconds(options_.poll_interval_ms);
      if (!Polling()) {
        until =
            std::max(until, last_cycle_start + std::chrono::milliseconds(options_.idle_cycle_ms));
      }
      wake_loop_.wait_until(lock, until, [&]() REQUIRES(mu_) {
        return stopping_ || schedule_requested_ || effects_waiting();
      });
    }
  }
}

void ControlPlane::RequestSchedule() {
  schedule_requested_ = true;
  wake_loop_.notify_all();
}

bool ControlPlane::Polling() const {
  return !controller_.held().empty() || !services_.empty() || !pending_stops_.empty();
}

std::shared_ptr<agent::WorkerRuntime> ControlPlane::RuntimeOf(const NodeId& node) const {
  MutexLock lock(mu_);
  auto it = nodes_.find(node);
  return it == nodes_.end() ? nullptr : it->second.runtime;
}

exec::Executor* ControlPlane::ExecutorOf(model::ExecutorKind kind) const {
  MutexLock lock(mu_);
  auto it = executors_.find(kind);
  return it == executors_.end() ? nullptr : it->second.get();
}

std::string ControlPlane::PublicationRecordPath(JobId job, int attempt) const {
  if (options_.publications_dir.empty()) return "";
  return fmt::format("{}/job-{}.attempt-{}", options_.publications_dir, job.value(), attempt);
}

bool ControlPlane::OnRuntimeEvent(const model::WorkerEvent& event, control::Step& step) {
  if (event.kind != model::WorkerEvent::Kind::kCheckpoint) {
    controller_.OnWorkerEvent(event, step);
    return true;
  }
  // A checkpoint of an attempt that is over, or one already recorded (an adopted worker's
  // marker is reported again), changes nothing.
  const model::Job* job = controller_.Find(event.key.job);
  const model::Attempt* attempt = job != nullptr ? job->current_attempt() : nullptr;
  if (attempt == nullptr || attempt->number != event.key.attempt ||
      event.at <= attempt->last_checkpoint_at) {
    return false;
  }
  Status recorded = controller_.ReportCheckpoint(event.key.job, event.at, step);
  if (!recorded && recorded.error().code != ErrorCode::kNotFound &&
      recorded.error().code != ErrorCode::kFailedPrecondition) {
    spdlog::warn("checkpoint of job {} attempt {}: {}", event.key.job.value(), event.key.attempt,
                 recorded.error().ToString());
  }
  return false;
}

// Created by CarryOutEffects for one batch: its EffectSink methods run without plane_.mu_ (they
// touch only thread-safe collaborators: runtimes, executors, the file system, the clock, and the
// plane's look-ups that take the mutex themselves); Feed runs under it.
class ControlPlane::EffectRunner final : public control::EffectSink {
 public:
  explicit EffectRunner(ControlPlane& plane) : plane_(plane) {}

  void LaunchWorker(const control::LaunchWorker& launch) override {
    if (std::optional<model::WorkerEvent> failed = Launch(launch)) {
      feedback_.emplace_back(std::move(*failed));
    }
  }
  // Carries out `launches` (consecutive LaunchWorker effects of one batch: distinct workers,
  // independent of each other) on up to `threads` threads at once, this one among them, and
  // returns when all are done; failures are fed back in the order of `launches`, as if carried
  // out one after another.
  void LaunchAll(const std::vector<const control::LaunchWorker*>& launches, int threads) {
    std::vector<std::optional<model::WorkerEvent>> failures(launches.size());
    const os::ThreadsRun ran = os::RunOnThreads(
        launches.size(), threads, [&](std::size_t i) { failures[i] = Launch(*launches[i]); });
    if (ran.refused) {
      spdlog::warn("launches: the system would not start more threads; {} at once", ran.threads);
    }
    for (std::optional<model::WorkerEvent>& failed : failures) {
      if (failed) feedback_.emplace_back(std::move(*failed));
    }
  }
  void StopWorker(const control::StopWorker& stop) override {
    std::shared_ptr<agent::WorkerRuntime> runtime = plane_.RuntimeOf(stop.node);
    if (runtime == nullptr) return;
    model::StopRequest request;
    request.preempt = stop.preempt;
    request.reason = stop.reason;
    Status stopped = runtime->Stop(stop.key, request);
    // Not signallable yet (an adopted worker's supervisor still starting): the loop retries.
    if (!stopped && stopped.error().code == ErrorCode::kUnavailable) feedback_.emplace_back(stop);
  }
  void SetWorkerTimeout(const control::SetWorkerTimeout& change) override {
    std::shared_ptr<agent::WorkerRuntime> runtime = plane_.RuntimeOf(change.node);
    if (runtime == nullptr) return;
    Status changed = runtime->SetTimeout(change.key, change.timeout_ms);
    if (!changed) {
      spdlog::warn("timeout of job {} attempt {} rank {}: {}", change.key.job.value(),
                   change.key.attempt, change.key.rank, changed.error().ToString());
    }
  }
  void PublishOutputs(const control::PublishOutputs& publish) override {
    // The record in the server's own folder, as the server; the job's files as its account
    // (values the workers' nodes reported touch no file here, nor need the account, which this
    // machine may not know: agent::Publication).
    agent::Publication how;
    how.record_path = plane_.PublicationRecordPath(publish.job, publish.attempt);
    how.as_account = [&](const std::function<void()>& work) {
      return AsJobAccount(plane_.fs_, publish.run_as, publish.may_run_as_root,
                          "publishes job outputs", work);
    };
    Result<std::map<std::string, std::string>> published =
        agent::PublishOutputs(publish.outputs, publish.reported_values, plane_.fs_, how);
    feedback_.emplace_back(
        Published{publish.job, publish.attempt, std::move(published), plane_.clock_.Now()});
  }
  void ForgetPublication(const control::ForgetPublication& forget) override {
    const std::string record = plane_.PublicationRecordPath(forget.job, forget.attempt);
    if (record.empty()) return;
    if (Status removed = plane_.fs_.RemoveAll(record); !removed) {
      spdlog::warn("publication record {}: {}", record, removed.error().message);
    }
  }
  void DiscardOutputs(const control::DiscardOutputs& discard) override {
    Status as_account =
        AsJobAccount(plane_.fs_, discard.run_as, discard.may_run_as_root, "discards job outputs",
                     [&] { agent::DiscardStaging(discard.outputs, plane_.fs_); });
    if (!as_account) spdlog::warn("discarding outputs: {}", as_account.error().message);
  }
  void SubmitExternal(const control::SubmitExternal& submit) override {
    // The job's token as for a local launch (LaunchWorker): added by the driver alone. The
    // engine's script or pod spec holds it, which shows no more than it already does (the job's
    // env), and it acts for that job alone (docs/security.md, "Jobs' tokens").
    model::ExternalLaunch launch = submit.launch;
    launch.env.insert_or_assign("DROVER_TOKEN", plane_.tokens_.JobToken(launch.ref.job));
    exec::Executor* executor = plane_.ExecutorOf(launch.ref.executor);
    Status submitted =
        executor == nullptr
            ? FailedPrecondition(fmt::format("this server has no {} executor",
                                             model::ExecutorKindName(launch.ref.executor)))
            : executor->Submit(launch);
    if (submitted) return;
    model::ExecutorEvent refused;
    refused.ref = launch.ref;
    refused.kind = model::ExecutorEvent::Kind::kExited;
    refused.at = plane_.clock_.Now();
    refused.exit.message = submitted.error().message;
    feedback_.emplace_back(std::move(refused));
  }
  void CancelExternal(const control::CancelExternal& cancel) override {
    exec::Executor* executor = plane_.ExecutorOf(cancel.ref.executor);
    if (executor == nullptr) return;
    model::StopRequest request;
    request.reason = cancel.reason;
    Status cancelled = executor->Cancel(cancel.ref, request);
    if (!cancelled) spdlog::warn("cancel of {}: {}", cancel.ref.name, cancelled.error().ToString());
  }

  // Feeds what the batch's effects produced to the controller, in the order they produced it,
  // into `next`; asks for a scheduling cycle when that may have freed capacity or readied jobs.
  // `plane` is the runner's own (named here so that clang's analysis sees whose mutex is held).
  void Feed(ControlPlane& plane, control::Step& next) REQUIRES(plane.mu_) {
    for (Feedback& item : feedback_) std::visit(Feeder{plane, next}, item);
    feedback_.clear();
  }

 private:
  struct Published {
    JobId job;
    int attempt = 0;
    Result<std::map<std::string, std::string>> outputs;
    TimeMs at = 0;
  };
  // A launch that failed (its worker's exit), an executor's refusal, published outputs, or a
  // stop to retry.
  using Feedback =
      std::variant<model::WorkerEvent, model::ExecutorEvent, Published, control::StopWorker>;
  // One call operator per alternative of Feedback, each under the plane's mutex.
  struct Feeder {
    ControlPlane& plane;
    control::Step& next;
    void operator()(const model::WorkerEvent& failed) const REQUIRES(plane.mu_) {
      plane.controller_.OnWorkerEvent(failed, next);
      plane.RequestSchedule();
    }
    void operator()(const model::ExecutorEvent& refused) const REQUIRES(plane.mu_) {
      plane.controller_.OnExecutorEvent(refused, next);
      plane.RequestSchedule();
    }
    void operator()(const Published& published) const REQUIRES(plane.mu_) {
      plane.controller_.OnOutputsPublished(published.job, published.attempt, published.outputs,
                                           published.at, next);
      plane.RequestSchedule();
    }
    void operator()(control::StopWorker& stop) const REQUIRES(plane.mu_) {
      plane.pending_stops_.push_back(std::move(stop));
    }
  };

  // Launches the worker; its exit (exit code -1, "launch failed: ...") if that failed, nullopt
  // if it launched or had been launched before. Thread-safe (runtimes are).
  std::optional<model::WorkerEvent> Launch(const control::LaunchWorker& launch) const {
    std::shared_ptr<agent::WorkerRuntime> runtime = plane_.RuntimeOf(launch.spec.node);
    Result<model::LaunchSpec> spec = WithSecrets(launch);
    Status launched = OkStatus();
    if (!spec) {
      launched = tl::unexpected(spec.error());
    } else if (runtime == nullptr) {
      launched = Unavailable("node " + launch.spec.node.value() + " is gone");
    } else {
      // The job's own token is added here, by the driver, so that it is never in the
      // controller's state or the store (docs/security.md, "Jobs' tokens").
      spec->env.insert_or_assign("DROVER_TOKEN", plane_.tokens_.JobToken(spec->key.job));
      launched = runtime->Launch(*spec);
    }
    if (launched || launched.error().code == ErrorCode::kAlreadyExists) return std::nullopt;
    model::WorkerEvent failed;
    failed.key = launch.spec.key;
    failed.kind = model::WorkerEvent::Kind::kExited;
    failed.at = plane_.clock_.Now();
    failed.exit.exit_code = -1;
    failed.exit.message = "launch failed: " + launched.error().message;
    return failed;
  }

  // launch.spec with the values of launch.secret_env added to its env, read from the secret
  // store now. kNotFound naming the variable and the secret (never a value) when one is gone.
  Result<model::LaunchSpec> WithSecrets(const control::LaunchWorker& launch) const {
    if (launch.secret_env.empty()) return launch.spec;
    model::LaunchSpec spec = launch.spec;
    for (const auto& [var, name] : launch.secret_env) {
      Result<std::string> value =
          plane_.secrets_ == nullptr
              ? Result<std::string>(FailedPrecondition("this server keeps no secrets"))
              : plane_.secrets_->Get(launch.team, name);
      if (!value) {
        return MakeError(value.error().code,
                         fmt::format("secret_env.{}: {}", var, value.error().message));
      }
      spec.env[var] = std::move(*value);
    }
    return spec;
  }

  ControlPlane& plane_;
  std::vector<Feedback> feedback_;
};

Status ControlPlane::Commit(control::Step& step) {
  if (step.empty()) return OkStatus();
  if (store_failed_) return Unavailable("the store failed; this control plane has stopped");
  store::Batch batch;
  for (JobId id : step.changed.Sorted()) batch.jobs.push_back(*controller_.Find(id));
  for (const NodeId& node : step.nodes_changed) {
    batch.nodes.push_back(store::NodeAdminRecord{node, controller_.NodeAdminOf(node)});
  }
  batch.transitions = std::move(step.transitions);
  batch.decisions = std::move(step.decisions);
  if (!batch.empty()) {
    Status written = store_->Apply(batch);
    if (!written) {
      store_failed_ = true;  // nothing of this step, nor of any later one, is carried out
      options_.on_store_failure(written.error());  // by default, does not return
      wake_loop_.notify_all();
      changed_.notify_all();
      return Unavailable("the store failed; this control plane has stopped");
    }
    ++version_;
    changed_.notify_all();
    metrics_.ObserveTransitions(batch.transitions, controller_, clock_.Now());
    PublishEvents(batch);
  }
  if (!step.effects.empty()) {
    std::move(step.effects.begin(), step.effects.end(), std::back_inserter(effects_));
    wake_loop_.notify_all();
  }
  step = control::Step{};
  return OkStatus();
}

void ControlPlane::CarryOutEffects(bool wait) {
  MutexLock lock(mu_);
  if (effects_running_) {
    if (!wait) return;  // the runner at work takes what is queued before it stops
    effects_idle_.wait(lock, [this]() REQUIRES(mu_) { return !effects_running_; });
  }
  effects_running_ = true;
  // Once the store failed, what was queued before (persisted) still runs; nothing more is queued.
  while (!effects_.empty()) {
    std::vector<control::Effect> batch = std::exchange(effects_, {});
    EffectRunner runner(*this);
    lock.unlock();
    // In order, except that each run of consecutive launches is carried out in parallel (the
    // launches of one scheduling cycle): a stop or anything else queued after a launch still
    // waits for it.
    std::vector<const control::LaunchWorker*> launches;
    auto launch_all = [&] {
      runner.LaunchAll(launches, options_.max_parallel_launches);
      launches.clear();
    };
    for (const control::Effect& effect : batch) {
      if (const auto* launch = std::get_if<control::LaunchWorker>(&effect)) {
        launches.push_back(launch);
        continue;
      }
      launch_all();
      control::Dispatch(effect, runner);
    }
    launch_all();
    lock.lock();
    control::Step next;
    runner.Feed(*this, next);
    static_cast<void>(Commit(next));  // a failed write drops `next`'s effects (store_failed_)
  }
  effects_running_ = false;
  effects_idle_.notify_all();
}

void ControlPlane::CarryOutIfNoLoop() {
  {
    MutexLock lock(mu_);
    if (loop_started_) return;
  }
  CarryOutEffects(/*wait=*/false);
}

Status ControlPlane::PutSecret(const std::string& team, const std::string& name,
                               std::string_view value) {
  if (secrets_ == nullptr) return FailedPrecondition("this server keeps no secrets");
  return secrets_->Put(team, name, value);
}

Result<std::vector<api::SecretInfo>> ControlPlane::ListSecrets(const std::string& team) const {
  if (secrets_ == nullptr) return FailedPrecondition("this server keeps no secrets");
  return secrets_->List(team);
}

Status ControlPlane::DeleteSecret(const std::string& team, const std::string& name) {
  if (secrets_ == nullptr) return FailedPrecondition("this server keeps no secrets");
  return secrets_->Delete(team, name);
}

Status ControlPlane::CheckSecretEnv(const std::vector<model::JobSpec>& specs) const {
  for (const model::JobSpec& spec : specs) {
    if (spec.secret_env.empty()) continue;
    const model::ExecutorConfig executor = model::ExecutorOf(controller_.policy(), spec.queue);
    if (executor.kind == model::ExecutorKind::kSlurm) {
      return FailedPrecondition(fmt::format(
          "job {}: queue {} runs on Slurm, which cannot keep secret_env secret (slurmctld keeps a "
          "batch job's environment and script in its state, shown by scontrol write batch_script "
          "and, with AccountingStoreFlags=job_env, by sacct --env-vars); use a Kubernetes or "
          "local queue",
          spec.name, spec.queue));
    }
    for (const auto& [var, name] : spec.secret_env) {
      if (secrets_ == nullptr || !secrets_->Exists(spec.team, name)) {
        return InvalidArgument(fmt::format(
            "job {}: secret_env.{} names secret {}, which team {} does not have (drover secret "
            "set {} --team {} --from-file FILE)",
            spec.name, var, name, spec.team, name, spec.team));
      }
    }
  }
  return OkStatus();
}

Status ControlPlane::ClaimSpecs(std::vector<model::JobSpec>& specs,
                                const model::Identity& caller) const {
  for (model::JobSpec& spec : specs) {
    if (!spec.service.empty() || spec.service_generation != 0) {
      return InvalidArgument(fmt::format(
          "{}: service is set by the server on a service's replicas, not by a submission",
          spec.name));
    }
    if (spec.owner.empty()) spec.owner = caller.user;
    if (spec.team.empty()) spec.team = caller.team;
    const model::Resource queue{fmt::format("queue {}", spec.queue), spec.owner, spec.team,
                                spec.queue, std::nullopt};
    DROVER_RETURN_IF_ERROR(
        model::Decide(caller, model::Verb::kSubmit, queue, controller_.policy()));
  }
  return OkStatus();
}

Status ControlPlane::CheckUpstreamsVisible(const std::vector<model::JobSpec>& specs,
                                           const model::Identity& caller) const {
  for (const model::JobSpec& spec : specs) {
    for (std::size_t d = 0; d < spec.depends_on.size(); ++d) {
      const std::optional<JobId> id = model::DependencyJobId(spec.depends_on[d].name);
      const model::Job* upstream = id ? controller_.Find(*id) : nullptr;
      if (upstream != nullptr &&
          !model::Visible(caller, model::Verb::kView, model::ResourceOf(*upstream),
                          controller_.policy())) {
        return control::UnknownUpstream(spec.name, d, spec.depends_on[d].name);
      }
    }
  }
  return OkStatus();
}

Result<Submission> ControlPlane::Submit(std::string_view text, const spec::ParseOptions& options,
                                        const std::string& idempotency_key,
                                        const model::Identity& caller) {
  spec::ParseOptions bounded = options;
  bounded.limits = options_.spec_limits;
  DROVER_ASSIGN_OR_RETURN(std::vector<model::JobSpec> specs, spec::ParseJobs(text, bounded));
  const std::string digest =
      idempotency_key.empty() ? std::string() : spec::SubmissionDigest(text, options.after);
  Submission submission;
  DROVER_RETURN_IF_ERROR(Change([&](control::Step& step) REQUIRES(mu_) -> Status {
    DROVER_RETURN_IF_ERROR(ClaimSpecs(specs, caller));
    DROVER_RETURN_IF_ERROR(CheckUpstreamsVisible(specs, caller));
    DROVER_RETURN_IF_ERROR(CheckSecretEnv(specs));
    DROVER_ASSIGN_OR_RETURN(control::SubmitResult result,
                            controller_.Submit(std::move(specs), idempotency_key, caller.user,
                                               clock_.Now(), step, digest));
    submission.existing = result.existing;
    submission.jobs.reserve(result.ids.size());
    for (JobId id : result.ids) {
      const model::Job* job = controller_.Find(id);
      DROVER_CHECK(job != nullptr);
      submission.jobs.push_back(SubmittedJob{id, job->spec.name, job->state});
    }
    if (!result.existing) RequestSchedule();
    return OkStatus();
  }));
  return submission;
}

Status ControlPlane::Change(const std::function<Status(control::Step&)>& change) {
  {
    MutexLock lock(mu_);
    control::Step step;
    DROVER_RETURN_IF_ERROR(change(step));
    DROVER_RETURN_IF_ERROR(Commit(step));
  }
  CarryOutIfNoLoop();
  return OkStatus();
}

Status ControlPlane::Cancel(JobId id, std::string_view by, const std::string& cause) {
  return Change([&](control::Step& step) REQUIRES(mu_) -> Status {
    DROVER_RETURN_IF_ERROR(controller_.Cancel(id, by, cause, clock_.Now(), step));
    RequestSchedule();
    return OkStatus();
  });
}

Status ControlPlane::CancelPipeline(JobId run, std::string_view by, const std::string& cause) {
  return Change([&](control::Step& step) REQUIRES(mu_) -> Status {
    DROVER_RETURN_IF_ERROR(controller_.CancelPipeline(run, by, cause, clock_.Now(), step));
    RequestSchedule();
    return OkStatus();
  });
}

Result<model::Job> ControlPlane::ApplyJobVerb(JobId id, const JobVerb& verb,
                                              const std::string& actor) {
  model::Job left;
  DROVER_RETURN_IF_ERROR(Change([&](control::Step& step) REQUIRES(mu_) -> Status {
    const TimeMs now = clock_.Now();
    switch (verb.kind) {
      case JobVerb::Kind::kHold:
        DROVER_RETURN_IF_ERROR(controller_.HoldJob(id, actor, verb.reason, now, step));
        break;
      case JobVerb::Kind::kRelease:
        DROVER_RETURN_IF_ERROR(controller_.ReleaseJob(id, actor, now, step));
        break;
      case JobVerb::Kind::kUpdate:
        DROVER_RETURN_IF_ERROR(controller_.UpdateJob(id, verb.update, actor, now, step));
        break;
      case JobVerb::Kind::kRequeue:
        DROVER_RETURN_IF_ERROR(controller_.RequeueJob(id, actor, verb.reason, now, step));
        break;
    }
    RequestSchedule();
    left = *controller_.Find(id);
    return OkStatus();
  }));
  return left;
}

Result<model::Job> ControlPlane::GetJob(JobId id) const {
  MutexLock lock(mu_);
  const model::Job* job = controller_.Find(id);
  if (!job) return NotFound(fmt::format("job {} does not exist", id.value()));
  return *job;
}

std::vector<model::Job> ControlPlane::ListJobs(const store::JobFilter& filter) const {
  MutexLock lock(mu_);
  std::vector<model::Job> out;
  if (filter.limit > 0) {
    // The newest `limit` matches, newest first.
    for (auto it = controller_.jobs().rbegin(); it != controller_.jobs().rend(); ++it) {
      if (static_cast<int>(out.size()) >= filter.limit) break;
      if (store::Matches(filter, it->second)) out.push_back(it->second);
    }
    return out;
  }
  for (const auto& [id, job] : controller_.jobs()) {
    if (store::Matches(filter, job)) out.push_back(job);
  }
  return out;
}

api::JobPage ControlPlane::ListJobPage(const api::JobPageRequest& request) const {
  MutexLock lock(mu_);
  return api::SelectJobPage(controller_.jobs(), request,
                            [this](JobId id) REQUIRES(mu_) { return controller_.PositionOf(id); });
}

Result<std::vector<model::Job>> ControlPlane::PipelineRun(JobId run) const {
  MutexLock lock(mu_);
  std::vector<model::Job> out;
  for (const model::Job* job : controller_.RunJobs(run)) out.push_back(*job);
  if (out.empty()) return NotFound(fmt::format("pipeline run {} does not exist", run.value()));
  return out;
}

std::vector<std::vector<model::Job>> ControlPlane::PipelineRuns() const {
  MutexLock lock(mu_);
  std::vector<std::vector<model::Job>> runs;
  for (const auto& [id, job] : controller_.jobs()) {
    if (job.pipeline_run == JobId()) continue;
    // A run's jobs have consecutive ids, starting at the run's.
    if (job.pipeline_run == id) {
      runs.emplace_back();
    } else if (runs.empty() || runs.back().front().pipeline_run != job.pipeline_run) {
      continue;
    }
    runs.back().push_back(job);
  }
  return runs;
}

Result<std::vector<model::Transition>> ControlPlane::Transitions(JobId id) const {
  {
    MutexLock lock(mu_);
    if (!controller_.Find(id)) return NotFound(fmt::format("job {} does not exist", id.value()));
  }
  return store_->ListTransitions(id);
}

Result<control::Explanation> ControlPlane::Explain(JobId id) const {
  MutexLock lock(mu_);
  return controller_.Explain(id, clock_.Now());
}

Status ControlPlane::ReportCheckpoint(JobId id, TimeMs* at) {
  const TimeMs now = clock_.Now();
  DROVER_RETURN_IF_ERROR(Change([&](control::Step& step) REQUIRES(mu_) {
    return controller_.ReportCheckpoint(id, now, step);
  }));
  if (at != nullptr) *at = now;
  return OkStatus();
}

Result<model::Attempt> ControlPlane::ReportProgress(JobId id, const model::ProgressReport& report) {
  model::Attempt attempt;
  DROVER_RETURN_IF_ERROR(Change([&](control::Step& step) REQUIRES(mu_) -> Status {
    DROVER_RETURN_IF_ERROR(controller_.ReportProgress(id, report, clock_.Now(), step));
    attempt = *controller_.Find(id)->current_attempt();
    return OkStatus();
  }));
  return attempt;
}

Result<std::vector<model::Decision>> ControlPlane::Decisions(JobId id) const {
  {
    MutexLock lock(mu_);
    if (!controller_.Find(id)) return NotFound(fmt::format("job {} does not exist", id.value()));
  }
  return store_->ListDecisions(id);
}

std::vector<control::QueueReport> ControlPlane::Queues() const {
  MutexLock lock(mu_);
  return controller_.Queues(clock_.Now());
}

std::uint64_t ControlPlane::version() const {
  MutexLock lock(mu_);
  return version_;
}

std::uint64_t ControlPlane::WaitForChange(std::uint64_t seen, DurationMs timeout_ms) const {
  MutexLock lock(mu_);
  changed_.wait_for(lock, std::chrono::milliseconds(timeout_ms),
                    [this, seen]() REQUIRES(mu_) { return stopping_ || version_ > seen; });
  return version_;
}

}  // namespace drover::server
