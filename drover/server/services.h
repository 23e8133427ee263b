#pragma once

// The control plane's live state of services (docs/inference.md; control_plane_services.cc):
// per service, its stored record, the replicas (jobs) it started that have not ended, their
// probe state, the latest load signal and the autoscaler's memory. Owned by ControlPlane under
// its mutex; not thread-safe itself.

#include <map>
#include <optional>
#include <set>
#include <string>

#include "drover/common/clock.h"
#include "drover/common/ids.h"
#include "drover/model/job.h"
#include "drover/model/service.h"
#include "drover/sched/autoscaler.h"
#include "drover/store/store.h"

namespace drover::server {

// What the probes have seen of one replica.
struct ReplicaHealth {
  bool ready = false;
  TimeMs since = 0;            // when `ready` last changed (the replica's submission before)
  int readiness_failures = 0;  // in a row
  int liveness_failures = 0;   // in a row
  TimeMs next_readiness = 0;   // the next probe is due at (0: at once)
  TimeMs next_liveness = 0;
  std::string last_outcome;  // of the latest probe, for transitions' causes
  bool was_ready = false;    // ready at least once
  // The saturation gauge (model::SaturationSpec) at its latest successful scrape, and when.
  double saturation = 0;
  TimeMs saturation_at = 0;  // 0: never scraped
  TimeMs next_saturation = 0;
};

struct ServiceEntry {
  store::ServiceRecord record;
  std::set<JobId> replicas;  // submitted and not yet seen to end
  std::set<JobId> stopping;  // among replicas: asked to stop (scale-down, roll, liveness)
  std::map<JobId, ReplicaHealth> health;  // of each of replicas
  std::optional<model::LoadSignal> load;  // the latest signal
  sched::AutoscaleState autoscale;
  std::string last_scaling;  // the autoscaler's latest change, and when
  TimeMs last_scaling_at = 0;
  std::string blocked;  // why a replica that should start did not, if one did not
  // Crash-loop backoff: replicas that ended before they were ever ready, in a row (reset when
  // one becomes ready), and no replica starts before restart_not_before.
  int early_failures = 0;
  TimeMs restart_not_before = 0;
};

// Whether `job` (a replica) is being stopped by the controller: preempted, on a drained node,
// cancelled. It is out of routing (not ready) from then on, and finishes its in-flight requests
// within its kill grace (docs/inference.md, "Draining").
bool Draining(const model::Job& job);

// The saturation gauge summed over `entry`'s ready replicas scraped within the last three
// intervals (at least kLoadSignalStaleMs) before `now`; nullopt without saturation in the spec
// or without such a replica.
std::optional<double> SaturationOf(const ServiceEntry& entry, TimeMs now);

// The wait before the next replica start after `early_failures` replicas in a row ended before
// they were ready: 1 s, doubling, at most a minute.
DurationMs RestartBackoff(int early_failures);

// The port a replica listens on: its $DROVER_PORT (set by the service, one per live replica), or
// 0 when it has none.
int ReplicaPort(const model::JobSpec& spec);

}  // namespace drover::server
