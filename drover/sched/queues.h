#pragma once

// The queue tree of a Policy at run time: quotas with borrowing and lending, concurrency
// limits, and fair share with decaying usage (docs/scheduling.md). Pure: time is a parameter.
//
// Tree: every QueueConfig is a node; jobs are charged to a leaf and, through it, to each of its
// ancestors (a node's usage is the sum of its subtree's). Node 0 is a synthetic root above the
// configured roots; it has no quota and no siblings.
//
// Quota (Kueue's cohort model, applied at every level): for each governed resource r (one that
// some queue sets in `nominal`), a node n with nominal N, lending limit L (default N) and
// borrowing limit B (default unlimited), where N is what n sets; if n does not set r, N is 0 for
// a leaf and the sum of its children's N for a queue with children (a grouping queue without a
// quota of its own is as large as its children together, as a Kueue cohort without quota):
//   - n's own bound: usage(n) <= N + B;
//   - n's siblings form a cohort under their parent p: the part of each member's usage above its
//     protected amount (N - L) comes out of the cohort's pool, the sum of the members' L:
//       sum over members m of max(0, usage(m) - (N_m - L_m)) <= sum over members of L_m.
// A charge is admitted when both hold, after adding it, for its leaf and every ancestor. A
// member that uses more than N borrows; a member whose unused N is used by others lends.
// Only the resources a charge asks for are checked (a node already above a bound, e.g. after
// the policy changed, still admits charges that do not add to that resource). The cohort pool is
// the members' lending limits only: a parent that sets a nominal caps its subtree (its own bound
// and its own cohort) but does not lend it to its children, so a subtree borrows from the
// parent's siblings only as far as its children's nominals add up to more than the parent's.
// The configured roots form the cohort under node 0.
//
// Concurrency limits (Policy::QueueConfig::limits, user_limits, Policy::pipeline_limits): after
// adding the charge, running jobs and each limited resource stay within each limit that applies:
// the limits of the leaf and each ancestor, the user_limits of each of them for the job's user,
// and the pipeline limits for its pipeline (none when the pipeline is empty).
//
// Fair share: each node keeps decayed usage H_r (resource-milliseconds, halved every
// half-life) accrued by Advance(). Its share is
//   (max_r usage_r / capacity_r + max_r H_r / (capacity_r * half_life / ln 2)) / weight,
// both terms fractions of the cluster (dominant resource fairness). Users within a leaf have
// shares computed the same way with weight 1. Lower share goes first.
// Advance(now) takes the usage held at the call as held since the previous call:
//   H_r <- H_r * 2^(-dt/half_life) + usage_r * (half_life / ln 2) * (1 - 2^(-dt/half_life)),
// so a constant usage u converges to H = u * half_life / ln 2 (the history term then equals the
// current-usage term). r ranges over the resources with a positive capacity in the last
// Advance(); before the first one every share is 0. Half-life 0: H stays 0.
// Each record computes this lazily, over the time since its usage last changed (equal to the
// step-by-step accrual up to rounding), so that Advance costs nothing per record. A user of a
// leaf who holds nothing keeps its record (whose history reads 0 once below one
// resource-millisecond) until a release or RestoreHistory finds it empty: at most one record
// per user who ran in the leaf.
// The history outlives a tree as a model::FairShareHistory (History, RestoreHistory): by queue
// path and by (leaf path, user), so that a new tree of another policy takes each queue's history
// by name (docs/scheduling.md, "Fair share").
// Costs: CheckAdmit, Add and Remove are O(depth x resources in the charge) (a hash lookup of the
// user per level that tracks users, and of the pipeline); Share O(resources); Before
// O(depth + resources); Advance O(1) (the first one O(nodes + users)); Status and History
// O(nodes + users) x resources.
//
// Not thread-safe. Copyable: the engine copies it to try preemptions.

#include <cstdint>
#include <limits>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

#include "drover/common/clock.h"
#include "drover/common/result.h"
#include "drover/model/fair_share.h"
#include "drover/model/job_spec.h"
#include "drover/model/policy.h"
#include "drover/sched/flat_amounts.h"

namespace drover::sched {

// What one running job counts against its queues and limits.
struct Charge {
  int leaf = 0;  // node id of the job's leaf queue
  std::string user;
  std::string pipeline;
  FlatAmounts amounts;  // "cpu", "memory", "gpu", "gpu:<model>" (see policy.h)

  friend bool operator==(const Charge&, const Charge&) = default;
};

// The amounts a job of `spec` charges when it runs on GPUs of `gpu_model` (any case; empty when
// it asks for no GPU or the model is not known yet, then no "gpu:<model>" entry): workers x
// per-worker cpu, memory and milli-GPUs (gpus * 1000, gpu_share_millis, or a MIG profile
// "<g>g.<mem>" as g * 1000 / 7, rounded down per worker). Amounts that would be 0 are omitted.
FlatAmounts ChargeAmounts(const model::JobSpec& spec, std::string_view gpu_model);

// Why a charge is not admitted, or kOk.
struct AdmitVerdict {
  enum class Code {
    kOk,
    kQuota,   // a node's own bound (nominal + borrowing limit) would be exceeded
    kCohort,  // the cohort has not enough unused quota left to lend
    kLimit,   // a concurrency limit would be exceeded
  };
  Code code = Code::kOk;
  // Where it stops: "queue team-a", "cohort of org/team-a", "user alice in queue team-a",
  // "pipeline nightly".
  std::string scope;
  std::string resource;  // "cpu", "memory", "gpu", "gpu:h100", or "jobs" (running jobs)
  // kQuota, kLimit: used in that scope now, what the charge adds, the bound (for kQuota
  // nominal + borrowing limit). kCohort: what the members draw from the cohort's pool now (the
  // sum of their usage above their protected amounts), what the charge adds to that, the pool
  // (the sum of the members' lending limits).
  std::int64_t used = 0;
  std::int64_t requested = 0;
  std::int64_t limit = 0;
  std::int64_t nominal = 0;  // kQuota: the node's nominal (limit - nominal = borrowing limit)
  // kQuota, kCohort: the queue whose members lend to each other (the parent's path, "org"), or
  // empty when the queue is a top-level one.
  std::string lender;

  bool ok() const { return code == Code::kOk; }
  // One sentence in plain words: what is in use against what is allowed, then what the job
  // needs, e.g. "queue org/team-b is using 7 of its 7 GPUs; it may borrow 1 more from org;
  // this job needs 2 GPUs", "the queues under org lend each other 6 GPUs: 6 are borrowed now,
  // and this job would borrow 1 more", "user alice in queue org is using 3 of at most 4 GPUs;
  // this job needs 2 GPUs", "queue a is running 2 of at most 2 jobs". GPUs print in whole
  // units when whole ("2500m" otherwise), cpu and memory as quantities.
  std::string Render() const;
  friend bool operator==(const AdmitVerdict&, const AdmitVerdict&) = default;
};

// One row of `drover queues`. nominal lists every governed resource (N as defined above: 0 for a
// leaf that does not set it, the children's sum for a grouping queue); usage every governed
// resource and any other with a positive usage; borrowed and lent only positive amounts.
struct QueueStatus {
  int node = 0;
  std::string name;
  std::string path;  // "org/team-a/queue"
  int depth = 0;     // configured roots are 0
  bool leaf = false;
  double weight = 1.0;
  model::ResourceAmounts nominal;
  model::ResourceAmounts usage;
  model::ResourceAmounts borrowed;  // usage above nominal
  // Own unused nominal that siblings use now. What a cohort's members borrow (their usage above
  // nominal, summed) is split among the members that have unused lendable quota
  // (min(lending limit, nominal - usage)) in proportion to it, largest remainders rounding up,
  // so the lent amounts add up to the borrowed ones.
  model::ResourceAmounts lent;
  double share = 0.0;
  std::int64_t running_jobs = 0;
};

class QueueTree {
 public:
  // The tree of an empty policy: one leaf "default" without quota or limits.
  QueueTree();
  // kInvalidArgument naming the queue path and field if the policy is malformed: duplicate leaf
  // name (or two siblings of one name), an empty name, weight <= 0, a negative amount or
  // max_running_jobs, lending limit above nominal, a resource name other than "cpu", "memory",
  // "gpu" and "gpu:<model>" (lower case), a borrowing limit of a resource no queue sets a
  // nominal of (it would limit nothing). Pipeline limits are named "pipeline_limits".
  static Result<QueueTree> Create(const model::Policy& policy);

  // The node id of the leaf named `name` (with an empty policy: "default"); nullopt if none.
  std::optional<int> FindLeaf(std::string_view name) const;
  // Leaf names, in tree order.
  std::vector<std::string> LeafNames() const;
  const std::string& Name(int node) const;
  // "org/team-a/queue" (kept per node: verdicts name it for every refused job of a cycle).
  const std::string& Path(int node) const;
  // True if some queue sets a nominal amount of `resource`.
  bool Governs(std::string_view resource) const;
  // True if some queue sets a nominal amount of a "gpu:<model>" flavor.
  bool GovernsAnyModel() const;

  // Whether `charge` may be admitted now (quota, then concurrency limits; the first failure
  // found from the leaf upwards).
  AdmitVerdict CheckAdmit(const Charge& charge) const;
  // CheckAdmit of the charge of a job of `spec` in `leaf` on GPUs of `gpu_model` (see
  // ChargeAmounts) without building it: a cycle asks this of every pending job, and most of a
  // large backlog is refused.
  AdmitVerdict CheckAdmit(int leaf, const model::JobSpec& spec, std::string_view gpu_model) const;
  // Records a job starting / ending. Remove of a charge never added is a caller bug (usage
  // never goes below zero).
  void Add(const Charge& charge);
  void Remove(const Charge& charge);

  // True if usage(leaf) + amounts <= nominal(leaf) for every governed resource the amounts ask
  // for (a positive amount): the charge stays within what the leaf is guaranteed (a job that
  // does so may reclaim lent quota). Ungoverned resources and ancestors are not considered.
  bool WithinNominal(int leaf, const FlatAmounts& amounts) const;
  // True if the leaf or an ancestor uses more than its nominal of `resource` now.
  bool Borrowing(int leaf, std::string_view resource) const;

  // Accrues usage into the decayed history up to `now` (no-op if now <= the last call) and
  // records the cluster capacity shares are fractions of. O(1): each record accrues when its
  // usage next changes or is read (see "Fair share" above).
  void Advance(TimeMs now, const model::ResourceAmounts& capacity);
  // The same, keeping the capacity of the last call that gave one: for accruing at each change
  // of usage, where the capacity is not needed.
  void Advance(TimeMs now);
  double Share(int node) const;
  // The decayed usage of every queue and of every user in a leaf, as of the last Advance()
  // (advanced_at unset before the first): nothing accrued since is in it.
  model::FairShareHistory History() const;
  // Replaces this tree's history with `history`'s, matching queues by path and users by name
  // within a leaf, and takes history.advanced_at as the time of the last Advance() (the next
  // one accrues from there). Entries of a path this tree has no queue of are dropped, as are
  // user entries of a path that is not a leaf here and amounts that are not finite and positive.
  // Returns the paths whose history was dropped that way, sorted, each once. Current usage is
  // not touched. O(entries x (depth + resources)).
  std::vector<std::string> RestoreHistory(const model::FairShareHistory& history);
  // 0 for a user with nothing running and no history in the leaf.
  double UserShare(int leaf, std::string_view user) const;
  // True if leaf `a` goes before leaf `b`: at the level where their paths part, a's ancestor
  // (or a) has the lower share; ties by name. False when a == b. A strict weak order.
  bool Before(int a, int b) const;

  // Every node but node 0, in tree order (pre-order, children in policy order).
  std::vector<QueueStatus> Status() const;

 private:
  static constexpr std::int64_t kUnlimited = std::numeric_limits<std::int64_t>::max();

  // Limits with resources by index (see resource_index_).
  struct DenseLimits {
    std::optional<std::int64_t> max_running_jobs;
    std::vector<std::pair<int, std::int64_t>> max_resources;
    bool empty() const { return !max_running_jobs && max_resources.empty(); }
  };
  // What one scope holds: a node's subtree, a user within a node, a pipeline.
  struct UsageRecord {
    std::vector<std::int64_t> usage;  // by resource index; an index past the end is 0
    // Decayed usage in resource-milliseconds, by index, as of accrued_at. Only the records that
    // accrue (a node's own, a leaf's users) are brought forward: lazily, when their usage
    // changes (Apply) and, without being stored, when read (ShareOf, History).
    std::vector<double> history;
    TimeMs accrued_at = 0;
    std::int64_t running_jobs = 0;
  };
  // The decay from `from` to the last Advance(): what a history keeps of itself and what one
  // unit of usage held throughout adds (keep 1, gain 0 when nothing elapsed).
  struct Decay {
    double keep = 1.0;
    double gain = 0.0;
  };
  Decay DecaySince(TimeMs from) const;
  // `history` of a resource with `usage` held throughout `decay`; below one resource-millisecond
  // with no usage it is 0 (it no longer matters).
  static double Decayed(double history, std::int64_t usage, const Decay& decay);
  // Brings an accruing record's history up to the last Advance() (its usage held since).
  void Accrue(UsageRecord& record) const;
  // Takes every record's history as accrued up to `at` (the first Advance, RestoreHistory).
  void MarkAccruedAt(TimeMs at);
  struct Node {
    std::string name;
    std::string path;  // names from the configured root down, '/'-separated; "" for node 0
    int parent = -1;   // -1 for node 0
    int depth = 0;     // node 0 is 0, configured roots 1
    std::vector<int> children;
    double weight = 1.0;
    // By governed resource index [0, governed_):
    std::vector<std::int64_t> nominal;
    std::vector<std::int64_t> lending;   // lending limit (<= nominal)
    std::vector<std::int64_t> bound;     // nominal + borrowing limit, or kUnlimited
    std::vector<std::int64_t> pool;      // as a parent: sum of the children's lending limits
    std::vector<std::int64_t> pool_use;  // as a parent: sum of max(0, usage - protected)
    DenseLimits limits;
    DenseLimits user_limits;
    bool track_users = false;  // leaves (for user shares) and nodes with user_limits
    UsageRecord own;
    std::unordered_map<std::string, UsageRecord> users;
  };
  // A charge's non-zero amounts of resources this tree knows, by index.
  using DenseAmounts = std::vector<std::pair<int, std::int64_t>>;

  // Appends the node of `config` (and its subtree) under `parent`, validating it, and each
  // node's config to `configs` (by node id); Create then settles the quota amounts.
  drover::Status AddNode(const model::QueueConfig& config, int parent,
                         std::vector<const model::QueueConfig*>& configs);
  int Intern(const std::string& resource);
  // capacity_ from `capacity`, its resources interned.
  void SetCapacity(const model::ResourceAmounts& capacity);
  DenseAmounts Known(const FlatAmounts& amounts) const;
  DenseAmounts Intern(const FlatAmounts& amounts);
  AdmitVerdict CheckAdmit(int leaf, const std::string& user, const std::string& pipeline,
                          const DenseAmounts& amounts) const;
  std::optional<AdmitVerdict> CheckQuota(int node, const DenseAmounts& amounts) const;
  // A kLimit verdict without scope if `record` (nullptr: nothing held) plus the charge would
  // exceed `limits`.
  std::optional<AdmitVerdict> CheckLimits(const DenseLimits& limits, const UsageRecord* record,
                                          const DenseAmounts& amounts) const;
  void Apply(const Charge& charge, int sign);
  double ShareOf(const UsageRecord& record, double weight) const;
  bool IsLeaf(int node) const;

  std::vector<Node> nodes_;
  std::vector<std::string> resource_names_;                 // by index
  std::map<std::string, int, std::less<>> resource_index_;  // name -> index
  int governed_ = 0;  // governed resources are the indices [0, governed_)
  std::map<std::string, int, std::less<>> leaves_;  // leaf name -> node id
  DenseLimits pipeline_limits_;
  std::unordered_map<std::string, UsageRecord> pipelines_;  // only with pipeline limits
  DurationMs half_life_ = 0;
  std::optional<TimeMs> last_advance_;
  std::vector<std::int64_t> capacity_;     // by resource index, from Advance()
  model::ResourceAmounts capacity_given_;  // as the last Advance() that gave one gave it
};

}  // namespace drover::sched
