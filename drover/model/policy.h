#pragma once

// The cluster scheduling policy (docs/scheduling.md): the queue tree with quotas, borrowing and
// lending, concurrency limits, fair share, preemption and backfill settings. A Policy is a
// validated value; drover/spec parses it from the policy file and drover/sched applies it.

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "drover/common/clock.h"
#include "drover/model/executor.h"
#include "drover/model/identity.h"
#include "drover/model/names.h"

namespace drover::model {

// Amounts of the resources quotas and limits govern, by name:
//   "cpu" (millicores), "memory" (bytes), "gpu" (milli-GPUs of any model: a whole GPU is 1000,
//   a 250m time-slice share 250, a MIG instance of g compute slices of 7 is g*1000/7),
//   "gpu:<model>" (milli-GPUs of one model, the model lower-cased, e.g. "gpu:h100").
// The policy file writes GPUs in whole units or with an m suffix ("8", "2500m").
// A name that is absent means "not set" (see each field for what that implies).
using ResourceAmounts = std::map<std::string, std::int64_t>;

// Concurrency limits, apart from capacity. Unset fields do not limit.
struct Limits {
  std::optional<std::int64_t> max_running_jobs;  // jobs holding resources at once
  ResourceAmounts max_resources;                 // e.g. {"gpu": 8}: held at once

  bool empty() const { return !max_running_jobs && max_resources.empty(); }
  friend bool operator==(const Limits&, const Limits&) = default;
};

// A queue's grants (docs/security.md, "Roles and verbs"): team name ("*": every team) -> the
// verbs (IsGrantable) its members may use there: submit to the queue, and cancel, hold or read
// the logs of their team's jobs in it.
using AccessGrants = std::map<std::string, std::vector<Verb>>;

// How many unfinished jobs one user, or one team, may have (Slurm's MaxSubmitJobs), checked at
// submission: a submission that would pass one is refused naming it. Unset fields do not limit.
struct SubmitLimits {
  std::optional<std::int64_t> max_pending_jobs;    // not yet started (pending or ready)
  std::optional<std::int64_t> max_submitted_jobs;  // not finished: pending, ready or running

  bool empty() const { return !max_pending_jobs && !max_submitted_jobs; }
  friend bool operator==(const SubmitLimits&, const SubmitLimits&) = default;
};

// One node of the queue tree (org -> team -> queue, any depth). Jobs name a leaf in
// JobSpec::queue; leaf names are unique in the whole tree.
struct QueueConfig {
  std::string name;
  double weight = 1.0;  // fair-share weight among siblings (> 0)
  // Guaranteed amounts. A resource some queue of the tree sets is governed: a leaf that does
  // not set it has nominal 0 of it, a queue with children the sum of its children's (a
  // grouping queue, like a Kueue cohort without quota of its own). A resource no queue sets is
  // not limited by quotas.
  ResourceAmounts nominal;
  // Most this queue may use beyond `nominal` by borrowing its siblings' unused quota, per
  // resource; a resource absent here may borrow without limit.
  ResourceAmounts borrowing_limit;
  // Most of its own unused nominal it lends to siblings, per resource; absent = all of it.
  // nominal - lending_limit is protected: siblings never borrow it.
  ResourceAmounts lending_limit;
  Limits limits;       // for the whole subtree
  Limits user_limits;  // for each user, within this subtree
  // Who may use the subtree's queues (model/access.h); unset: as the parent's. While no queue of
  // the policy sets it, every team may submit to every queue.
  std::optional<AccessGrants> access;
  // Where the subtree's jobs run (model/executor.h); unset: as the parent's (local at a root).
  std::optional<ExecutorConfig> executor;
  std::vector<QueueConfig> children;

  friend bool operator==(const QueueConfig&, const QueueConfig&) = default;
};

// How a placement chooses among feasible nodes.
enum class Scoring {
  kBinpack,        // fewest free resources left (keeps other nodes empty)
  kSpread,         // most free resources left (spreads load)
  kFragmentation,  // least growth of expected fragmentation (FGD, Weng et al., ATC'23)
  // The baselines of the FGD paper, for single-worker jobs (gangs place as kBinpack); see
  // docs/scheduling.md, "Placement scoring":
  kRandom,         // any feasible node, uniformly
  kBestFit,        // least free CPU and GPU left, weighted half and half
  kDotProduct,     // least alignment of free resources with the request (Tetris)
  kGpuPacking,     // partly used GPUs first, then used nodes, then idle nodes
  kGpuClustering,  // nodes already running tasks of the same GPU request first
};
inline constexpr NameTable kScoringNames{std::array{
    NameEntry{Scoring::kBinpack, "binpack"},
    NameEntry{Scoring::kSpread, "spread"},
    NameEntry{Scoring::kFragmentation, "fragmentation"},
    NameEntry{Scoring::kRandom, "random"},
    NameEntry{Scoring::kBestFit, "best-fit"},
    NameEntry{Scoring::kDotProduct, "dot-product"},
    NameEntry{Scoring::kGpuPacking, "gpu-packing"},
    NameEntry{Scoring::kGpuClustering, "gpu-clustering"},
}};
static_assert(kScoringNames.size() == static_cast<std::size_t>(Scoring::kGpuClustering) + 1);
// kScoringNames.Name / Parse.
std::string_view ScoringName(Scoring scoring);
std::optional<Scoring> ParseScoring(std::string_view name);

// The order a scheduling cycle tries pending jobs in (docs/scheduling.md, "Queue order"). It
// decides only who is tried first: quotas, concurrency limits, placement, backfill and reclaim
// preemption apply under every order. Jobs whose preemption victims are still stopping are tried
// before all others under every order.
enum class QueueOrder {
  // Hierarchical fair share between leaf queues; within a leaf, effective priority (class value
  // plus aging), then the user's fair share, then the time the job became ready, then its id.
  kFairShare,
  // Submission time, then job id. Priority, aging and fair share do not reorder; priority
  // preemption is off (reclaim still preempts).
  kFifo,
  // Shortest job first: by time limit (JobSpec::timeout) ascending; jobs without a time limit
  // after every job with one; ties in fifo order. Priority preemption is off.
  kSjf,
  // Tiresias' discretized two-dimensional least-attained-service (2D-LAS; Gu et al., NSDI'19).
  // A job's attained service is the GPU-time it has held over all its attempts (GPUs x time; a
  // time-slice share counts its thousandths, a MIG instance g/7). Policy::las_thresholds split
  // jobs into priority queues: queue 0 below the first threshold, queue i from threshold i-1
  // up to threshold i, the last from the last threshold on. Lower queue first; fifo within a
  // queue. Priority preemption uses the queue instead of the priority class: a job may preempt
  // interruptible running jobs of its leaf queue that sit in a later LAS queue.
  kLas,
};
inline constexpr NameTable kQueueOrderNames{std::array{
    NameEntry{QueueOrder::kFairShare, "fair-share"},
    NameEntry{QueueOrder::kFifo, "fifo"},
    NameEntry{QueueOrder::kSjf, "sjf"},
    NameEntry{QueueOrder::kLas, "las"},
}};
static_assert(kQueueOrderNames.size() == static_cast<std::size_t>(QueueOrder::kLas) + 1);
// kQueueOrderNames.Name / Parse.
std::string_view QueueOrderName(QueueOrder order);
std::optional<QueueOrder> ParseQueueOrder(std::string_view name);

// Which Unix account runs each identity's jobs on an agent that runs as root (docs/security.md,
// "Jobs run as their users"). The policy file's `accounts:` section.
struct Accounts {
  // Identity (the submitting user) -> Unix account name; an identity absent here runs as the
  // account of the same name.
  std::map<std::string, std::string> map;
  // Identities whose account may be root (uid 0); any other job whose account is root is
  // refused by the agent.
  std::vector<std::string> allow_root;

  friend bool operator==(const Accounts&, const Accounts&) = default;
};

struct Policy {
  // Roots of the queue tree. Empty: one implicit leaf "default" without quota.
  std::vector<QueueConfig> queues;
  Limits pipeline_limits;           // for each pipeline (JobSpec::pipeline), across queues
  SubmitLimits user_submit_limits;  // for each user, across queues
  SubmitLimits team_submit_limits;  // for each team, across queues
  // Slurm's PrivateData: listings and reads show a job only to its own team (and admins).
  // Otherwise every caller sees every job's summary; its details stay with its team.
  bool private_data = false;

  // Fair share: usage decays with this half-life; 0 ranks by current allocation only.
  DurationMs fair_share_half_life = 3'600'000;
  // Aging: a pending job's priority grows by aging_step per aging_interval waited, up to
  // aging_max; aging_interval 0 disables it.
  DurationMs aging_interval = 0;
  int aging_step = 100;
  int aging_max = 1000;

  Scoring scoring = Scoring::kFragmentation;

  // The order pending jobs are tried in. The default keeps fair share (and priority with aging).
  QueueOrder order = QueueOrder::kFairShare;
  // order kLas: attained-service thresholds in GPU-seconds, ascending, each > 0 (the policy file
  // parser checks both); N thresholds make N + 1 queues. A job with attained service s is in
  // queue i = the number of thresholds t with s >= t. The default [3250, 7200] is the Tiresias
  // simulator's (SymbioticLab/Tiresias, simulator/jobs.py: num_queue = 3 and queue_limit =
  // [3250, 7200, 18000], of which three queues use the first two), in GPU-seconds as its
  // dlas-gpu scheme compares them.
  std::vector<std::int64_t> las_thresholds = {3250, 7200};

  // Preemption: a running job is never a victim before it has run this long.
  bool preemption = true;
  DurationMs min_run_time = 0;
  // Time a preempted job's workers get between SIGTERM (and the notice file) and SIGKILL.
  DurationMs preemption_grace = 30'000;

  // EASY backfill: the first job that does not fit holds a reservation; later jobs start
  // ahead of it only if their time limit ends before the reservation or they avoid its nodes.
  bool backfill = true;

  Accounts accounts;

  friend bool operator==(const Policy&, const Policy&) = default;
};

// The executor of leaf queue `queue`: the nearest setting on its path from the root; local when
// none sets one or the queue is not in the policy. The reference lives as long as `policy` (the
// local executor's: always); copy it to keep it past a policy change.
const ExecutorConfig& ExecutorOf(const Policy& policy, std::string_view queue);

// The Unix account `user`'s jobs run as: policy.accounts.map's entry for `user`, else `user`
// itself ("" for "": the agent's own account).
std::string UnixAccountFor(const Policy& policy, std::string_view user);
// Whether policy.accounts.allow_root lists `user` (never for "").
bool MayRunAsRoot(const Policy& policy, std::string_view user);

}  // namespace drover::model
