#pragma once

// The replica plan of one service (docs/inference.md, "Replicas and the scheduler"): which
// replicas to start and which to stop so that the service converges on its desired count and
// its current template. Pure: the driver (server/control_plane_services.cc) gathers the
// replicas, calls Reconcile, submits and cancels jobs through the controller.
//
// Rules, in order:
//   - A replica of an older generation (the template changed) is rolled one at a time: while a
//     new-generation replica is not ready nothing more happens; when all are ready and the
//     service has more replicas than desired, one old replica is stopped (the least useful
//     first: not ready, then interruptible, then the newest); otherwise one new replica starts.
//   - Without old replicas: fewer than desired start the difference; more stop the surplus,
//     least useful first.
//   - A new replica is protected (not interruptible: never a preemption victim) while fewer
//     than `min` live replicas of the current generation are protected, else interruptible, so
//     that exactly the first `min` are protected. A replacement for a dead protected replica is
//     protected again; during a rolling update the old replicas keep their protection until
//     they stop, so up to `min` more replicas than `min` may be protected for that while.
//   - Each new replica gets a port: the lowest in [port_from, port_to] no live replica of any
//     service holds. None free: nothing starts, and `blocked` says why.

#include <optional>
#include <set>
#include <string>
#include <vector>

#include "drover/common/ids.h"

namespace drover::control {

// A live (not terminal, not being stopped) replica, as the driver sees it.
struct ReplicaView {
  JobId id;
  int generation = 0;
  bool is_protected = false;  // not interruptible
  bool ready = false;         // running and passing its readiness probe
};

struct ReconcileInput {
  int generation = 0;  // the service's current template
  int desired = 0;
  int min = 0;
  std::vector<ReplicaView> replicas;
  std::set<int> ports_in_use;  // by every live replica of every service
  int port_from = 0;
  int port_to = -1;
};

struct ReplicaStart {
  bool is_protected = false;
  int port = 0;
};

struct ReconcilePlan {
  std::vector<ReplicaStart> start;
  std::vector<JobId> stop;
  std::string blocked;  // non-empty: why a replica that should start did not
};

ReconcilePlan Reconcile(const ReconcileInput& input);

}  // namespace drover::control
