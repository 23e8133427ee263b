#pragma once

// GPU discovery through NVML, loaded at run time with dlopen so that Drover builds and runs on
// machines without the NVIDIA driver (no CUDA headers or libraries at build time).

#include <string>
#include <vector>

#include "drover/common/result.h"
#include "drover/model/node.h"

namespace drover::agent {

// The library the NVIDIA driver installs.
inline constexpr const char* kNvmlLibrary = "libnvidia-ml.so.1";

struct NvmlGpu {
  model::Gpu gpu;         // model normalized (NormalizeGpuModel); topology_group left empty
  std::string full_name;  // as NVML reports it, e.g. "NVIDIA H100 80GB HBM3"
};

struct NvmlInventory {
  std::string driver_version;  // e.g. "550.54.15"
  std::vector<NvmlGpu> gpus;   // in NVML index order
};

// Loads `library` (a name for the dynamic loader or a path), initializes NVML, lists the GPUs
// and shuts NVML down again. Errors: kUnavailable when the library cannot be loaded, lacks a
// symbol, or NVML fails (no driver, no permission); the message says which and why. Never
// crashes on a machine without GPUs. Thread-safe (NVML reference-counts init/shutdown).
Result<NvmlInventory> DiscoverNvml(const std::string& library = kNvmlLibrary);

// DiscoverNvml(kNvmlLibrary)'s GPUs as model values.
Result<std::vector<model::Gpu>> DiscoverNvmlGpus();

}  // namespace drover::agent
