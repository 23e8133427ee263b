#pragma once

// ServerMetrics: what GET /metrics exposes (docs/observability.md, "Metrics"), in Prometheus'
// text format with Kueue's metric names under the drover_ prefix.
//
// Two kinds of series:
//   - counters and histograms of events (admissions and their wait, evictions, preemptions,
//     finished jobs, GPU-seconds by team and outcome, scheduling cycles, API requests), added to
//     as the events happen: ObserveTransitions from the control plane's Commit, ObserveCycle
//     from its loop, CountRequest from the HTTP server;
//   - gauges of the present state (pending and running jobs, quota and usage per queue and
//     resource, GPUs per node and team), taken by Gather from the controller under the plane's
//     lock in one pass over the queue tree, the ready jobs, the held jobs and the nodes (never
//     over every job), and rendered by Render after the lock is released.
// Every label is bounded: queues and teams of the policy and the specs, nodes, route patterns,
// states and reasons from fixed tables; never a job id or a raw path.
//
// Thread-safety: every method may be called from any thread (each family has its own mutex);
// Gather reads the controller, so its caller holds whatever serializes the controller.

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "drover/common/clock.h"
#include "drover/common/prometheus.h"
#include "drover/common/thread_annotations.h"
#include "drover/control/controller.h"
#include "drover/control/explanation.h"
#include "drover/model/job.h"
#include "drover/model/usage.h"

namespace drover::server {

class ServerMetrics {
 public:
  // The present state, as Gather copies it from the controller.
  struct Snapshot {
    std::vector<control::QueueReport> queues;  // the queue tree, in tree order
    struct NodeGpus {
      std::string node;
      int total = 0;
      int allocated = 0;  // not free for a whole-GPU placement (held whole or in part)
    };
    std::vector<NodeGpus> nodes;
    // GPUs held by each team's jobs: a job charged to the queue tree counts its milli-GPUs
    // (shares and MIG instances in part), another the GPU indices its workers hold.
    std::map<std::string, double> team_gpus;
    // Each GPU's latest sample (docs/observability.md, "Sampling"), from AttributeGpus.
    struct GpuActivity {
      std::string node;
      int index = 0;
      double utilization = -1;  // ratio 0..1; -1: not read
      double memory_used_bytes = -1;
      double power_watts = -1;
      std::optional<model::GpmSample> gpm;  // unset: the GPU gave no GPM metrics
      bool allocated = false;               // a Drover worker holds it
      int attributed_processes = 0;         // model::GpuActivity's
      int unattributed_processes = 0;
      std::string team;  // that worker's job's team ("" when none, or not allocated)
    };
    std::vector<GpuActivity> gpus;
  };

  ServerMetrics();

  // The transitions of a persisted step, for the event counters; jobs are looked up in
  // `controller` (which holds them as of the step). `now` bounds the GPU time of attempts.
  void ObserveTransitions(const std::vector<model::Transition>& transitions,
                          const control::Controller& controller, TimeMs now);
  // One scheduling cycle that took `seconds` and admitted at least one job or none.
  void ObserveCycle(double seconds, bool admitted);
  // One API request answered with `status`: `method` and `route` are the matched route's
  // (RouteLabel), or "other" and "unmatched" for a request no route took.
  void CountRequest(std::string_view method, std::string_view route, int status);
  // `node`'s agent reported `seconds` of CPU spent sampling (UsageBatch::sampler_cpu_us).
  void CountSamplerCpu(const NodeId& node, double seconds);

  // The gauges' state; cost: the queue tree and ready jobs (Controller::Queues), the held jobs
  // and the nodes.
  static Snapshot Gather(const control::Controller& controller, TimeMs now);
  // The samples of `latest` no older than kGpuActivityMaxAgeMs at `now` (a node that stopped
  // sending drops out of the series), each with its holder's team looked up in `controller`.
  static std::vector<Snapshot::GpuActivity> AttributeGpus(
      const control::Controller& controller, const std::vector<model::GpuActivity>& latest,
      TimeMs now);
  static constexpr DurationMs kGpuActivityMaxAgeMs = 5 * kMillisPerMinute;
  // The exposition of `state` and of every event series.
  std::string Render(const Snapshot& state) const;

  // This server's part in the leader election of servers sharing PostgreSQL (docs/operations.md
  // "Two servers on PostgreSQL"): its advertised URL and its lease epoch, 0 while it does not
  // lead. Once set, Render and RenderElection write drover_leader{server} (1 leading, 0 not) and
  // drover_leader_epoch{server} (the epoch; 0 not leading); never set (a lone server): neither.
  void SetElection(std::string server, std::int64_t epoch) EXCLUDES(election_mu_);
  // The election's series alone: what a standby answers GET /metrics with.
  std::string RenderElection() const EXCLUDES(election_mu_);

  // The event families, for tests.
  const prometheus::CounterFamily& admitted() const { return admitted_; }
  const prometheus::HistogramFamily& admission_wait() const { return admission_wait_; }
  const prometheus::CounterFamily& evicted() const { return evicted_; }
  const prometheus::CounterFamily& preempted() const { return preempted_; }
  const prometheus::CounterFamily& finished() const { return finished_; }
  const prometheus::CounterFamily& team_gpu_seconds() const { return team_gpu_seconds_; }
  const prometheus::HistogramFamily& cycles() const { return cycles_; }
  const prometheus::CounterFamily& requests() const { return requests_; }

 private:
  // `attempt` of `job` ended: evictions, preemptions and its GPU time.
  void ObserveAttemptEnd(const model::Job& job, const model::Attempt& attempt,
                         const control::Controller& controller, TimeMs now);

  prometheus::CounterFamily admitted_;
  prometheus::HistogramFamily admission_wait_;
  prometheus::CounterFamily evicted_;
  prometheus::CounterFamily preempted_;
  prometheus::CounterFamily finished_;
  prometheus::CounterFamily team_gpu_seconds_;
  prometheus::HistogramFamily cycles_;
  prometheus::CounterFamily requests_;
  prometheus::CounterFamily sampler_cpu_;
  // SetElection's, written to `writer` (nothing if never set).
  void WriteElection(prometheus::ExpositionWriter& writer) const EXCLUDES(election_mu_);

  mutable Mutex election_mu_;
  std::string election_server_ GUARDED_BY(election_mu_);  // "": no election
  std::int64_t election_epoch_ GUARDED_BY(election_mu_) = 0;
};

}  // namespace drover::server
