#pragma once

// The scheduling engine: one cycle of the cluster policy (docs/scheduling.md). Pure: values in,
// decisions out; time is a parameter; the same input gives the same output. The controller runs
// it under the server and the simulator alike.
//
// A cycle:
//   1. Advances fair share to `now` and orders the pending jobs by policy.order: nominated jobs
//      first (CycleInput::nominated; among themselves in that order too), see "Nomination"
//      below; then
//        fair-share: queue by queue, always taking the next job of the leaf queue that goes
//          first by hierarchical fair share (QueueTree::Before, re-evaluated after every
//          placement); within a leaf by effective priority (class value plus aging), then the
//          user's share, then the time the job became ready, then id;
//        fifo: one order across queues: submission time (JobHistory::submitted_at), then id;
//        sjf: time limit (spec->timeout) ascending, jobs without one last, ties as fifo;
//        las: LAS queue (LasQueue of JobHistory::attained_gpu_ms) ascending, ties as fifo.
//   2. For each job: admission (quota with borrowing and lending, concurrency limits; GPU
//      flavors are tried in order when the tree governs per-model quota), then placement
//      (internal::Plan with the policy's scoring). A gang that does not fit whole starts with
//      fewer workers when min_workers allows (the most that fit).
//   3. EASY backfill: the first admitted job that does not fit gets a reservation: the earliest
//      time running jobs' time limits free enough for it, and the nodes it would take then.
//      Later jobs start only if their time limit ends by then, or on nodes outside the
//      reservation. Only that first job is projected (once per cycle); when nothing bounds its
//      start there is no reservation and nothing is held back. A pass over only untried jobs
//      (keep_reservation) keeps the previous full pass's reservation instead.
//   4. Preemption, for a job admitted (or within its guaranteed quota) that does not fit:
//      victims are interruptible running jobs that have run at least min_run_time, either of a
//      lower priority in the same leaf queue ("priority") or of queues using more than their
//      nominal quota while the job's queue stays within its own ("reclaim"). "Lower priority" is
//      by priority class under fair-share, by LAS queue under las (a running job in a later LAS
//      queue than the pending job's: Tiresias' preemption, demotion seen at every cycle as
//      attained service grows), and never under fifo and sjf (only reclaim). SelectVictims
//      (victims.h) picks victims in order of the work they would lose (GPU-seconds since their last
//      checkpoint, or start), adds them until the job would be admitted and fit, then drops any it
//      does not need. A gang is a job: it is preempted whole. Victims' resources free only when
//      their workers exit; until then the job is nominated (below).
//   5. Every job left pending gets a verdict naming the layer that holds it.
//
// Nomination (Kueue's nominated workloads, KAI's pipelined placements): what a preemption frees
// belongs to its preemptor. The controller keeps a preemptor nominated (CycleInput::nominated)
// from the cycle that preempts for it until it is placed, or until it has been tried in a cycle
// after all its victims exited and still does not admit or fit. Each cycle, before any other
// job, the nominated jobs in order:
//   - one whose victims have all exited is placed if it is admitted and fits, whole, ignoring
//     the reservation; if not, the nomination lapses: it takes its ordinary turn in this cycle
//     (and may preempt again), its verdict saying so;
//   - one with victims still stopping is not placed; it CLAIMS what it will get: it is planned
//     on a trial cluster where its stopping victims are released (one trial for all claims, so
//     two claims never plan the same GPUs) and on the queue tree without their charges; if it
//     is admitted and fits, its victims' charges stay out of the tree and its own enters it (the
//     tree as it will be once it starts), and the nodes of the plan are held. Its verdict
//     (kPreempting) names the victims it waits for.
// The nodes its exited victims ran on (Nomination::freed) are held too while it waits, so that a
// victim is not placed back where it was evicted from. Order within the phase: first the jobs
// whose victims have all exited (never on nodes freed for one still waiting), then the claims
// (never on nodes freed for another one still waiting; earlier claims are committed in the
// trial). Every job after the phase, and a job that preempts later in the cycle (it claims
// too), finds the held nodes excluded through the excluded-node mask the reservation uses (also
// in the reservation's projection and in trial preemptions). Every change to the tree is undone
// before the cycle returns; the cluster holds only real placements.
// Whole nodes are held rather than exact GPUs: a stopping victim still holds its resources in
// the cluster, and sharing a node's free resources between a claim and other jobs would need
// per-resource bookkeeping in the planner for a state that lasts one grace period; the cost is
// that the rest of a held node stays idle meanwhile. So no job placed while a preemptor waits
// takes capacity or quota freed for it, the requeued victims included, and a preemptor whose
// victims have all exited starts in the next cycle unless the cluster changed under it. Cost:
// one cluster copy per waiting nominated job per cycle, like a preemption try; such jobs are
// rare.

#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "drover/common/clock.h"
#include "drover/common/ids.h"
#include "drover/model/decision.h"
#include "drover/model/hold_layer.h"
#include "drover/model/job_spec.h"
#include "drover/model/policy.h"
#include "drover/sched/cluster_state.h"
#include "drover/sched/maintenance.h"
#include "drover/sched/pending_reason.h"
#include "drover/sched/queues.h"

namespace drover::sched {

// A job waiting for placement. `spec` is borrowed for the duration of the call.
struct PendingJob {
  JobId job;
  int priority = 0;
  TimeMs enqueued_at = 0;
  const model::JobSpec* spec = nullptr;
  // Its queue hands placement to an external executor (model/executor.h): the policy cycle
  // only admits it (quota, limits) and places nothing; it neither preempts nor reserves.
  bool external = false;
};

// A job holding resources. Pointers are borrowed for the duration of the call. An external job
// (PendingJob::external) holds quota and an empty placement, and is never a victim: Drover
// does not know where its engine runs it.
struct RunningJob {
  JobId job;
  const model::JobSpec* spec = nullptr;
  const Placement* placement = nullptr;
  const Charge* charge = nullptr;  // what it counts against the queue tree
  int priority = 0;
  TimeMs started_at = 0;          // placed at; it holds resources since
  TimeMs last_checkpoint_at = 0;  // 0: none in this attempt
};

// What the queue orders other than fair-share need to know of a job's past (model::QueueOrder).
struct JobHistory {
  TimeMs submitted_at = 0;  // fifo, and ties of sjf and las
  // las: GPU-milliseconds the job has held over all its attempts up to `now` (GPUs x time held;
  // a time-slice share counts its thousandths, a MIG instance g/7 of a GPU).
  std::int64_t attained_gpu_ms = 0;

  friend bool operator==(const JobHistory&, const JobHistory&) = default;
};

// What a nominated job (CycleInput::nominated) waits for and what was freed for it so far.
struct Nomination {
  // Its victims still stopping (running, and in CycleInput::stopping); empty once every one has
  // exited. One absent from CycleInput::running is taken as exited.
  std::set<JobId> stopping;
  std::set<NodeId> freed;  // nodes its exited victims ran on; unknown nodes are ignored

  friend bool operator==(const Nomination&, const Nomination&) = default;
};

struct CycleInput {
  TimeMs now = 0;
  std::vector<PendingJob> pending;  // every ready job whose backoff is over
  // Every job holding resources, stopping ones included, in any order; borrowed for the call.
  std::span<const RunningJob> running;
  std::set<JobId> stopping;  // running jobs already being stopped: never victims again
  // Nominated jobs: pending jobs that preempted others in an earlier cycle ("Nomination" above).
  // One absent from `pending` is ignored.
  std::map<JobId, Nomination> nominated;
  // A pass over only the jobs not tried before (nothing was freed since the last full pass):
  // the previous reservation still holds instead of a new one being chosen.
  bool keep_reservation = false;
  // Pending jobs' history, read only under orders other than fair-share, and running jobs', read
  // only under las. A pending job absent here counts as submitted at its enqueued_at with no
  // attained service; a running job as having none.
  std::map<JobId, JobHistory> history;
  // Nodes closed to new work for a time (maintenance.h): a job is placed on such a node only if
  // it would not run into the window (its time limit, from now, ends by the window's start; one
  // without a limit never is), in every placement path (ordinary, backfill, nominated, trial
  // preemptions) and in the EASY reservation's projection. Cordoned nodes come as windows that
  // never end. Running jobs are not touched.
  std::vector<NodeWindow> maintenance;
  // Each PlacedJob carries its Decision (queue, nodes, score, candidates and the sentence that
  // `drover why` shows). A caller that keeps no decision log sets it false: PlacedJob::decision
  // is then left empty, and what is placed where is the same either way.
  bool placement_decisions = true;
};

// Why a pending job waits: the layer that holds it and one sentence.
struct Verdict {
  // One of the scheduling layers: kQueue, kQuota, kConcurrencyLimit, kFairShare, kReservation,
  // kGangSize, kTopology, kTaint, kNodeFit, kPreempting.
  model::HoldLayer layer = model::HoldLayer::kNodeFit;
  std::string message;
  std::optional<PendingReason> placement;  // for the placement layers
  std::optional<TimeMs> reserved_start;    // the reservation's start, for its holder

  friend bool operator==(const Verdict&, const Verdict&) = default;
};

struct PlacedJob {
  // May hold fewer workers than spec.workers (min_workers); none for an external job (admitted
  // only, PendingJob::external).
  Placement placement;
  Charge charge;             // added to the queue tree
  model::Decision decision;  // empty unless CycleInput::placement_decisions
};

struct Preemption {
  JobId preemptor;
  std::vector<JobId> victims;
  model::Decision decision;              // kPreempted, for the preemptor
  std::vector<model::Decision> evicted;  // kEvicted, one per victim
};

struct Reservation {
  JobId job;
  TimeMs start = 0;
  std::vector<NodeId> nodes;
};

struct CycleOutput {
  std::vector<PlacedJob> placed;  // in decision order; allocated in the cluster and the tree
  std::vector<Preemption> preemptions;
  std::vector<std::pair<JobId, Verdict>> pending;
  std::optional<Reservation> reservation;
  std::optional<model::Decision> reservation_decision;  // kReserved, when new this cycle
  // Every pending job of a known queue, placed or not, in the order the cycle considered it:
  // the nominated jobs first, then the policy's order (fair-share: the leaves interleaved as
  // the cycle took them). Each job once (a lapsed nomination at its first turn). What queue
  // positions (`drover ls --pending`) are read from.
  std::vector<JobId> order;
};

// Runs one cycle; allocates every placement in `cluster` and adds its charge to `queues`.
// `previous_reservation` (the last cycle's holder, if any) only decides whether a kReserved
// decision is new. Every PendingJob's and RunningJob's pointers must be non-null.
CycleOutput RunPolicyCycle(const model::Policy& policy, QueueTree& queues, ClusterState& cluster,
                           const CycleInput& input,
                           const std::optional<Reservation>& previous_reservation);

struct CycleResult {
  std::vector<Placement> placements;                     // in decision order
  std::vector<std::pair<JobId, PendingReason>> pending;  // every job not placed
};

// Runs one scheduling cycle under the empty policy with binpack scoring (RunPolicyCycle with
// model::Policy{} but scoring kBinpack, the order TryPlace and Explain assume): one queue, no
// quota; it orders the pending jobs by priority (higher first), then by the time they entered
// the queue (earlier first), then by id, and tries each in turn against the free capacity left
// by the jobs placed before it in the same cycle. Allocates every placement it returns in
// `cluster`. Every pending entry's reason is computed after all placements of the cycle (once
// per distinct request). `spec` of every PendingJob must be non-null. A spec with workers < 1
// is treated as 1.
CycleResult RunCycle(ClusterState& cluster, std::vector<PendingJob> pending);

// The priority a pending job is ordered by: its class value plus aging (policy.aging_step per
// aging_interval waited since enqueued_at, at most aging_max).
int EffectivePriority(const model::Policy& policy, int priority, TimeMs enqueued_at, TimeMs now);

// The LAS queue (model::QueueOrder::kLas) of a job that has held `attained_gpu_ms`
// GPU-milliseconds: the number of policy.las_thresholds (GPU-seconds) it has reached, 0 first.
int LasQueue(const model::Policy& policy, std::int64_t attained_gpu_ms);

}  // namespace drover::sched
