#pragma once

// Builders for scheduler tests. Test-only; header-only so the library does not carry it.

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "drover/model/job_spec.h"
#include "drover/model/node.h"
#include "drover/sched/cluster_state.h"
#include "drover/sched/engine.h"
#include "drover/sched/fragmentation.h"
#include "drover/sched/placement.h"

namespace drover::sched::testing {

inline constexpr std::int64_t kGi = std::int64_t{1} << 30;

// The workload mix of `specs` (MixOf over their addresses).
inline WorkloadMix MixOfSpecs(const std::vector<model::JobSpec>& specs) {
  std::vector<const model::JobSpec*> pointers;
  for (const model::JobSpec& spec : specs) pointers.push_back(&spec);
  return MixOf(pointers);
}

// Plan options for fragmentation scoring against `mix` (null: each job's own shape).
inline internal::PlanOptions Fgd(const WorkloadMix* mix) {
  internal::PlanOptions options;
  options.scoring = model::Scoring::kFragmentation;
  options.mix = mix;
  return options;
}

// A node named `name` with `gpus` GPUs of `model` (indices 0..gpus-1, ungrouped).
inline model::Node MakeNode(const std::string& name, int gpus, const std::string& model = "H100",
                            std::int64_t cpu_millis = 64'000, std::int64_t memory_bytes = 512 * kGi,
                            std::int64_t gpu_memory_bytes = 80 * kGi) {
  model::Node node;
  node.name = NodeId(name);
  node.cpu_millis = cpu_millis;
  node.memory_bytes = memory_bytes;
  for (int i = 0; i < gpus; ++i) {
    model::Gpu gpu;
    gpu.index = i;
    gpu.uuid = "GPU-" + name + "-" + std::to_string(i);
    gpu.model = model;
    gpu.memory_bytes = gpu_memory_bytes;
    node.gpus.push_back(gpu);
  }
  return node;
}

// A job of `workers` workers, each with `gpus` GPUs, 1 CPU and 4Gi memory.
inline model::JobSpec MakeJob(int gpus, int workers = 1, bool same_node = false) {
  model::JobSpec spec;
  spec.name = "job";
  spec.command = {"true"};
  spec.workers = workers;
  spec.min_workers = workers;
  spec.requirements.per_worker = {1000, 4 * kGi, gpus};
  spec.requirements.same_node = same_node;
  return spec;
}

inline model::JobSpec MakeCpuJob(std::int64_t cpu_millis, std::int64_t memory_bytes,
                                 int workers = 1) {
  model::JobSpec spec = MakeJob(0, workers);
  spec.requirements.per_worker = {cpu_millis, memory_bytes, 0};
  return spec;
}

// Requirements of `per_worker` alone (whole GPUs), for Allocate and Release.
inline model::Requirements Req(const model::Resources& per_worker) {
  model::Requirements requirements;
  requirements.per_worker = per_worker;
  return requirements;
}

// A node named `name` with `gpus` GPUs of `model` in `sharing` mode; MIG GPUs are each cut into
// `mig` (e.g. {{"1g.18gb", 7}}).
inline model::Node MakeSharedNode(const std::string& name, int gpus, model::GpuSharing sharing,
                                  std::vector<model::MigSlots> mig = {},
                                  const std::string& model = "H100",
                                  std::int64_t cpu_millis = 64'000,
                                  std::int64_t memory_bytes = 512 * kGi,
                                  std::int64_t gpu_memory_bytes = 80 * kGi) {
  model::Node node = MakeNode(name, gpus, model, cpu_millis, memory_bytes, gpu_memory_bytes);
  for (model::Gpu& gpu : node.gpus) {
    gpu.sharing = sharing;
    if (sharing == model::GpuSharing::kMig) gpu.mig = mig;
  }
  return node;
}

// A job of `workers` workers, each with a `millis` time-sliced GPU share and `gpu_memory` of
// that GPU's memory, 1 CPU and 4Gi memory.
inline model::JobSpec MakeShareJob(int millis, std::int64_t gpu_memory = 0, int workers = 1,
                                   bool same_node = false) {
  model::JobSpec spec = MakeJob(0, workers, same_node);
  spec.requirements.gpu_share_millis = millis;
  spec.requirements.gpu_memory_bytes = gpu_memory;
  return spec;
}

// A job of `workers` workers, each with one MIG instance of `profile`, 1 CPU and 4Gi memory.
inline model::JobSpec MakeMigJob(const std::string& profile, int workers = 1,
                                 bool same_node = false) {
  model::JobSpec spec = MakeJob(0, workers, same_node);
  spec.requirements.mig_profile = profile;
  return spec;
}

// Job `job`'s one worker (rank 0) on GPUs `gpus` of `node`, for Allocate and Release.
inline Placement OneWorker(const std::string& node, std::vector<int> gpus, std::int64_t job = 1) {
  return Placement{JobId(job), {WorkerAssignment{0, NodeId(node), std::move(gpus)}}};
}

inline PendingJob Pending(std::int64_t id, const model::JobSpec& spec, int priority = 0,
                          TimeMs enqueued_at = 0) {
  return PendingJob{JobId(id), priority, enqueued_at, &spec};
}

}  // namespace drover::sched::testing
