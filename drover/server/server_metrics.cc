#include "drover/server/server_metrics.h"

#include <utility>

#include "drover/common/clock.h"
#include "drover/model/metrics.h"

namespace drover::server {
namespace {

using prometheus::Labels;
using Samples = std::vector<std::pair<Labels, double>>;

// An attempt in one of these states holds resources (or, admitted, is about to).
bool Holding(model::JobState state) {
  return state == model::JobState::kAdmitted || state == model::JobState::kPlaced ||
         state == model::JobState::kStarting || state == model::JobState::kRunning;
}

const model::Attempt* AttemptOf(const model::Job& job, int number) {
  for (const model::Attempt& attempt : job.attempts) {
    if (attempt.number == number) return &attempt;
  }
  return nullptr;
}

double Seconds(DurationMs ms) { return static_cast<double>(ms) / kMillisPerSecond; }

// Kueue's eviction reasons where Drover has the same cause; "" for a disruption that is no
// eviction (a timeout, a cancel, an OOM kill, a requeue end the attempt by its own fault or its
// user's). Every value listed, so that a new one is a compile warning here.
std::string_view EvictionReason(model::Disruption disruption) {
  switch (disruption) {
    case model::Disruption::kPreemption:
      return "Preempted";
    case model::Disruption::kNodeLost:
      return "NodeFailures";
    case model::Disruption::kNodeDrain:
      return "NodeDrain";
    case model::Disruption::kNone:
    case model::Disruption::kTimeout:
    case model::Disruption::kUserCancel:
    case model::Disruption::kOomKilled:
    case model::Disruption::kUserRequeue:
      return "";
  }
  return "";
}

// What an ended attempt's GPU time is filed under: "preempted", the state it ended in
// ("succeeded", "failed", "timed_out", "cancelled"), or "retried" for a failure that was retried.
std::string OutcomeOf(const model::Attempt& attempt) {
  if (model::WasPreempted(attempt)) return "preempted";
  if (!attempt.outcome || *attempt.outcome == model::JobState::kReady) return "retried";
  return std::string(model::kJobStateNames.Name(*attempt.outcome));
}

// A quota resource name ("cpu", "memory", "gpu", "gpu:<model>") as Kueue's resource and flavor
// labels, and its amount in the unit a dashboard reads (cores, bytes, GPUs).
struct ResourceLabels {
  std::string resource;
  std::string flavor;
  double scale = 1;
};
ResourceLabels LabelsOf(const std::string& name) {
  if (name == "cpu") return {"cpu", "any", 1.0 / 1000};
  if (name == "memory") return {"memory", "any", 1};
  if (name == "gpu") return {"gpu", "any", 1.0 / 1000};
  if (name.starts_with("gpu:")) return {"gpu", name.substr(4), 1.0 / 1000};
  return {name, "any", 1};
}

std::string CohortOf(const std::string& path) {
  const auto slash = path.rfind('/');
  return slash == std::string::npos ? "" : path.substr(0, slash);
}

}  // namespace

ServerMetrics::ServerMetrics()
    : admitted_("drover_admitted_workloads_total",
                "Jobs admitted (an attempt passed admission), per cluster_queue (leaf queue). "
                "Kueue: kueue_admitted_workloads_total.",
                {"cluster_queue"}),
      admission_wait_(
          "drover_admission_wait_time_seconds",
          "Time from an attempt entering its queue (ready) to its admission, per cluster_queue. "
          "Kueue: kueue_admission_wait_time_seconds, same buckets.",
          {"cluster_queue"}, prometheus::KueueExponentialBuckets(16)),
      evicted_("drover_evicted_workloads_total",
               "Attempts ended by the cluster rather than the job: reason Preempted, NodeFailures "
               "(its node was lost) or NodeDrain, per cluster_queue. Kueue: "
               "kueue_evicted_workloads_total.",
               {"cluster_queue", "reason"}),
      preempted_("drover_preempted_workloads_total",
                 "Attempts preempted, per queue of the job that preempted them "
                 "(preempting_cluster_queue) and reason: InClusterQueue (same queue) or "
                 "InCohortReclamation (another). Kueue: kueue_preempted_workloads_total.",
                 {"preempting_cluster_queue", "reason"}),
      finished_("drover_finished_workloads_total",
                "Jobs that reached a terminal state, per cluster_queue and state. Kueue: "
                "kueue_finished_workloads_total (without state).",
                {"cluster_queue", "state"}),
      team_gpu_seconds_("drover_team_gpu_seconds_total",
                        "GPU-seconds held by the ended attempts of each team's jobs (GPUs x time "
                        "from placement to the attempt's end), by the attempt's outcome: goodput "
                        "is the succeeded share. No Kueue equivalent.",
                        {"team", "outcome"}),
      cycles_("drover_admission_attempt_duration_seconds",
              "Duration of a scheduling cycle; result success when it admitted a job, else "
              "inadmissible. Its _count is Kueue's kueue_admission_attempts_total. Kueue: "
              "kueue_admission_attempt_duration_seconds, same buckets.",
              {"result"}, prometheus::DefaultBuckets()),
      requests_("drover_api_requests_total",
                "API requests answered, per method, route pattern and HTTP status code. No Kueue "
                "equivalent.",
                {"method", "route", "code"}),
      sampler_cpu_("drover_agent_sampler_cpu_seconds_total",
                   "CPU time each node's agent spent sampling its GPUs and worker processes, as "
                   "the agent measured its sampling thread. No Kueue equivalent.",
                   {"node"}) {}

void ServerMetrics::ObserveTransitions(const std::vector<model::Transition>& transitions,
                                       const control::Controller& controller, TimeMs now) {
  for (const model::Transition& transition : transitions) {
    const model::Job* job = controller.Find(transition.job);
    if (!job) continue;
    const std::string& queue = job->spec.queue;
    const model::Attempt* attempt = AttemptOf(*job, transition.attempt);
    if (transition.to == model::JobState::kAdmitted && attempt) {
      admitted_.Add({queue});
      admission_wait_.Observe({queue}, Seconds(attempt->admitted_at - attempt->ready_at));
    }
    if (Holding(transition.from) && !Holding(transition.to) && attempt) {
      ObserveAttemptEnd(*job, *attempt, controller, now);
    }
    if (model::IsTerminal(transition.to) && !model::IsTerminal(transition.from)) {
      finished_.Add({queue, std::string(model::kJobStateNames.Name(transition.to))});
    }
  }
}

void ServerMetrics::ObserveAttemptEnd(const model::Job& job, const model::Attempt& attempt,
                                      const control::Controller& controller, TimeMs now) {
  const std::string& queue = job.spec.queue;
  if (std::string_view reason = EvictionReason(attempt.disruption); !reason.empty()) {
    evicted_.Add({queue, std::string(reason)});
  }
  if (attempt.preempted_by) {
    const model::Job* by = controller.Find(*attempt.preempted_by);
    const std::string by_queue = by ? by->spec.queue : "";
    preempted_.Add({by_queue, by_queue == queue ? "InClusterQueue" : "InCohortReclamation"});
  }
  for (const model::AttemptCost& cost : model::ComputeAttemptCosts(job, now)) {
    if (cost.number != attempt.number || cost.gpu_ms <= 0) continue;
    team_gpu_seconds_.Add({job.spec.team, OutcomeOf(attempt)}, Seconds(cost.gpu_ms));
  }
}

void ServerMetrics::ObserveCycle(double seconds, bool admitted) {
  cycles_.Observe({admitted ? "success" : "inadmissible"}, seconds);
}

void ServerMetrics::CountSamplerCpu(const NodeId& node, double seconds) {
  sampler_cpu_.Add({node.value()}, seconds);
}

void ServerMetrics::CountRequest(std::string_view method, std::string_view route, int status) {
  requests_.Add({std::string(method), std::string(route), std::to_string(status)});
}

std::vector<ServerMetrics::Snapshot::GpuActivity> ServerMetrics::AttributeGpus(
    const control::Controller& controller, const std::vector<model::GpuActivity>& latest,
    TimeMs now) {
  std::vector<Snapshot::GpuActivity> out;
  for (const model::GpuActivity& sample : latest) {
    if (now - sample.at > kGpuActivityMaxAgeMs) continue;
    Snapshot::GpuActivity gpu;
    gpu.node = sample.node.value();
    gpu.index = sample.index;
    if (sample.utilization_pct >= 0) gpu.utilization = sample.utilization_pct / 100.0;
    if (sample.memory_used_bytes >= 0) {
      gpu.memory_used_bytes = static_cast<double>(sample.memory_used_bytes);
    }
    if (sample.power_mw >= 0) gpu.power_watts = sample.power_mw / 1000.0;
    gpu.gpm = sample.gpm;
    gpu.attributed_processes = sample.attributed_processes;
    gpu.unattributed_processes = sample.unattributed_processes;
    if (sample.worker) {
      gpu.allocated = true;
      if (const model::Job* job = controller.Find(sample.worker->job)) gpu.team = job->spec.team;
    }
    out.push_back(std::move(gpu));
  }
  return out;
}

ServerMetrics::Snapshot ServerMetrics::Gather(const control::Controller& controller, TimeMs now) {
  Snapshot state;
  state.queues = controller.Queues(now);
  for (const auto& [name, node] : controller.nodes()) {
    const int total = static_cast<int>(node.gpus.size());
    const int free = static_cast<int>(controller.cluster().FreeGpus(name).size());
    state.nodes.push_back({name.value(), total, total - free});
  }
  for (const sched::RunningJob& held : controller.held()) {
    if (!held.spec) continue;
    double gpus = 0;
    if (held.charge) {
      auto it = held.charge->amounts.find("gpu");
      if (it != held.charge->amounts.end()) gpus = static_cast<double>(it->second) / 1000;
    } else if (held.placement) {
      for (const sched::WorkerAssignment& worker : held.placement->workers) {
        gpus += static_cast<double>(worker.gpus.size());
      }
    }
    state.team_gpus[held.spec->team] += gpus;
  }
  return state;
}

std::string ServerMetrics::Render(const Snapshot& state) const {
  prometheus::ExpositionWriter writer;
  Samples pending, active, share, nominal, usage, borrowed, lent;
  for (const control::QueueReport& report : state.queues) {
    const sched::QueueStatus& queue = report.status;
    if (!queue.leaf) continue;  // Kueue's cluster queues are the leaves; cohorts sum them
    const std::string cohort = CohortOf(queue.path);
    pending.push_back({{{"cluster_queue", queue.name}, {"status", "active"}},
                       static_cast<double>(report.pending_jobs)});
    active.push_back({{{"cluster_queue", queue.name}}, static_cast<double>(queue.running_jobs)});
    share.push_back({{{"cluster_queue", queue.name}, {"cohort", cohort}}, queue.share});
    auto add = [&](Samples& samples, const model::ResourceAmounts& amounts) {
      for (const auto& [name, amount] : amounts) {
        ResourceLabels labels = LabelsOf(name);
        samples.push_back({{{"cohort", cohort},
                            {"cluster_queue", queue.name},
                            {"flavor", labels.flavor},
                            {"resource", labels.resource}},
                           static_cast<double>(amount) * labels.scale});
      }
    };
    add(nominal, queue.nominal);
    add(usage, queue.usage);
    add(borrowed, queue.borrowed);
    add(lent, queue.lent);
  }
  writer.Gauge("drover_pending_workloads",
               "Jobs ready and waiting for placement, per cluster_queue (leaf queue); status is "
               "always active. Kueue: kueue_pending_workloads.",
               pending);
  writer.Gauge("drover_admitted_active_workloads",
               "Jobs holding resources (placed, starting, running), per cluster_queue. Kueue: "
               "kueue_admitted_active_workloads.",
               active);
  writer.Gauge("drover_cluster_queue_weighted_share",
               "The queue's fair-share value (usage over its weighted share; "
               "docs/scheduling.md). Kueue: kueue_cluster_queue_weighted_share.",
               share);
  writer.Gauge("drover_cluster_queue_nominal_quota",
               "The queue's nominal quota per resource (cpu in cores, memory in bytes, gpu in "
               "GPUs; flavor any or a GPU model). Kueue: kueue_cluster_queue_nominal_quota.",
               nominal);
  writer.Gauge("drover_cluster_queue_resource_usage",
               "What the queue's running jobs hold, per resource and flavor. Kueue: "
               "kueue_cluster_queue_resource_usage.",
               usage);
  writer.Gauge("drover_cluster_queue_borrowed",
               "The queue's usage above its nominal quota (borrowed from its cohort), per "
               "resource. Kueue: usage minus nominal_quota.",
               borrowed);
  writer.Gauge("drover_cluster_queue_lent",
               "The queue's unused nominal quota that other queues of its cohort use now, per "
               "resource. No Kueue equivalent.",
               lent);
  Samples node_total, node_allocated, team;
  for (const Snapshot::NodeGpus& node : state.nodes) {
    node_total.push_back({{{"node", node.node}}, static_cast<double>(node.total)});
    node_allocated.push_back({{{"node", node.node}}, static_cast<double>(node.allocated)});
  }
  for (const auto& [name, gpus] : state.team_gpus) team.push_back({{{"team", name}}, gpus});
  writer.Gauge("drover_node_gpus", "GPUs the node has. No Kueue equivalent.", node_total);
  writer.Gauge("drover_node_gpus_allocated",
               "GPUs of the node allocated to jobs, whole or in part. No Kueue equivalent.",
               node_allocated);
  writer.Gauge("drover_team_gpus_allocated",
               "GPUs held by the team's jobs (time-slice shares and MIG instances in part). No "
               "Kueue equivalent.",
               team);
  // Allocation vs activity (docs/observability.md): per GPU from its latest sample, and per
  // team the sum of its GPUs' activity, to read against drover_team_gpus_allocated.
  Samples utilization, memory, power, processes, team_activity;
  Samples sm_active, sm_occupancy, tensor_active, dram_bandwidth;
  std::map<std::string, double> activity_of_team;
  for (const Snapshot::GpuActivity& gpu : state.gpus) {
    const Labels labels = {{"node", gpu.node}, {"gpu", std::to_string(gpu.index)}};
    if (gpu.utilization >= 0) {
      Labels with_allocation = labels;
      with_allocation.emplace_back("allocated", gpu.allocated ? "true" : "false");
      utilization.push_back({std::move(with_allocation), gpu.utilization});
      if (gpu.allocated) activity_of_team[gpu.team] += gpu.utilization;
    }
    for (const bool attributed : {true, false}) {
      Labels with_attribution = labels;
      with_attribution.emplace_back("attributed", attributed ? "true" : "false");
      processes.push_back({std::move(with_attribution),
                           static_cast<double>(attributed ? gpu.attributed_processes
                                                          : gpu.unattributed_processes)});
    }
    if (gpu.memory_used_bytes >= 0) memory.push_back({labels, gpu.memory_used_bytes});
    if (gpu.power_watts >= 0) power.push_back({labels, gpu.power_watts});
    if (gpu.gpm) {
      sm_active.push_back({labels, gpu.gpm->sm_active_pct / 100});
      sm_occupancy.push_back({labels, gpu.gpm->sm_occupancy_pct / 100});
      tensor_active.push_back({labels, gpu.gpm->tensor_active_pct / 100});
      dram_bandwidth.push_back({labels, gpu.gpm->dram_bandwidth_pct / 100});
    }
  }
  for (const auto& [name, activity] : activity_of_team) {
    team_activity.push_back({{{"team", name}}, activity});
  }
  writer.Gauge("drover_gpu_utilization_ratio",
               "The GPU's activity in its latest sample (NVML utilization: the share of the "
               "sample period a kernel ran), 0 to 1; allocated says whether a Drover job holds "
               "it. No Kueue equivalent.",
               utilization);
  writer.Gauge("drover_gpu_memory_used_bytes",
               "GPU memory in use in the GPU's latest sample. No Kueue equivalent.", memory);
  writer.Gauge("drover_gpu_power_watts", "The GPU's power draw in its latest sample.", power);
  writer.Gauge("drover_gpu_processes",
               "Compute processes NVML listed on the GPU in its latest sample; attributed says "
               "whether they belong to a Drover worker placed on the node (false: a process "
               "Drover did not start).",
               processes);
  // GPM (NVML GPU Performance Monitoring, Hopper and newer): only GPUs that report it have
  // these series; each is DCGM's DCGM_FI_PROF_* field of the same meaning, as a ratio.
  writer.Gauge("drover_gpu_sm_active_ratio",
               "The share of the GPU's SMs busy over its latest GPM sample period "
               "(NVML_GPM_METRIC_SM_UTIL; DCGM_FI_PROF_SM_ACTIVE), 0 to 1.",
               sm_active);
  writer.Gauge("drover_gpu_sm_occupancy_ratio",
               "Resident warps of the SMs' maximum over the GPU's latest GPM sample period "
               "(NVML_GPM_METRIC_SM_OCCUPANCY; DCGM_FI_PROF_SM_OCCUPANCY), 0 to 1.",
               sm_occupancy);
  writer.Gauge("drover_gpu_tensor_active_ratio",
               "The share of the period the SMs issued tensor-core work over the GPU's latest GPM "
               "sample period (NVML_GPM_METRIC_ANY_TENSOR_UTIL; DCGM_FI_PROF_PIPE_TENSOR_ACTIVE), "
               "0 to 1.",
               tensor_active);
  writer.Gauge("drover_gpu_dram_bandwidth_ratio",
               "DRAM bandwidth used of the theoretical maximum over the GPU's latest GPM sample "
               "period (NVML_GPM_METRIC_DRAM_BW_UTIL; DCGM_FI_PROF_DRAM_ACTIVE), 0 to 1.",
               dram_bandwidth);
  writer.Gauge("drover_team_gpu_activity",
               "The sum of the activity (0 to 1 each) of the GPUs the team's jobs hold, by their "
               "latest samples: compare with drover_team_gpus_allocated. No Kueue equivalent.",
               team_activity);
  admitted_.WriteTo(writer);
  admission_wait_.WriteTo(writer);
  evicted_.WriteTo(writer);
  preempted_.WriteTo(writer);
  finished_.WriteTo(writer);
  team_gpu_seconds_.WriteTo(writer);
  cycles_.WriteTo(writer);
  requests_.WriteTo(writer);
  sampler_cpu_.WriteTo(writer);
  WriteElection(writer);
  return writer.Take();
}

void ServerMetrics::SetElection(std::string server, std::int64_t epoch) {
  MutexLock lock(election_mu_);
  election_server_ = std::move(server);
  election_epoch_ = epoch;
}

std::string ServerMetrics::RenderElection() const {
  prometheus::ExpositionWriter writer;
  WriteElection(writer);
  return writer.Take();
}

void ServerMetrics::WriteElection(prometheus::ExpositionWriter& writer) const {
  MutexLock lock(election_mu_);
  if (election_server_.empty()) return;
  const Labels server = {{"server", election_server_}};
  const Samples leader = {{server, election_epoch_ > 0 ? 1.0 : 0.0}};
  const Samples epoch = {{server, static_cast<double>(election_epoch_)}};
  writer.Gauge("drover_leader",
               "1 if this server leads the servers sharing its PostgreSQL database, 0 if it is a "
               "standby (or stopped leading); server is its advertised URL.",
               leader);
  writer.Gauge("drover_leader_epoch",
               "The lease epoch this server leads under; 0 while it does not lead.", epoch);
}

}  // namespace drover::server
