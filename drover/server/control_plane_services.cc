// ControlPlane's services (control_plane.h, docs/inference.md): registration, the replica loop
// (autoscaler, then the replica plan of control/service_reconciler.h carried out through the
// controller), the probes' results and the views.
//
// A replica is an ordinary job submitted through Controller::Submit under the service's owner:
// quotas, fair share, placement and preemption treat it as any job. Protected replicas (the
// first replicas.min) are submitted not interruptible, so the engine never picks them as
// victims; the rest interruptible. A replica's end (exit, failed liveness, cancel) is seen by
// the next turn of the loop, which starts its replacement.

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <charconv>

#include "drover/api/service_handlers.h"
#include "drover/common/prometheus.h"
#include "drover/control/service_reconciler.h"
#include "drover/model/access.h"
#include "drover/server/control_plane.h"

namespace drover::server {
namespace {

constexpr char kPortVariable[] = "DROVER_PORT";

// kInvalidArgument naming the first rule `spec` breaks that the JSON decoder does not check.
Status ValidateService(const model::ServiceSpec& spec) {
  if (spec.name.empty() || spec.name.size() > 63 ||
      spec.name.find_first_not_of("abcdefghijklmnopqrstuvwxyz0123456789._-") != std::string::npos ||
      spec.name.front() == '.' || spec.name.front() == '_' || spec.name.front() == '-') {
    return InvalidArgument(fmt::format(
        "name: '{}' is not a service name (1 to 63 of a-z, 0-9, '.', '_', '-', starting with a "
        "letter or digit)",
        spec.name));
  }
  if (spec.models.empty()) return InvalidArgument("models: must name at least one model");
  for (std::size_t i = 0; i < spec.models.size(); ++i) {
    const std::string& m = spec.models[i];
    if (m.empty() || m.size() > 256 || m.find_first_of(" \t\r\n") != std::string::npos) {
      return InvalidArgument(fmt::format("models[{}]: 1 to 256 characters, no spaces", i));
    }
  }
  if (spec.max_replicas < 1 || spec.max_replicas > model::kMaxReplicas) {
    return InvalidArgument(
        fmt::format("max_replicas: must be between 1 and {}", model::kMaxReplicas));
  }
  if (spec.min_replicas < 0 || spec.min_replicas > spec.max_replicas) {
    return InvalidArgument("min_replicas: must be between 0 and max_replicas");
  }
  const model::JobSpec& r = spec.replica;
  if (r.command.empty() == r.script.empty()) {
    return InvalidArgument("replica: exactly one of command or script");
  }
  if (r.workers != 1 || r.min_workers > 1) return InvalidArgument("replica.workers: must be 1");
  if (r.timeout) return InvalidArgument("replica.timeout_ms: a replica runs until stopped");
  if (!r.depends_on.empty() || !r.inputs.empty() || !r.outputs.empty() || !r.run_if.empty()) {
    return InvalidArgument("replica: a replica has no depends_on, inputs, outputs or run_if");
  }
  if (!r.service.empty() || r.service_generation != 0) {
    return InvalidArgument("replica.service: set by the server on each replica");
  }
  if (r.env.contains(kPortVariable)) {
    return InvalidArgument("replica.env.DROVER_PORT: set by the server on each replica");
  }
  for (const auto& [field, probe] :
       {std::pair{"readiness", &spec.readiness}, std::pair{"liveness", &spec.liveness}}) {
    if (!*probe) continue;
    const model::ProbeSpec& p = **probe;
    if (p.path.empty() || p.path.front() != '/' || p.path.size() > 1024 ||
        p.path.find_first_of(" \t\r\n") != std::string::npos) {
      return InvalidArgument(fmt::format("{}.path: an HTTP path starting with '/'", field));
    }
    if (p.interval_ms <= 0 || p.timeout_ms <= 0 || p.initial_delay_ms < 0 ||
        p.timeout_ms > kMillisPerMinute) {
      return InvalidArgument(
          fmt::format("{}: interval_ms and timeout_ms (at most a minute) must be positive, "
                      "initial_delay_ms not negative",
                      field));
    }
    if (p.failure_threshold < 1 || p.failure_threshold > 100) {
      return InvalidArgument(fmt::format("{}.failure_threshold: must be between 1 and 100", field));
    }
  }
  const model::AutoscalingSpec& a = spec.autoscaling;
  if (a.target_in_flight_per_replica < 0 || a.scale_up_delay_ms < 0 || a.scale_down_delay_ms < 0) {
    return InvalidArgument("autoscaling: target and delays must not be negative");
  }
  if (a.scale_to_zero_after_ms < 0 || a.scale_to_zero_after_ms > kMillisPerDay) {
    return InvalidArgument("autoscaling.scale_to_zero_after_ms: must be between 0 and a day");
  }
  if (const std::optional<model::SaturationSpec>& s = a.saturation) {
    if (!prometheus::IsMetricName(s->metric)) {
      return InvalidArgument(
          fmt::format("autoscaling.saturation.metric: a Prometheus metric name ({})",
                      prometheus::kMetricNameRule));
    }
    if (!(s->target_per_replica > 0 && s->target_per_replica <= 1e6)) {
      return InvalidArgument(
          "autoscaling.saturation.target_per_replica: must be above 0 and at most 1000000");
    }
    if (s->path.empty() || s->path.front() != '/' || s->path.size() > 1024 ||
        s->path.find_first_of(" \t\r\n") != std::string::npos) {
      return InvalidArgument("autoscaling.saturation.path: an HTTP path starting with '/'");
    }
    if (s->interval_ms < 100 || s->interval_ms > kMillisPerHour) {
      return InvalidArgument("autoscaling.saturation.interval_ms: between 100 and 3600000");
    }
    if (s->timeout_ms < 1 || s->timeout_ms > kMillisPerMinute) {
      return InvalidArgument("autoscaling.saturation.timeout_ms: between 1 and 60000");
    }
  }
  return OkStatus();
}

}  // namespace

DurationMs RestartBackoff(int early_failures) {
  if (early_failures <= 0) return 0;
  return std::min<DurationMs>(kMillisPerMinute,
                              kMillisPerSecond << std::min(early_failures - 1, 6));
}

bool Draining(const model::Job& job) {
  const model::Attempt* attempt = job.current_attempt();
  return !model::IsTerminal(job.state) && attempt != nullptr && attempt->outcome.has_value();
}

std::optional<double> SaturationOf(const ServiceEntry& entry, TimeMs now) {
  const std::optional<model::SaturationSpec>& spec = entry.record.spec.autoscaling.saturation;
  if (!spec) return std::nullopt;
  const DurationMs recent = std::max(3 * spec->interval_ms, sched::kLoadSignalStaleMs);
  std::optional<double> sum;
  for (const auto& [id, health] : entry.health) {
    if (!health.ready || entry.stopping.contains(id) || health.saturation_at == 0 ||
        now - health.saturation_at > recent) {
      continue;
    }
    sum = sum.value_or(0) + health.saturation;
  }
  return sum;
}

int ReplicaPort(const model::JobSpec& spec) {
  auto it = spec.env.find(kPortVariable);
  if (it == spec.env.end()) return 0;
  int port = 0;
  std::from_chars(it->second.data(), it->second.data() + it->second.size(), port);
  return port;
}

Result<api::ServiceStatus> ControlPlane::PutService(model::ServiceSpec spec,
                                                    const model::Identity& caller) {
  DROVER_RETURN_IF_ERROR(ValidateService(spec));
  api::ServiceStatus status;
  DROVER_RETURN_IF_ERROR(Change([&](control::Step& step) REQUIRES(mu_) -> Status {
    std::vector<model::JobSpec> claimed = {spec.replica};
    claimed.front().name = spec.name;
    DROVER_RETURN_IF_ERROR(ClaimSpecs(claimed, caller));
    DROVER_RETURN_IF_ERROR(CheckSecretEnv(claimed));
    spec.replica = std::move(claimed.front());
    const TimeMs now = clock_.Now();
    ServiceEntry entry;
    auto it = services_.find(spec.name);
    if (it != services_.end()) {
      DROVER_RETURN_IF_ERROR(model::Decide(caller, model::Verb::kCancel,
                                           api::ServiceResource(it->second.record),
                                           controller_.policy()));
      entry = it->second;
      if (entry.record.spec.replica != spec.replica) ++entry.record.generation;
    } else {
      entry.record.created_at = now;
      entry.record.generation = 1;
      entry.record.desired = spec.min_replicas;
    }
    entry.record.owner = spec.replica.owner;
    entry.record.team = spec.replica.team;
    entry.record.updated_at = now;
    entry.record.desired = std::clamp(entry.record.desired, spec.min_replicas, spec.max_replicas);
    entry.record.spec = std::move(spec);
    DROVER_RETURN_IF_ERROR(store_->PutService(entry.record));
    ServiceEntry& stored = services_.insert_or_assign(entry.record.spec.name, entry).first->second;
    std::set<int> ports = PortsInUse();
    ReconcileService(stored, ports, step);
    status = StatusOf(stored);
    return OkStatus();
  }));
  return status;
}

Status ControlPlane::DeleteService(const std::string& name, const model::Identity& caller) {
  return Change([&](control::Step& step) REQUIRES(mu_) -> Status {
    auto it = services_.find(name);
    if (it == services_.end()) return NotFound(fmt::format("service {} does not exist", name));
    DROVER_RETURN_IF_ERROR(store_->DeleteService(name));
    const std::string cause =
        fmt::format("service {} deleted by {}", name, model::Describe(caller));
    for (JobId id : it->second.replicas) {
      const model::Job* job = controller_.Find(id);
      if (job == nullptr || model::IsTerminal(job->state)) continue;
      Status cancelled = controller_.Cancel(id, caller.user, cause, clock_.Now(), step);
      if (!cancelled) {
        spdlog::warn("service {}: cannot stop replica {}: {}", name, id.value(),
                     cancelled.error().ToString());
      }
    }
    services_.erase(it);
    RequestSchedule();
    return OkStatus();
  });
}

std::vector<api::ServiceStatus> ControlPlane::Services() const {
  MutexLock lock(mu_);
  std::vector<api::ServiceStatus> out;
  for (const auto& [name, entry] : services_) out.push_back(StatusOf(entry));
  return out;
}

Status ControlPlane::ReportServiceLoad(const std::string& name, model::LoadSignal signal) {
  MutexLock lock(mu_);
  auto it = services_.find(name);
  if (it == services_.end()) return NotFound(fmt::format("service {} does not exist", name));
  signal.received_at = clock_.Now();
  it->second.load = signal;
  wake_loop_.notify_all();
  return OkStatus();
}

std::optional<ControlPlane::ReplicaAddress> ControlPlane::AddressOf(const model::Job& job) const {
  const model::Attempt* attempt = job.current_attempt();
  if (attempt == nullptr || attempt->workers.empty()) return std::nullopt;
  const NodeId& node = attempt->workers.front().node;
  auto it = controller_.nodes().find(node);
  if (it == controller_.nodes().end()) return std::nullopt;
  return ReplicaAddress{node.value(), it->second.address, ReplicaPort(job.spec)};
}

api::ServiceStatus ControlPlane::StatusOf(const ServiceEntry& entry) const {
  api::ServiceStatus status;
  status.record = entry.record;
  status.load = entry.load;
  status.last_scaling = entry.last_scaling;
  status.last_scaling_at = entry.last_scaling_at;
  status.blocked = entry.blocked;
  for (JobId id : entry.replicas) {
    const model::Job* job = controller_.Find(id);
    if (job == nullptr || model::IsTerminal(job->state) || entry.stopping.contains(id)) continue;
    api::ServiceEndpoint endpoint;
    endpoint.job = id;
    endpoint.state = job->state;
    endpoint.port = ReplicaPort(job->spec);
    endpoint.generation = job->spec.service_generation;
    endpoint.is_protected = !job->spec.interruptible;
    if (auto health = entry.health.find(id); health != entry.health.end()) {
      endpoint.ready = health->second.ready && !Draining(*job);
      endpoint.since = health->second.since;
    }
    if (auto address = AddressOf(*job); address && job->state == model::JobState::kRunning) {
      endpoint.node = address->node;
      endpoint.url = fmt::format("http://{}:{}", address->host, address->port);
    }
    status.endpoints.push_back(std::move(endpoint));
  }
  return status;
}

std::set<int> ControlPlane::PortsInUse() const {
  std::set<int> ports;
  for (const auto& [name, entry] : services_) {
    for (JobId id : entry.replicas) {
      const model::Job* job = controller_.Find(id);
      if (job != nullptr && !model::IsTerminal(job->state)) ports.insert(ReplicaPort(job->spec));
    }
  }
  return ports;
}

void ControlPlane::ReconcileServices(control::Step& step) {
  if (services_.empty() || store_failed_) return;
  std::set<int> ports = PortsInUse();
  for (auto& [name, entry] : services_) ReconcileService(entry, ports, step);
}

void ControlPlane::ReconcileService(ServiceEntry& entry, std::set<int>& ports,
                                    control::Step& step) {
  const TimeMs now = clock_.Now();
  const model::ServiceSpec& spec = entry.record.spec;
  // Forget the replicas that ended; a running one without a readiness probe is ready.
  std::vector<control::ReplicaView> live;
  for (auto it = entry.replicas.begin(); it != entry.replicas.end();) {
    const model::Job* job = controller_.Find(*it);
    if (job == nullptr || model::IsTerminal(job->state)) {
      const ReplicaHealth& ended = entry.health[*it];
      if (!entry.stopping.contains(*it) && !ended.was_ready) {
        ++entry.early_failures;
        entry.restart_not_before = now + RestartBackoff(entry.early_failures);
      }
      entry.stopping.erase(*it);
      entry.health.erase(*it);
      it = entry.replicas.erase(it);
      continue;
    }
    ReplicaHealth& health = entry.health[*it];
    const bool running = job->state == model::JobState::kRunning;
    const bool draining = running && Draining(*job);
    const bool ready = running && !draining && (spec.readiness ? health.ready : true);
    if (ready && !health.was_ready) {
      health.was_ready = true;
      entry.early_failures = 0;
    }
    if (ready != health.ready) {
      health.ready = ready;
      health.since = now;
      if (!spec.readiness || !running || draining) {
        const std::string cause =
            ready      ? "ready: running (no readiness probe)"
            : draining ? fmt::format(
                             "not ready: draining ({}); in-flight requests finish within "
                             "the kill grace",
                             job->current_attempt()->outcome_reason)
                       : "not ready: not running";
        step.transitions.push_back(model::Transition{
            *it, job->current_attempt() ? job->current_attempt()->number : 0, job->state,
            job->state, now, cause, std::string(model::kSystemActor)});
      }
    }
    if (!entry.stopping.contains(*it)) {
      live.push_back(control::ReplicaView{*it, job->spec.service_generation,
                                          !job->spec.interruptible, health.ready});
    }
    ++it;
  }

  sched::AutoscaleDecision scaled = sched::Autoscale(sched::AutoscaleInput{
      entry.record.desired, spec.min_replicas, spec.max_replicas, spec.autoscaling, entry.load,
      SaturationOf(entry, now), entry.autoscale, now});
  entry.autoscale = scaled.state;
  if (scaled.changed) {
    entry.record.desired = scaled.desired;
    entry.record.updated_at = now;
    entry.last_scaling = scaled.reason;
    entry.last_scaling_at = now;
    spdlog::info("service {}: {}", spec.name, scaled.reason);
    if (Status stored = store_->PutService(entry.record); !stored) {
      spdlog::error("service {}: cannot store the desired count: {}", spec.name,
                    stored.error().ToString());
    }
  }

  control::ReconcilePlan plan = control::Reconcile(
      control::ReconcileInput{entry.record.generation, entry.record.desired, spec.min_replicas,
                              live, ports, options_.service_port_from, options_.service_port_to});
  entry.blocked = plan.blocked;
  auto decide = [&](JobId id, int attempt) {
    if (!scaled.changed) return;
    model::Decision decision;
    decision.job = id;
    decision.attempt = attempt;
    decision.at = now;
    decision.kind = model::Decision::Kind::kScaled;
    decision.queue = spec.replica.queue;
    decision.summary = fmt::format("service {}: {}", spec.name, scaled.reason);
    step.decisions.push_back(std::move(decision));
  };
  for (JobId id : plan.stop) {
    const model::Job* job = controller_.Find(id);
    const bool old = job != nullptr && job->spec.service_generation < entry.record.generation;
    const std::string cause =
        old ? fmt::format("service {}: replaced by a replica of generation {}", spec.name,
                          entry.record.generation)
            : fmt::format("service {}: scaled down to {}", spec.name, entry.record.desired);
    if (Status cancelled = controller_.Cancel(id, model::kSystemActor, cause, now, step);
        !cancelled) {
      spdlog::warn("service {}: cannot stop replica {}: {}", spec.name, id.value(),
                   cancelled.error().ToString());
      continue;
    }
    entry.stopping.insert(id);
    decide(id, job && job->current_attempt() ? job->current_attempt()->number : 0);
  }
  if (!plan.start.empty() && now < entry.restart_not_before) {
    entry.blocked =
        fmt::format("{} replica(s) in a row ended before they were ready: the next starts in {} ms",
                    entry.early_failures, entry.restart_not_before - now);
    plan.start.clear();
  }
  for (const control::ReplicaStart& start : plan.start) {
    model::JobSpec replica = spec.replica;
    replica.service = spec.name;
    replica.service_generation = entry.record.generation;
    replica.interruptible = !start.is_protected;
    replica.env[kPortVariable] = std::to_string(start.port);
    replica.env["DROVER_SERVICE"] = spec.name;
    Result<control::SubmitResult> submitted =
        controller_.Submit({std::move(replica)}, "", entry.record.owner, now, step);
    if (!submitted) {
      entry.blocked = submitted.error().message;
      break;
    }
    for (JobId id : submitted->ids) {
      entry.replicas.insert(id);
      entry.health[id].since = now;
      ports.insert(start.port);
      decide(id, 0);
    }
    RequestSchedule();
  }
}

std::vector<ProbeTarget> ControlPlane::DueProbes() {
  MutexLock lock(mu_);
  const TimeMs now = clock_.Now();
  std::vector<ProbeTarget> due;
  for (auto& [name, entry] : services_) {
    const model::ServiceSpec& spec = entry.record.spec;
    const std::optional<model::SaturationSpec>& saturation = spec.autoscaling.saturation;
    if (!spec.readiness && !spec.liveness && !saturation) continue;
    for (JobId id : entry.replicas) {
      const model::Job* job = controller_.Find(id);
      if (job == nullptr || job->state != model::JobState::kRunning ||
          entry.stopping.contains(id) || Draining(*job)) {
        continue;
      }
      const std::optional<ReplicaAddress> address = AddressOf(*job);
      if (!address || address->port == 0) continue;
      const TimeMs running_at = job->current_attempt()->running_at;
      ReplicaHealth& health = entry.health[id];
      for (const auto& [probe, kind, next] :
           {std::tuple{&spec.readiness, ProbeKind::kReadiness, &health.next_readiness},
            std::tuple{&spec.liveness, ProbeKind::kLiveness, &health.next_liveness}}) {
        if (!*probe || now < running_at + (*probe)->initial_delay_ms || now < *next) continue;
        *next = now + (*probe)->interval_ms;
        due.push_back(ProbeTarget{id, kind, address->host, address->port, (*probe)->path,
                                  (*probe)->timeout_ms, ""});
      }
      // The saturation gauge is scraped from ready replicas only: one still loading its model
      // has an empty queue that says nothing about load.
      if (saturation && health.ready && now >= health.next_saturation) {
        health.next_saturation = now + saturation->interval_ms;
        due.push_back(ProbeTarget{id, ProbeKind::kSaturation, address->host, address->port,
                                  saturation->path, saturation->timeout_ms, saturation->metric});
      }
    }
  }
  return due;
}

void ControlPlane::OnProbeResults(std::vector<ProbeResult> results) {
  {
    MutexLock lock(mu_);
    if (store_failed_ || stopping_) return;
    const TimeMs now = clock_.Now();
    control::Step step;
    for (const ProbeResult& result : results) {
      const model::Job* job = controller_.Find(result.target.job);
      if (job == nullptr || job->state != model::JobState::kRunning || Draining(*job)) continue;
      auto entry_it = services_.find(job->spec.service);
      if (entry_it == services_.end()) continue;
      ServiceEntry& entry = entry_it->second;
      if (!entry.replicas.contains(job->id) || entry.stopping.contains(job->id)) continue;
      const model::ServiceSpec& spec = entry.record.spec;
      ReplicaHealth& health = entry.health[job->id];
      if (result.target.kind == ProbeKind::kSaturation) {
        // A failed scrape keeps the last value, which ages out of SaturationOf.
        if (result.ok) {
          health.saturation = result.value;
          health.saturation_at = now;
        }
        continue;
      }
      health.last_outcome = result.outcome;
      const int attempt = job->current_attempt()->number;
      auto record = [&](std::string cause) {
        step.transitions.push_back(model::Transition{job->id, attempt, job->state, job->state, now,
                                                     std::move(cause),
                                                     std::string(model::kSystemActor)});
      };
      if (result.target.kind == ProbeKind::kReadiness && spec.readiness) {
        if (result.ok) {
          health.readiness_failures = 0;
          if (!health.ready) {
            health.ready = true;
            health.was_ready = true;
            entry.early_failures = 0;
            health.since = now;
            record(fmt::format("ready: GET {} answered {}", spec.readiness->path, result.outcome));
          }
        } else if (++health.readiness_failures >= spec.readiness->failure_threshold &&
                   health.ready) {
          health.ready = false;
          health.since = now;
          record(fmt::format("not ready: GET {} failed {} times in a row ({})",
                             spec.readiness->path, health.readiness_failures, result.outcome));
        }
      } else if (result.target.kind == ProbeKind::kLiveness && spec.liveness) {
        if (result.ok) {
          health.liveness_failures = 0;
        } else if (++health.liveness_failures >= spec.liveness->failure_threshold) {
          const std::string cause =
              fmt::format("service {}: liveness probe GET {} failed {} times in a row ({})",
                          spec.name, spec.liveness->path, health.liveness_failures, result.outcome);
          if (controller_.Cancel(job->id, model::kSystemActor, cause, now, step)) {
            entry.stopping.insert(job->id);
            health.ready = false;
            spdlog::warn("{}: replica {} stopped", cause, job->id.value());
          }
        }
      }
    }
    if (!step.empty()) {
      static_cast<void>(Commit(step));
      RequestSchedule();
    }
  }
  CarryOutIfNoLoop();
}

Status ControlPlane::RestoreServices() {
  DROVER_ASSIGN_OR_RETURN(std::vector<store::ServiceRecord> stored, store_->ListServices());
  for (store::ServiceRecord& record : stored) {
    const std::string name = record.spec.name;
    services_[name].record = std::move(record);
  }
  if (services_.empty()) return OkStatus();
  const TimeMs now = clock_.Now();
  for (const auto& [id, job] : controller_.jobs()) {
    if (job.spec.service.empty() || model::IsTerminal(job.state)) continue;
    auto it = services_.find(job.spec.service);
    // A replica must carry the service's owner: a job that only names the service is not one.
    if (it == services_.end() || it->second.record.owner != job.spec.owner) continue;
    it->second.replicas.insert(id);
    it->second.health[id].since = now;
  }
  return OkStatus();
}

}  // namespace drover::server
