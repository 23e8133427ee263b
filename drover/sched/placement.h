#pragma once

// Placement of one job against a ClusterState: Plan (where every worker goes, changing nothing)
// and Commit (mark it used), shared by RunCycle, TryPlace, Explain and the scheduling engine.
// Internal to drover/sched. The algorithms are described in scheduler.h (file comment) and, for
// users, in docs/scheduling.md.

#include <cstdint>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include "drover/model/job_spec.h"
#include "drover/model/policy.h"
#include "drover/sched/cluster_index.h"
#include "drover/sched/cluster_state.h"
#include "drover/sched/fragmentation.h"

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

// The workload the fragmentation score expects (fragmentation.h).
using WorkloadMix = sched::WorkloadMix;
using Shape = WorkloadMix::Shape;
using sched::MixOf;

// Writes node `pos`'s state as a FragmentationCache signature: its free CPU, then the code of
// each exclusive or timeslice GPU (wholly free: 1000; timeslice: its free milli-shares; given
// whole or used: 0), ascending.
void FragmentationSignature(const ClusterImpl& impl, int pos, FragmentationCache& cache,
                            std::vector<std::int64_t>& out);

// How Plan chooses among feasible nodes.
struct PlanOptions {
  // kBinpack: the best fit (fewest free GPUs, then CPU, then memory after placement);
  // kSpread: the most free; kFragmentation: the least growth of fragmentation plus CPU-stranded
  // GPUs (FGD; FragmentationCache::ScoringValue); the other scorings (model::Scoring) score
  // every feasible node for a single-worker job and behave as kBinpack for gangs.
  model::Scoring scoring = model::Scoring::kBinpack;
  // Breaks ties between equally scored nodes uniformly at random (as the kube-scheduler does);
  // null: by node name. kRandom needs it to be random. Borrowed; may be null.
  std::mt19937_64* rng = nullptr;
  // Memo for kFragmentation, bound to `mix`; null: the cluster's own for the mix
  // (ClusterState::Impl::fragmentation_caches). Borrowed.
  FragmentationCache* fragmentation_cache = nullptr;
  // By node position: 1 = must not be used (e.g. nodes reserved for a blocked job). Positions
  // past its end are usable. Borrowed; may be null.
  const std::vector<char>* excluded = nullptr;
  // The workload FGD scores against; null: the job's own shape. Borrowed; may be null.
  const WorkloadMix* mix = nullptr;
  // DemandKey(filter, spec) of the job planned, when the caller has it at hand; null: Plan
  // computes it where it needs it. Borrowed; may be null.
  const std::string* demand_key = nullptr;
};

struct PlannedGang {
  std::vector<WorkerAssignment> workers;   // ranks 0..n-1, grouped by node
  std::vector<std::pair<int, int>> nodes;  // (node position, workers on it), in rank order
  // Feasible nodes the search evaluated: every feasible node when it scans (no index, label
  // preferences, a topology domain, shares, node-scored policies, FGD); with an index only the
  // nodes it looked at (one per chosen node for binpack; the top node and the already chosen
  // ones for spread), so that a cycle never pays for counting.
  int candidates = 0;
  // The mean over workers of (sum of the weights of the worker node's matching preferred
  // labels + the policy term): binpack the fraction of the node's GPUs (CPU-only: CPU; shares:
  // the chosen GPU's shares or instances) in use after placement, spread 1 minus that,
  // fragmentation minus the growth of FragmentationCache::ScoringValue in GPUs.
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
