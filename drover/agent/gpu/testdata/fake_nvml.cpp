// A stand-in for libnvidia-ml.so.1 used by the NVML and sampler tests: by default two H100s and
// one RTX 4090, idle. Built as a shared library by drover/agent/CMakeLists.txt (named .cpp so the
// library glob, which takes *.cc, leaves it out).
//
// Scripted series: when DROVER_FAKE_NVML_SCRIPT names a file, it is read at nvmlInit_v2 (again
// only when the variable changed), one
// directive a line ('#' starts a comment):
//   gpus N                                      N H100s (GPU-fake-0 ...) instead of the default
//   gpu STEP INDEX UTIL MEM_USED POWER_MW ENERGY_MJ   device INDEX's values at step STEP
//   proc STEP INDEX PID SM_PCT MEM_USED         a process on device INDEX at step STEP
//   gpm STEP INDEX SM_ACTIVE SM_OCCUPANCY TENSOR DRAM_BW   device INDEX's GPM metrics (percent,
//                                               decimals allowed) for a period ending at step
//                                               STEP; a device with a gpm line supports GPM
//                                               (nvmlGpmQueryDeviceSupport), the others do not
// Each device has its own step, advanced by every nvmlDeviceGetUtilizationRates call on it (the
// first call reads step 0); a device past its last scripted step repeats the last one, and
// processes are those of the step its last utilization call read. Not thread-safe, like the
// tests that use it.

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <vector>

namespace {

struct GpuValues {
  unsigned util = 0;
  unsigned long long memory_used = 0;
  unsigned power_mw = 0;
  unsigned long long energy_mj = 0;
};
struct ProcessValues {
  unsigned pid = 0;
  unsigned sm_pct = 0;
  unsigned long long memory_used = 0;
};
struct GpmValues {
  double sm_active = 0;
  double sm_occupancy = 0;
  double tensor = 0;
  double dram = 0;
};
struct Device {
  int index = 0;
  std::string name;
  std::string uuid;
  unsigned long long memory_total = 0;
  std::map<int, GpuValues> steps;  // by step
  std::map<int, std::vector<ProcessValues>> processes;
  std::map<int, GpmValues> gpm;  // by step; empty: GPM not supported
  int next_step = 0;
  int current = -1;  // the step the last utilization call read
};

std::vector<Device>& Devices() {
  static std::vector<Device> devices;
  return devices;
}

void Reset(int count, bool defaults) {
  Devices().assign(static_cast<std::size_t>(count), Device{});
  for (int i = 0; i < count; ++i) {
    Device& device = Devices()[static_cast<std::size_t>(i)];
    device.index = i;
    device.name = "NVIDIA H100 80GB HBM3";
    device.memory_total = 85520809984ULL;
    device.uuid = "GPU-fake-" + std::to_string(i);
  }
  if (defaults) {
    const char* uuids[3] = {"GPU-00000000-aaaa", "GPU-11111111-bbbb", "GPU-22222222-cccc"};
    for (int i = 0; i < 3; ++i) Devices()[static_cast<std::size_t>(i)].uuid = uuids[i];
    Devices()[2].name = "NVIDIA GeForce RTX 4090";
    Devices()[2].memory_total = 25757220864ULL;
  }
}

// (Re)loads the devices when DROVER_FAKE_NVML_SCRIPT differs from the last load's (so that the
// handles of an earlier nvmlInit stay valid while it does not change).
void LoadScript() {
  static bool loaded = false;
  static std::string loaded_path;
  const char* env = std::getenv("DROVER_FAKE_NVML_SCRIPT");
  const std::string path = env ? env : "";
  if (loaded && path == loaded_path) return;
  loaded = true;
  loaded_path = path;
  Reset(3, true);
  if (path.empty()) return;
  std::ifstream in(path);
  std::string line;
  while (std::getline(in, line)) {
    std::istringstream words(line.substr(0, line.find('#')));
    std::string directive;
    if (!(words >> directive)) continue;
    int step = 0;
    int index = 0;
    if (directive == "gpus") {
      int count = 0;
      if (words >> count && count >= 0) Reset(count, false);
    } else if (directive == "gpu" && words >> step >> index && index >= 0 &&
               index < static_cast<int>(Devices().size())) {
      GpuValues values;
      words >> values.util >> values.memory_used >> values.power_mw >> values.energy_mj;
      Devices()[static_cast<std::size_t>(index)].steps[step] = values;
    } else if (directive == "proc" && words >> step >> index && index >= 0 &&
               index < static_cast<int>(Devices().size())) {
      ProcessValues values;
      words >> values.pid >> values.sm_pct >> values.memory_used;
      Devices()[static_cast<std::size_t>(index)].processes[step].push_back(values);
    } else if (directive == "gpm" && words >> step >> index && index >= 0 &&
               index < static_cast<int>(Devices().size())) {
      GpmValues values;
      words >> values.sm_active >> values.sm_occupancy >> values.tensor >> values.dram;
      Devices()[static_cast<std::size_t>(index)].gpm[step] = values;
    }
  }
}

// The values of `device`'s current step: the latest scripted step at or before it.
template <typename T>
const T* AtStep(const std::map<int, T>& series, int step) {
  auto it = series.upper_bound(step);
  if (it == series.begin()) return nullptr;
  return &std::prev(it)->second;
}

GpuValues Current(const Device& device) {
  const GpuValues* values = AtStep(device.steps, device.current < 0 ? 0 : device.current);
  return values ? *values : GpuValues{};
}

int Copy(const char* text, char* out, unsigned int length) {
  if (std::strlen(text) + 1 > length) return 7;  // NVML_ERROR_INSUFFICIENT_SIZE
  std::strcpy(out, text);
  return 0;
}

}  // namespace

extern "C" {

struct nvmlDevice_st;
struct nvmlMemory_t {
  unsigned long long total;
  unsigned long long free;
  unsigned long long used;
};
struct nvmlUtilization_t {
  unsigned int gpu;
  unsigned int memory;
};
struct nvmlProcessInfo_t {
  unsigned int pid;
  unsigned long long usedGpuMemory;
  unsigned int gpuInstanceId;
  unsigned int computeInstanceId;
};
struct nvmlProcessUtilizationSample_t {
  unsigned int pid;
  unsigned long long timeStamp;
  unsigned int smUtil;
  unsigned int memUtil;
  unsigned int encUtil;
  unsigned int decUtil;
};

// GPM, laid out as nvml.h 12.x declares it (drover/agent/gpu/nvml.cc).
struct nvmlGpmSample_st {
  const Device* device = nullptr;
  int step = -1;  // the device's step when the sample was taken
};
struct nvmlGpmMetric_t {
  unsigned int metricId;
  int nvmlReturn;
  double value;
  struct {
    char* shortName;
    char* longName;
    char* unit;
  } metricInfo;
};
struct nvmlGpmMetricsGet_t {
  unsigned int version;
  unsigned int numMetrics;
  nvmlGpmSample_st* sample1;
  nvmlGpmSample_st* sample2;
  nvmlGpmMetric_t metrics[98];
};
struct nvmlGpmSupport_t {
  unsigned int version;
  unsigned int isSupportedDevice;
};

static Device* Of(nvmlDevice_st* device) { return reinterpret_cast<Device*>(device); }

int nvmlInit_v2() {
  LoadScript();
  return 0;
}
int nvmlShutdown() { return 0; }
const char* nvmlErrorString(int) { return "fake error"; }
int nvmlSystemGetDriverVersion(char* out, unsigned int length) {
  return Copy("550.54.15", out, length);
}
int nvmlDeviceGetCount_v2(unsigned int* count) {
  *count = static_cast<unsigned int>(Devices().size());
  return 0;
}
int nvmlDeviceGetHandleByIndex_v2(unsigned int index, nvmlDevice_st** device) {
  if (index >= Devices().size()) return 2;  // NVML_ERROR_INVALID_ARGUMENT
  *device = reinterpret_cast<nvmlDevice_st*>(&Devices()[index]);
  return 0;
}
int nvmlDeviceGetName(nvmlDevice_st* device, char* out, unsigned int length) {
  return Copy(Of(device)->name.c_str(), out, length);
}
int nvmlDeviceGetUUID(nvmlDevice_st* device, char* out, unsigned int length) {
  return Copy(Of(device)->uuid.c_str(), out, length);
}
int nvmlDeviceGetMemoryInfo(nvmlDevice_st* device, nvmlMemory_t* memory) {
  memory->total = Of(device)->memory_total;
  memory->used = Current(*Of(device)).memory_used;
  memory->free = memory->total - memory->used;
  return 0;
}
int nvmlDeviceGetUtilizationRates(nvmlDevice_st* device, nvmlUtilization_t* utilization) {
  Device& d = *Of(device);
  d.current = d.next_step++;
  utilization->gpu = Current(d).util;
  utilization->memory = Current(d).util / 2;
  return 0;
}
int nvmlDeviceGetPowerUsage(nvmlDevice_st* device, unsigned int* power) {
  *power = Current(*Of(device)).power_mw;
  return 0;
}
int nvmlDeviceGetTotalEnergyConsumption(nvmlDevice_st* device, unsigned long long* energy) {
  *energy = Current(*Of(device)).energy_mj;
  return 0;
}
int nvmlDeviceGetTemperature(nvmlDevice_st*, int, unsigned int* temperature) {
  *temperature = 40;
  return 0;
}
int nvmlDeviceGetClockInfo(nvmlDevice_st*, int, unsigned int* clock) {
  *clock = 1980;
  return 0;
}
int nvmlDeviceGetComputeRunningProcesses_v3(nvmlDevice_st* device, unsigned int* count,
                                            nvmlProcessInfo_t* infos) {
  const Device& d = *Of(device);
  const std::vector<ProcessValues>* processes = AtStep(d.processes, d.current < 0 ? 0 : d.current);
  const unsigned needed = processes ? static_cast<unsigned>(processes->size()) : 0;
  if (*count < needed) {
    *count = needed;
    return 7;  // NVML_ERROR_INSUFFICIENT_SIZE
  }
  *count = needed;
  for (unsigned i = 0; i < needed; ++i) {
    infos[i] = nvmlProcessInfo_t{(*processes)[i].pid, (*processes)[i].memory_used, 0, 0};
  }
  return 0;
}
// Like the driver's, the samples newer than `last_seen`: one per process per step, stamped
// step + 1, from the step after the newest one returned (none yet: step 0) to the current one.
int nvmlDeviceGetProcessUtilization(nvmlDevice_st* device, nvmlProcessUtilizationSample_t* samples,
                                    unsigned int* count, unsigned long long last_seen) {
  const Device& d = *Of(device);
  std::vector<nvmlProcessUtilizationSample_t> newer;
  for (int step = static_cast<int>(last_seen); step <= d.current; ++step) {
    const std::vector<ProcessValues>* processes = AtStep(d.processes, step);
    if (processes == nullptr) continue;
    for (const ProcessValues& process : *processes) {
      newer.push_back({process.pid, static_cast<unsigned long long>(step) + 1, process.sm_pct, 0,
                       0, 0});
    }
  }
  if (newer.empty()) return 6;  // NVML_ERROR_NOT_FOUND: no samples
  if (samples == nullptr || *count < newer.size()) {
    *count = static_cast<unsigned>(newer.size());
    return 7;
  }
  *count = static_cast<unsigned>(newer.size());
  std::copy(newer.begin(), newer.end(), samples);
  return 0;
}

int nvmlGpmQueryDeviceSupport(nvmlDevice_st* device, nvmlGpmSupport_t* support) {
  if (support->version != 1) return 25;  // NVML_ERROR_ARGUMENT_VERSION_MISMATCH
  support->isSupportedDevice = Of(device)->gpm.empty() ? 0 : 1;
  return 0;
}
int nvmlGpmSampleAlloc(nvmlGpmSample_st** sample) {
  *sample = new nvmlGpmSample_st;
  return 0;
}
int nvmlGpmSampleFree(nvmlGpmSample_st* sample) {
  delete sample;
  return 0;
}
int nvmlGpmSampleGet(nvmlDevice_st* device, nvmlGpmSample_st* sample) {
  const Device& d = *Of(device);
  if (d.gpm.empty()) return 3;  // NVML_ERROR_NOT_SUPPORTED
  sample->device = &d;
  sample->step = d.current < 0 ? 0 : d.current;
  return 0;
}
// The values scripted for sample2's step, per metric id (2 SM_UTIL, 3 SM_OCCUPANCY,
// 5 ANY_TENSOR_UTIL, 10 DRAM_BW_UTIL); any other id is refused with NVML_ERROR_NOT_SUPPORTED.
int nvmlGpmMetricsGet(nvmlGpmMetricsGet_t* query) {
  if (query->version != 1) return 25;
  if (query->numMetrics > 98 || query->sample1 == nullptr || query->sample2 == nullptr ||
      query->sample1->device != query->sample2->device) {
    return 2;  // NVML_ERROR_INVALID_ARGUMENT
  }
  const GpmValues* values = AtStep(query->sample2->device->gpm, query->sample2->step);
  const GpmValues current = values ? *values : GpmValues{};
  for (unsigned i = 0; i < query->numMetrics; ++i) {
    nvmlGpmMetric_t& metric = query->metrics[i];
    metric.nvmlReturn = 0;
    switch (metric.metricId) {
      case 2:
        metric.value = current.sm_active;
        break;
      case 3:
        metric.value = current.sm_occupancy;
        break;
      case 5:
        metric.value = current.tensor;
        break;
      case 10:
        metric.value = current.dram;
        break;
      default:
        metric.nvmlReturn = 3;
        break;
    }
  }
  return 0;
}

}  // extern "C"
