#pragma once

// The cluster and jobs the scheduling benchmarks share (placement_bench, policy_bench).

#include <cstdint>
#include <cstdio>
#include <random>
#include <string>
#include <vector>

#include "drover/model/job_spec.h"
#include "drover/model/node.h"
#include "drover/sched/engine.h"

namespace drover::bench {

inline constexpr std::int64_t kGi = std::int64_t{1} << 30;

// `count` nodes "node-00000".. of 128 CPUs, 1 TiB and `gpus_per_node` GPUs of 80 GB (every
// fourth node A100, the others H100; two NVLink groups per node), labelled pool (a/b
// alternating), rack (20 nodes each) and block (32 nodes each).
inline std::vector<model::Node> MakeNodes(int count, int gpus_per_node) {
  std::vector<model::Node> nodes;
  nodes.reserve(count);
  for (int i = 0; i < count; ++i) {
    model::Node node;
    char name[32];
    std::snprintf(name, sizeof(name), "node-%05d", i);
    node.name = NodeId(name);
    node.cpu_millis = 128'000;
    node.memory_bytes = 1024 * kGi;
    node.labels = {{"pool", i % 2 == 0 ? "a" : "b"},
                   {"rack", "r" + std::to_string(i / 20)},
                   {"block", "b" + std::to_string(i / 32)}};
    for (int g = 0; g < gpus_per_node; ++g) {
      model::Gpu gpu;
      gpu.index = g;
      gpu.model = i % 4 == 3 ? "A100" : "H100";
      gpu.memory_bytes = 80 * kGi;
      gpu.topology_group = g < gpus_per_node / 2 ? "nvl0" : "nvl1";
      node.gpus.push_back(gpu);
    }
    nodes.push_back(std::move(node));
  }
  return nodes;
}

// A gang of `workers` workers of `gpus` GPUs, 4 CPUs and 32Gi per GPU each, in queue "default".
inline model::JobSpec MakeSpec(int gpus, int workers) {
  model::JobSpec spec;
  spec.name = "bench";
  spec.command = {"true"};
  spec.workers = workers;
  spec.min_workers = workers;
  spec.requirements.per_worker = {4'000 * gpus, 32 * kGi * gpus, gpus};
  return spec;
}

// `count` jobs drawn at random (seed 42) from `specs`, with ids 1..count, priorities 0, 100 or
// 200 and enqueue times 0..count-1. `specs` must outlive the result.
inline std::vector<sched::PendingJob> RandomMix(const std::vector<model::JobSpec>& specs,
                                                int count) {
  std::mt19937 rng(42);
  std::vector<sched::PendingJob> pending;
  pending.reserve(count);
  for (int i = 0; i < count; ++i) {
    const model::JobSpec* spec = &specs[rng() % specs.size()];
    pending.push_back({JobId(i + 1), static_cast<int>(rng() % 3) * 100, i, spec});
  }
  return pending;
}

}  // namespace drover::bench
