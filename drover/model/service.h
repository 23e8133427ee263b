#pragma once

// An inference service (docs/inference.md, "The Service spec"): a named, long-running set of
// replicas of one job template, kept between `replicas.min` and `replicas.max` by the control
// plane, probed over HTTP, and scaled by the autoscaler (sched/autoscaler.h). Each replica is an
// ordinary job (JobSpec::service names its service) placed by the same engine as every job.

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "drover/common/clock.h"
#include "drover/model/job_spec.h"

namespace drover::model {

// An HTTP GET probe of a replica: http://ADDRESS:$DROVER_PORT<path>, a 2xx answer within
// timeout_ms passes. `failure_threshold` failures in a row flip a passing replica to failing;
// one pass flips it back. Probes start initial_delay_ms after the replica started.
struct ProbeSpec {
  std::string path = "/health";  // starts with '/'
  DurationMs interval_ms = 5 * kMillisPerSecond;
  DurationMs timeout_ms = 1 * kMillisPerSecond;
  int failure_threshold = 3;  // 1..100
  DurationMs initial_delay_ms = 0;

  friend bool operator==(const ProbeSpec&, const ProbeSpec&) = default;
};

// The backend saturation signal (docs/inference.md, "Autoscaling"): a gauge scraped from each
// ready replica's Prometheus endpoint, e.g. vLLM's `vllm:num_requests_waiting` (requests the
// engine has accepted but cannot run yet: its batch is full). Its sum over the replicas asks for
// ceil(sum / target_per_replica) replicas, as a Kubernetes HPA with an AverageValue target would.
struct SaturationSpec {
  std::string metric = "vllm:num_requests_waiting";  // a metric name: [a-zA-Z_:][a-zA-Z0-9_:]*
  double target_per_replica = 0;                     // > 0, at most 1e6
  std::string path = "/metrics";                     // starts with '/'
  DurationMs interval_ms = 5 * kMillisPerSecond;     // 100 ms .. 1 h
  DurationMs timeout_ms = 1 * kMillisPerSecond;      // 1 ms .. 1 min

  friend bool operator==(const SaturationSpec&, const SaturationSpec&) = default;
};

// How the autoscaler sizes a service (sched/autoscaler.h). Disabled (target 0 and no
// saturation): the service runs replicas.min replicas. Enabled: between replicas.min and
// replicas.max, enough replicas that each carries at most `target_in_flight_per_replica`
// requests (in flight plus waiting) and, with `saturation`, at most its target of the backend's
// gauge; a change taken only once the signal asked for it for the whole delay. With
// replicas.min 0 the service scales to zero after `scale_to_zero_after_ms` without requests,
// and from zero to one replica at once when a request waits.
struct AutoscalingSpec {
  int target_in_flight_per_replica = 0;  // 0 = this signal off
  DurationMs scale_up_delay_ms = 0;
  DurationMs scale_down_delay_ms = 5 * kMillisPerMinute;
  DurationMs scale_to_zero_after_ms = 5 * kMillisPerMinute;  // only with replicas.min 0
  std::optional<SaturationSpec> saturation;

  bool enabled() const { return target_in_flight_per_replica > 0 || saturation.has_value(); }

  friend bool operator==(const AutoscalingSpec&, const AutoscalingSpec&) = default;
};

struct ServiceSpec {
  std::string name;                 // job-name rules; unique among services
  std::vector<std::string> models;  // model names the gateway routes here; at least one
  // The replica template: command or script, image, resources, env, placement. Its name is the
  // service's; owner, team, queue and priority_class are the service's. No timeout, one worker,
  // no dependencies, inputs or outputs.
  JobSpec replica;
  int min_replicas = 1;  // 0..max_replicas; replicas up to min are never preemption victims
  int max_replicas = 1;  // 1..kMaxReplicas
  std::optional<ProbeSpec> readiness;  // unset: a running replica is ready
  std::optional<ProbeSpec> liveness;   // unset: only a process exit ends a replica
  AutoscalingSpec autoscaling;

  friend bool operator==(const ServiceSpec&, const ServiceSpec&) = default;
};

// At most this many replicas per service: a bound on what one spec can ask of the controller.
inline constexpr int kMaxReplicas = 1000;

// A gateway's load report for one service (POST /v1/services/{name}/load), over its last
// window: requests in flight at the replicas, waiting in the gateway, completed in the window.
struct LoadSignal {
  std::int64_t in_flight = 0;
  std::int64_t waiting = 0;
  std::int64_t requests = 0;
  DurationMs window_ms = 0;
  TimeMs received_at = 0;  // set by the server, not the reporter

  friend bool operator==(const LoadSignal&, const LoadSignal&) = default;
};

}  // namespace drover::model
