#pragma once

// Holdings: the jobs that hold resources (placed, starting or running, or admitted to an
// external executor), owning the cluster's free capacity and the queue tree's usage that those
// holdings are taken from.
//
// Invariant, after any sequence of calls:
//   - every held job has one placement, at most one charge (none when its queue is not in the
//     policy: it runs uncharged) and exactly one entry in running();
//   - the cluster's allocations are exactly the placements of the held jobs, less those whose
//     allocation failed (IsAllocated false: restored on nodes not registered yet, retried by
//     UpsertNode), and the queue tree's usage is exactly the sum of the held jobs' charges;
//   - running()'s entries point at the held jobs' specs, placements and charges; those pointers
//     stay valid while the job is held. An entry's priority, start and last checkpoint are
//     copied from the job: Track rewrites them when they change.
// Cluster capacity and queue usage change only through these methods (and the scheduling cycle
// run by RunCycle, whose placements are recorded as holdings before it returns), so they cannot
// drift from the holdings.
//
// Held jobs are borrowed: each must outlive its holding (the controller's JobTable removes
// only finished jobs, which hold nothing). Not thread-safe: the Controller that owns it
// serializes calls.

#include <cstddef>
#include <map>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "drover/common/clock.h"
#include "drover/common/ids.h"
#include "drover/control/job_table.h"
#include "drover/model/fair_share.h"
#include "drover/model/job.h"
#include "drover/model/node.h"
#include "drover/model/policy.h"
#include "drover/sched/engine.h"
#include "drover/sched/queues.h"
#include "drover/sched/scheduler.h"

namespace drover::control {

// What `job` counts against `queues` while it holds resources, from its current attempt's
// workers (the GPU model of the first worker's first GPU, on `nodes`, when the tree governs that
// model); nullopt when its queue is not in the tree.
std::optional<sched::Charge> ChargeOf(const model::Job& job, const sched::QueueTree& queues,
                                      const std::map<NodeId, model::Node>& nodes);

// Where the workers of `job`'s current attempt run; none for an attempt under an external
// executor, or without a current attempt.
sched::Placement PlacementOf(const model::Job& job);

class Holdings {
 public:
  Holdings() = default;
  // Not copyable: running_ and running_holdings_ point into held_'s nodes (a move keeps them).
  Holdings(const Holdings&) = delete;
  Holdings& operator=(const Holdings&) = delete;
  Holdings(Holdings&&) = default;
  Holdings& operator=(Holdings&&) = default;
  const sched::ClusterState& cluster() const { return cluster_; }
  const sched::QueueTree& queues() const { return queues_; }
  // The engine's view of the held jobs, one entry each, in no particular order.
  const std::vector<sched::RunningJob>& running() const { return running_; }
  // The held jobs' ids, in order.
  std::vector<JobId> Held() const;
  bool Holds(JobId id) const { return held_.contains(id); }
  // Whether the held job `id`'s placement is allocated on the cluster (false: not held, or its
  // nodes were not registered when it was restored).
  bool IsAllocated(JobId id) const;
  // The charge of held job `id`, or nullptr (not held, or held uncharged).
  const sched::Charge* ChargeOf(JobId id) const;

  // `job` (not held: DROVER_CHECK) holds its current attempt's workers (PlacementOf) and
  // `charge`: adds the charge to the queue tree and allocates the placement on the cluster (if
  // that fails, e.g. a node is not registered yet, the job holds it unallocated until UpsertNode
  // allocates it).
  void Hold(const model::Job& job, std::optional<sched::Charge> charge);
  // Gives back what `id` holds: releases its placement (if allocated) and removes its charge.
  // Returns false, changing nothing, if `id` is not held.
  bool Unhold(JobId id);
  // Rewrites held job `id`'s running() entry from its current attempt (placed_at, last
  // checkpoint) and priority class; call whenever one of them changes. Does nothing if `id` is
  // not held.
  void Track(JobId id);

  // One scheduling pass of the engine over the cluster and the queue tree (sched::
  // RunPolicyCycle; input.running is set here). Every job the cycle places (or admits to an
  // external executor) is held on return, with the placement and charge the cycle committed (the
  // charge is moved out of the returned PlacedJob: ChargeOf gives it); its running() entry is
  // written from `jobs` as they are now, so call Track once its attempt records the placement.
  sched::CycleOutput RunCycle(const model::Policy& policy, sched::CycleInput input,
                              const std::optional<sched::Reservation>& reservation,
                              const JobTable& jobs);

  // Adds or updates a node, then retries the allocation of every unallocated holding, in id
  // order.
  void UpsertNode(const model::Node& node);
  // Removes a node from the cluster. What held jobs held there went with it: their placements
  // keep only the other nodes, so that releasing them later frees nothing on the node should it
  // come back meanwhile.
  void RemoveNode(const NodeId& node);

  // Replaces the queue tree (a new policy): `queues` takes the current tree's fair-share history
  // by queue path (sched::QueueTree::RestoreHistory), then every held job is charged again
  // against it (ChargeOf with `nodes`; uncharged when its queue is gone). Returns the paths of
  // the queues whose history was dropped because `queues` has no queue of that path.
  std::vector<std::string> SetQueues(sched::QueueTree queues,
                                     const std::map<NodeId, model::Node>& nodes);

  // Accrues the queue tree's usage into its fair-share history up to `now`
  // (sched::QueueTree::Advance; the capacity shares are fractions of is set by each scheduling
  // cycle and by QueuesAt). Call before every change of what is held, so that the history
  // counts each holding for exactly the time it was held.
  void Advance(TimeMs now);
  // A copy of the queue tree advanced to `now` (for reading shares without changing state).
  sched::QueueTree QueuesAt(TimeMs now) const;
  // Replaces the queue tree's history with `history` (sched::QueueTree::RestoreHistory), then
  // advances it to `now`: the time between is accrued with what is held now (after a restart,
  // before Restore holds anything: the downtime counts as time without usage). Returns the
  // paths of the queues whose history was dropped.
  std::vector<std::string> RestoreHistory(const model::FairShareHistory& history, TimeMs now);

 private:
  struct Holding {
    const model::Job* job = nullptr;
    sched::Placement placement;
    std::optional<sched::Charge> charge;
    bool allocated = false;
    std::size_t running_pos = 0;  // its entry in running_
  };

  // Records `holding` (of a job not held: DROVER_CHECK) and appends its running_ entry.
  void Record(Holding holding);
  // Allocates `holding`'s placement on the cluster; `allocated` says whether that succeeded.
  void TryAllocate(Holding& holding);
  // The running_ entry of `holding`, from its job as it is now.
  static sched::RunningJob EntryOf(const Holding& holding);
  // Every holding, by ascending job id.
  std::vector<Holding*> InIdOrder();

  sched::ClusterState cluster_;
  sched::QueueTree queues_;
  // Hashed: exits look up holdings not touched for a long time. Where the order matters
  // (UpsertNode retrying allocations, SetQueues, Held) it is the id order (InIdOrder).
  std::unordered_map<JobId, Holding> held_;
  // One entry per held job (Holding::running_pos), so that a pass does not rebuild it.
  std::vector<sched::RunningJob> running_;
  // Parallel to running_: the holding of each entry (hash nodes do not move), so that a
  // swap-remove re-points the moved entry's holding without a lookup.
  std::vector<Holding*> running_holdings_;
};

}  // namespace drover::control
