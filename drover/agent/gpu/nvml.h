#pragma once

// GPU discovery through NVML, loaded at run time with dlopen so that Drover builds and runs on
// machines without the NVIDIA driver (no CUDA headers or libraries at build time).

#include <memory>
#include <string>
#include <vector>

#include "drover/common/clock.h"
#include "drover/common/result.h"
#include "drover/model/node.h"
#include "drover/model/usage.h"

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

// How an NvmlSampler spends its calls.
struct NvmlSamplerOptions {
  // How often each GPU's energy counter is read from the driver: in between, the last value plus
  // power times time (EnergyCounter, which says why).
  DurationMs energy_read_interval_ms = 30'000;
};

// Reads what each GPU does (docs/observability.md, "Sampling"), keeping the library loaded and
// NVML initialized from Open until destruction. Per GPU: nvmlDeviceGetUtilizationRates,
// nvmlDeviceGetMemoryInfo, nvmlDeviceGetPowerUsage, nvmlDeviceGetTemperature and
// nvmlDeviceGetClockInfo (SM) at every sample, nvmlDeviceGetTotalEnergyConsumption on its
// interval (EnergyCounter); per process on it nvmlDeviceGetComputeRunningProcesses (_v3, else
// _v2) at every sample, and when asked nvmlDeviceGetProcessUtilization (its SM share, the mean
// of the driver's samples since the previous such read); and, on a device that supports GPU
// Performance Monitoring (nvmlGpmQueryDeviceSupport: Hopper and newer), the GPM metrics SM
// activity, SM occupancy, tensor activity and DRAM bandwidth between consecutive samples
// (nvmlGpmSampleGet, nvmlGpmMetricsGet; GpuSample::gpm, unset on other devices and on a
// device's first sample). A function the library lacks or the device refuses (not supported, no
// permission) leaves its value at -1. Not thread-safe: one sampling thread owns an instance.
class NvmlSampler {
 public:
  // kUnavailable as DiscoverNvml (library, a required symbol, nvmlInit, the device list).
  static Result<std::unique_ptr<NvmlSampler>> Open(const std::string& library = kNvmlLibrary,
                                                   NvmlSamplerOptions options = {});
  ~NvmlSampler();
  NvmlSampler(const NvmlSampler&) = delete;
  NvmlSampler& operator=(const NvmlSampler&) = delete;

  // Whether a sample reads each GPU process's SM share (`sm_pct`; -1 when skipped):
  // nvmlDeviceGetProcessUtilization costs about 1.4 ms of CPU per GPU with processes on an H200
  // (docs/benchmarks.md), so the agent reads it with its process trees, not every GPU sample.
  enum class ProcessShares { kSkip, kRead };

  // Appends one sample per GPU (index order; `worker` unset) and the processes on each, taken at
  // steady time `steady_ms` (monotonic, never decreasing: the energy figure integrates over it).
  void Sample(std::int64_t steady_ms, ProcessShares shares, std::vector<model::GpuSample>& gpus,
              std::vector<model::GpuProcessSample>& processes);
  std::size_t gpu_count() const;
  // The GPUs whose GPM metrics are read (the rest report NVML utilization only).
  std::size_t gpm_gpu_count() const;

 private:
  struct State;
  explicit NvmlSampler(std::unique_ptr<State> state);
  std::unique_ptr<State> state_;
};

}  // namespace drover::agent
