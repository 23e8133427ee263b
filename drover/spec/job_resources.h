#pragma once

// Reading a job's `resources` (cpu, memory, whole GPUs, a time-sliced gpu_share or a MIG
// instance, gpu_memory, gpu_model) and `placement` (node_selector, tolerations, same_node,
// topology, label preferences) into its model::JobSpec. Internal to drover/spec; ParseJob
// (job_parser.h) calls them per job mapping.

#include <optional>

#include "drover/model/job_spec.h"
#include "drover/spec/yaml_reader.h"

namespace drover::spec::internal {

// `resources` (absent: nullopt) into spec.requirements.per_worker, gpu_share_millis,
// mig_profile, gpu_memory_bytes and gpu_models. Without the field, or where a value is invalid,
// a worker asks for 1 CPU, 1 GiB and no GPUs. Reports every problem to `sink`.
void ReadResources(const std::optional<Value>& v, model::JobSpec& spec, Sink& sink);

// `placement` (absent: nullopt) into spec.requirements (node_selector, tolerations, same_node,
// a required topology level) and spec.preferences (a preferred topology level, label
// preferences). Reports every problem to `sink`.
void ReadPlacement(const std::optional<Value>& v, model::JobSpec& spec, Sink& sink);

}  // namespace drover::spec::internal
