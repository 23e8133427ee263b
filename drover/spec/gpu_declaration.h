#pragma once

// Declared GPU inventories: what an operator writes for a node whose GPUs are not discovered
// (no NVML, a simulated cluster, a node file): the `--gpus` declaration, GPU memory sizes and
// the default memory of known models.

#include <cstdint>
#include <optional>
#include <string_view>
#include <vector>

#include "drover/common/result.h"
#include "drover/model/node.h"

namespace drover::spec {

// Parses "COUNTxMODEL[-MEMORY][:SHARING]" entries separated by commas:
//   "8xH100-80GB", "2xA100-40GB,2xV100-16GB", "4xH200", "6xH100-80GB,2xH100-80GB:timeslice".
// "" and "0" mean no GPUs. MEMORY follows ParseGpuMemory ("80GB" is 80 GiB); without it the
// model's default (DefaultGpuMemoryBytes) is used and a model without one is an error. The GPUs
// get indices 0..n-1 in order, uuid "GPU-declared-<index>", model as written, and topology group
// "g<entry>" (all GPUs of one entry share a group: "g0", "g1", ...). SHARING is exclusive (the
// default) or timeslice (model::GpuSharing); MIG GPUs need a layout and so a node file
// (node_file.h).
// Errors: kInvalidArgument naming the entry and its column, e.g.
//   "GPU entry 2 '2xV100-16XB' (column 13): memory: unknown unit ...".
Result<std::vector<model::Gpu>> ParseGpuDeclaration(std::string_view spec);

// Memory of one GPU of a known model when a declaration leaves it out: H100 80Gi, H200 141Gi,
// A100 80Gi, V100 16Gi, L4 24Gi. nullopt for any other model.
std::optional<std::int64_t> DefaultGpuMemoryBytes(std::string_view model);

// Parses a GPU memory size. GPU vendors write binary sizes with decimal-looking units ("80GB"
// is 80 GiB of HBM), so "G"/"GB" and "T"/"TB" mean GiB/TiB here; every other spelling follows
// ParseBytes ("81559Mi", "80Gi", a bare byte count). kInvalidArgument if malformed or zero.
Result<std::int64_t> ParseGpuMemory(std::string_view text);

}  // namespace drover::spec
