#pragma once

// Declared GPU inventories: what an operator writes for a node whose GPUs are not discovered
// (no NVML, a simulated cluster, a node file).

#include <string_view>
#include <vector>

#include "drover/common/result.h"
#include "drover/model/node.h"

namespace drover::agent {

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

}  // namespace drover::agent
