#pragma once

// Placement of one job against a ClusterState: Plan (where every worker goes, changing nothing)
// and Commit (mark it used), shared by RunCycle, TryPlace, Explain and the scheduling engine.
// Internal to drover/sched. The algorithms are described in scheduler.h (file comment) and, for
// users, in docs/scheduling.md.

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "drover/model/job_spec.h"
#include "drover/model/policy.h"
#include "drover/sched/cluster_index.h"
#include "drover/sched/scheduler.h"

namespace drover::sched::internal {

// What one worker needs, with negative quantities read as 0.
struct Demand {
  GpuMode mode = GpuMode::kNone;
  int gpus = 0;  // whole GPUs (kWhole)
  std::int64_t cpu = 0;
  std::int64_t memory = 0;
  int share_millis = 0;           // kTimeslice: 1..1000
  std::int64_t share_memory = 0;  // kTimeslice: GPU memory set aside (gpu_memory_bytes)
  std::string mig_profile_lower;  // kMig
};

Demand PerWorker(const model::JobSpec& spec);
// spec.workers, at least 1.
int GangSize(const model::JobSpec& spec);

// How many workers of `demand` fit in the free capacity of node `pos` now, at most `limit`.
// Whole GPUs count free exclusive GPUs that pass `filter`; a share counts, over the node's
// timeslice GPUs that pass it, min(free milli-shares / share, free share memory / memory); a
// MIG instance counts free instances of the profile. CPU and memory bound every mode. With an
// all-zero demand every node holds `limit`.
int Capacity(const ClusterImpl& impl, int pos, const StaticFilter& filter, const Index* index,
             const Demand& demand, int limit);

// The workload the fragmentation score expects (FGD's target workload): request shapes and
// their weights (probabilities; they need not sum to 1).
struct WorkloadMix {
  // gpus > 0: whole GPUs; else gpu_share_millis > 0: a time-sliced share; else CPU only.
  struct Shape {
    int gpus = 0;
    std::int64_t cpu = 0;
    std::int64_t memory = 0;
    int gpu_share_millis = 0;
    double weight = 1.0;

    friend bool operator==(const Shape&, const Shape&) = default;
  };
  std::vector<Shape> shapes;
};
using Shape = WorkloadMix::Shape;

// The mix of `specs` (one shape per distinct per-worker request; weight = its share of the
// workers). MIG requests are left out (see Fragmentation).
WorkloadMix MixOf(const std::vector<const model::JobSpec*>& specs);

// FGD's fragmentation of one node for `mix`, in milli-GPUs:
//   F(node) = sum over shapes m of weight_m * (the free GPU amount on the node that m cannot
//   use: all of it if m does not fit on the node (GPU count, CPU or memory); otherwise the
//   partial GPUs: for a whole-GPU or CPU-only m the free milli-shares of timeslice GPUs (m
//   cannot use those), for a share m the free exclusive GPUs plus the timeslice leftovers
//   smaller than m's share).
// The free GPU amount is 1000 per free exclusive GPU plus the free milli-shares of timeslice
// GPUs; MIG GPUs are preconfigured and do not count.
double Fragmentation(const ClusterImpl& impl, int pos, const WorkloadMix& mix);
// The sum over every node.
double Fragmentation(const ClusterImpl& impl, const WorkloadMix& mix);

// How Plan chooses among feasible nodes.
struct PlanOptions {
  // kBinpack: the best fit (fewest free GPUs, then CPU, then memory after placement);
  // kSpread: the most free; kFragmentation: the least growth of Fragmentation (FGD).
  model::Scoring scoring = model::Scoring::kBinpack;
  // By node position: 1 = must not be used (e.g. nodes reserved for a blocked job). Positions
  // past its end are usable. Borrowed; may be null.
  const std::vector<char>* excluded = nullptr;
  // The workload FGD scores against; null: the job's own shape. Borrowed; may be null.
  const WorkloadMix* mix = nullptr;
};

struct PlannedGang {
  std::vector<WorkerAssignment> workers;   // ranks 0..n-1, grouped by node
  std::vector<std::pair<int, int>> nodes;  // (node position, workers on it), in rank order
  // Feasible nodes the search evaluated: every feasible node when it scans (no index, label
  // preferences, a topology domain, shares); with an index only the nodes it looked at (one per
  // chosen node for binpack; the representatives for FGD; the top node and the already chosen
  // ones for spread), so that a cycle never pays for counting.
  int candidates = 0;
  // The mean over workers of (sum of the weights of the worker node's matching preferred
  // labels + the policy term): binpack the fraction of the node's GPUs (CPU-only: CPU; shares:
  // the chosen GPU's shares or instances) in use after placement, spread 1 minus that,
  // fragmentation minus the growth of Fragmentation in GPUs.
  double score = 0.0;
};

// Where every worker of `spec` goes, or nullopt if the gang does not fit now. `index` is the
// index of `filter` or null (then the eligible nodes are scanned). Changes nothing. With the
// default options the result is RunCycle's choice.
std::optional<PlannedGang> Plan(const ClusterImpl& impl, const StaticFilter& filter,
                                const Index* index, const model::JobSpec& spec,
                                const PlanOptions& options = {});

// Marks `gang` (a Plan of `spec` against this same state, with nothing changed since) as used,
// without re-validation.
void Commit(ClusterImpl& impl, const PlannedGang& gang, const model::JobSpec& spec);

// A key equal for two specs exactly when they ask for the same thing (the static filter, the
// models as written, per-worker resources and shares, gang size, shape and the required
// topology level): such jobs get the same feasibility and the same pending reason against the
// same state.
std::string DemandKey(const StaticFilter& filter, const model::JobSpec& spec);

}  // namespace drover::sched::internal

namespace drover::sched {

// TryPlace with placement options (scoring, excluded nodes, workload mix): the placement Plan
// chooses, using an existing index of the job's filter (scanning otherwise). Changes nothing.
std::optional<Placement> TryPlace(const ClusterState& cluster, JobId job,
                                  const model::JobSpec& spec, const internal::PlanOptions& options);

}  // namespace drover::sched
