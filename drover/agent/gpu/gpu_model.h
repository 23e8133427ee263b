#pragma once

// GPU model names: NVML's marketing names reduced to the short names specs and node files use.
// (A model's default memory and GPU memory sizes are parsed in spec/gpu_declaration.h.)

#include <string>
#include <string_view>

namespace drover::agent {

// Reduces a device name as NVML reports it to Drover's short model name:
//   "NVIDIA H100 80GB HBM3" -> "H100", "NVIDIA H200" -> "H200",
//   "NVIDIA A100-SXM4-40GB" -> "A100", "Tesla V100-SXM2-16GB" -> "V100",
//   "NVIDIA GeForce RTX 4090" -> "RTX4090", "NVIDIA L40S" -> "L40S".
// Vendor and family words (NVIDIA, Tesla, GeForce, Quadro) are dropped; the first remaining word
// is cut at its first '-'; "RTX"/"GTX"/"TITAN" is joined with a following model number. An
// empty or unrecognizable name is returned with spaces removed.
std::string NormalizeGpuModel(std::string_view full_name);

}  // namespace drover::agent
