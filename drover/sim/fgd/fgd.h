#pragma once

// The FGD experiment (Weng et al., "Beware of Fragmentation: Scheduling GPU-Sharing Workloads
// with Fragmentation Gradient Descent", USENIX ATC'23, section 6), run on Drover's own
// scheduler (sched::TryPlace with a model::Scoring) rather than a copy of it:
//   1. The typical tasks are the pod shapes that cover 95% of the original pods
//      (sched::TypicalMix); fragmentation is measured against them. (Drover's `fgd` policy
//      scores placements against every pod shape, not only the typical ones, by popularity,
//      and counts GPUs a node's free CPU cannot feed; see fgd.cc and sched/fragmentation.h.)
//   2. With a generator seeded by the run's seed, the pods are shuffled; then pods drawn from
//      the original list are appended (or random ones removed) until the arrived GPU demand is
//      `inflate` x the cluster's GPU capacity (the paper's workload tuning).
//   3. The pods are placed one at a time and never leave. After each arrival the experiment
//      records the arrived GPU demand, the allocated GPUs and the cluster's fragmentation, all
//      in percent of GPU capacity.
//   4. The series is discretized as the paper's analysis does: the value at integer demand k is
//      the mean over arrivals whose demand rounds to k (if none, those within k-1..k+1).
// Ties between equally scored nodes are broken by the same generator, uniformly (the
// kube-scheduler's rule), so a run is a deterministic function of its inputs and seed.

#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "drover/common/result.h"
#include "drover/model/node.h"
#include "drover/sim/trace/trace.h"

namespace drover::sim {

// The most GPU demand an experiment may arrive, as a multiple of the cluster's GPU capacity
// (the paper stops at 1.3; past 10 the cluster is long full and the run only costs time).
inline constexpr double kMaxFgdInflate = 10.0;

struct FgdOptions {
  // A name of FgdPolicyNames(), or "" for the server's default placement policy.
  std::string policy;
  std::uint64_t seed = 42;
  int seeds = 1;  // runs with seed, seed+1, ...; the result averages them
  double inflate = 1.3;
  std::string workload;  // a label for the report, e.g. the pod file's stem
  bool timing = true;    // include wall_seconds (the rest of the JSON is byte-stable)
  // The paper's published results (fgd-expected-results: analysis_allo_discrete.csv and its
  // siblings); "" = none. When set, the result carries the published curves of `workload` for
  // the policy.
  std::string published_dir;
};

// random, best-fit, dot-product, gpu-packing, gpu-clustering, fgd (Drover's fragmentation
// scoring); binpack and spread (the server's own orders) are accepted too.
const std::vector<std::string>& FgdPolicyNames();

// Runs the experiment (see the file comment). kInvalidArgument for an unknown policy, no GPU
// capacity, an inflate outside (0, kMaxFgdInflate] or seeds < 1. The JSON has "experiment": "fgd",
// "workload", "policy", "seeds", "inflate", "nodes", "total_gpus", "pods_arrived",
// "pods_placed", "pods_failed", "allocation_ratio_at", "fragmentation_at",
// "fragmentation_ratio_at" (maps from the integer demand percent "0".."130" to percent),
// "published" (when found), "runs" (per seed, when seeds > 1) and "wall_seconds" (timing).
Result<nlohmann::json> RunFgdExperiment(const std::vector<model::Node>& nodes,
                                        const std::vector<TraceJob>& pods,
                                        const FgdOptions& options);

// The published mean curves (over seeds) of `workload` for `policy` from `dir`:
// {"policy": "06-FGD", "seeds": 10, "allocation_ratio_at": {...}, "fragmentation_at": {...},
// "fragmentation_ratio_at": {...}}. kNotFound if the files or the rows are missing.
Result<nlohmann::json> LoadPublishedFgd(const std::string& dir, const std::string& workload,
                                        const std::string& policy);

}  // namespace drover::sim
