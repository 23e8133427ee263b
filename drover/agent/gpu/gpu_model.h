#pragma once

// GPU model names: NVML's marketing names reduced to the short names specs and node files use.

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "drover/common/result.h"

namespace drover::agent {

// Reduces a device name as NVML reports it to Drover's short model name:
//   "NVIDIA H100 80GB HBM3" -> "H100", "NVIDIA H200" -> "H200",
//   "NVIDIA A100-SXM4-40GB" -> "A100", "Tesla V100-SXM2-16GB" -> "V100",
//   "NVIDIA GeForce RTX 4090" -> "RTX4090", "NVIDIA L40S" -> "L40S".
// Vendor and family words (NVIDIA, Tesla, GeForce, Quadro) are dropped; the first remaining word
// is cut at its first '-'; "RTX"/"GTX"/"TITAN" is joined with a following model number. An
// empty or unrecognizable name is returned with spaces removed.
std::string NormalizeGpuModel(std::string_view full_name);

// Memory of one GPU of a known model when a declaration leaves it out: H100 80Gi, H200 141Gi,
// A100 80Gi, V100 16Gi, L4 24Gi. nullopt for any other model.
std::optional<std::int64_t> DefaultGpuMemoryBytes(std::string_view model);

// Parses a GPU memory size. GPU vendors write binary sizes with decimal-looking units ("80GB"
// is 80 GiB of HBM), so "G"/"GB" and "T"/"TB" mean GiB/TiB here; every other spelling follows
// ParseBytes ("81559Mi", "80Gi", a bare byte count). kInvalidArgument if malformed or zero.
Result<std::int64_t> ParseGpuMemory(std::string_view text);

}  // namespace drover::agent
