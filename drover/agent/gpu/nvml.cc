#include "drover/agent/gpu/nvml.h"

#include <dlfcn.h>
#include <fmt/format.h>

#include <algorithm>

#include "drover/agent/gpu/gpu_model.h"

namespace drover::agent {
namespace {

// The subset of nvml.h Drover uses, declared here so no NVIDIA header is needed to build.
using nvmlReturn_t = int;
constexpr nvmlReturn_t kNvmlSuccess = 0;
struct nvmlDevice_st;
using nvmlDevice_t = nvmlDevice_st*;
struct nvmlMemory_t {
  unsigned long long total;
  unsigned long long free;
  unsigned long long used;
};
constexpr unsigned kNameBufferSize = 96;     // NVML_DEVICE_NAME_V2_BUFFER_SIZE
constexpr unsigned kUuidBufferSize = 96;     // >= NVML_DEVICE_UUID_V2_BUFFER_SIZE (96)
constexpr unsigned kVersionBufferSize = 96;  // >= NVML_SYSTEM_DRIVER_VERSION_BUFFER_SIZE (80)

using InitFn = nvmlReturn_t (*)();
using ShutdownFn = nvmlReturn_t (*)();
using GetCountFn = nvmlReturn_t (*)(unsigned int*);
using GetHandleFn = nvmlReturn_t (*)(unsigned int, nvmlDevice_t*);
using GetStringFn = nvmlReturn_t (*)(nvmlDevice_t, char*, unsigned int);
using GetMemoryFn = nvmlReturn_t (*)(nvmlDevice_t, nvmlMemory_t*);
using DriverVersionFn = nvmlReturn_t (*)(char*, unsigned int);
using ErrorStringFn = const char* (*)(nvmlReturn_t);
struct nvmlUtilization_t {
  unsigned int gpu;
  unsigned int memory;
};
// nvmlProcessInfo_v2_t, which _v2 and _v3 of nvmlDeviceGetComputeRunningProcesses fill.
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
constexpr nvmlReturn_t kNvmlInsufficientSize = 7;
constexpr int kNvmlTemperatureGpu = 0;  // NVML_TEMPERATURE_GPU
constexpr int kNvmlClockSm = 1;         // NVML_CLOCK_SM
constexpr unsigned long long kNvmlValueNotAvailable = ~0ULL;
// Processes read per GPU and call; more are left out (a GPU rarely runs more than a few).
constexpr unsigned kMaxProcessesPerGpu = 256;
using UtilizationFn = nvmlReturn_t (*)(nvmlDevice_t, nvmlUtilization_t*);
using UintFn = nvmlReturn_t (*)(nvmlDevice_t, unsigned int*);
using EnergyFn = nvmlReturn_t (*)(nvmlDevice_t, unsigned long long*);
using SensorFn = nvmlReturn_t (*)(nvmlDevice_t, int, unsigned int*);
using ProcessesFn = nvmlReturn_t (*)(nvmlDevice_t, unsigned int*, nvmlProcessInfo_t*);
using ProcessUtilizationFn = nvmlReturn_t (*)(nvmlDevice_t, nvmlProcessUtilizationSample_t*,
                                              unsigned int*, unsigned long long);

// Closes the library on every return path.
class Library {
 public:
  explicit Library(void* handle) : handle_(handle) {}
  Library(const Library&) = delete;
  Library& operator=(const Library&) = delete;
  ~Library() {
    if (handle_ != nullptr) dlclose(handle_);
  }
  void* get() const { return handle_; }

 private:
  void* handle_;
};

template <typename Fn>
Result<Fn> Symbol(const Library& library, const char* name) {
  dlerror();
  void* symbol = dlsym(library.get(), name);
  if (symbol == nullptr) {
    const char* error = dlerror();
    return Unavailable(fmt::format("NVML library lacks {}: {}", name, error ? error : "null"));
  }
  return reinterpret_cast<Fn>(symbol);
}

struct Api {
  InitFn init;
  ShutdownFn shutdown;
  GetCountFn get_count;
  GetHandleFn get_handle;
  GetStringFn get_name;
  GetStringFn get_uuid;
  GetMemoryFn get_memory;
  DriverVersionFn driver_version;
  ErrorStringFn error_string;  // optional

  std::string Describe(nvmlReturn_t code) const {
    const char* text = error_string ? error_string(code) : nullptr;
    return text ? fmt::format("{} (NVML error {})", text, code)
                : fmt::format("NVML error {}", code);
  }
};

Result<Api> LoadApi(const Library& library) {
  Api api{};
  auto load = [&](auto& field, const char* name) -> Status {
    DROVER_ASSIGN_OR_RETURN(field, Symbol<std::remove_reference_t<decltype(field)>>(library, name));
    return OkStatus();
  };
  DROVER_RETURN_IF_ERROR(load(api.init, "nvmlInit_v2"));
  DROVER_RETURN_IF_ERROR(load(api.shutdown, "nvmlShutdown"));
  DROVER_RETURN_IF_ERROR(load(api.get_count, "nvmlDeviceGetCount_v2"));
  DROVER_RETURN_IF_ERROR(load(api.get_handle, "nvmlDeviceGetHandleByIndex_v2"));
  DROVER_RETURN_IF_ERROR(load(api.get_name, "nvmlDeviceGetName"));
  DROVER_RETURN_IF_ERROR(load(api.get_uuid, "nvmlDeviceGetUUID"));
  DROVER_RETURN_IF_ERROR(load(api.get_memory, "nvmlDeviceGetMemoryInfo"));
  DROVER_RETURN_IF_ERROR(load(api.driver_version, "nvmlSystemGetDriverVersion"));
  api.error_string = reinterpret_cast<ErrorStringFn>(dlsym(library.get(), "nvmlErrorString"));
  return api;
}

Result<NvmlInventory> ListDevices(const Api& api) {
  NvmlInventory inventory;
  char version[kVersionBufferSize] = {};
  if (nvmlReturn_t rc = api.driver_version(version, sizeof(version)); rc == kNvmlSuccess) {
    inventory.driver_version = version;
  }
  unsigned int count = 0;
  if (nvmlReturn_t rc = api.get_count(&count); rc != kNvmlSuccess) {
    return Unavailable("nvmlDeviceGetCount failed: " + api.Describe(rc));
  }
  for (unsigned int i = 0; i < count; ++i) {
    nvmlDevice_t device = nullptr;
    if (nvmlReturn_t rc = api.get_handle(i, &device); rc != kNvmlSuccess) {
      return Unavailable(
          fmt::format("nvmlDeviceGetHandleByIndex({}) failed: {}", i, api.Describe(rc)));
    }
    char name[kNameBufferSize] = {};
    if (nvmlReturn_t rc = api.get_name(device, name, sizeof(name)); rc != kNvmlSuccess) {
      return Unavailable(fmt::format("nvmlDeviceGetName({}) failed: {}", i, api.Describe(rc)));
    }
    char uuid[kUuidBufferSize] = {};
    if (nvmlReturn_t rc = api.get_uuid(device, uuid, sizeof(uuid)); rc != kNvmlSuccess) {
      return Unavailable(fmt::format("nvmlDeviceGetUUID({}) failed: {}", i, api.Describe(rc)));
    }
    nvmlMemory_t memory{};
    if (nvmlReturn_t rc = api.get_memory(device, &memory); rc != kNvmlSuccess) {
      return Unavailable(
          fmt::format("nvmlDeviceGetMemoryInfo({}) failed: {}", i, api.Describe(rc)));
    }
    NvmlGpu gpu;
    gpu.full_name = name;
    gpu.gpu.index = static_cast<int>(i);
    gpu.gpu.uuid = uuid;
    gpu.gpu.model = NormalizeGpuModel(gpu.full_name);
    gpu.gpu.memory_bytes = static_cast<std::int64_t>(memory.total);
    inventory.gpus.push_back(std::move(gpu));
  }
  return inventory;
}

// The optional functions the sampler reads; each may be null (an older driver, the fake).
struct SampleApi {
  UtilizationFn utilization;
  UintFn power;
  EnergyFn energy;
  SensorFn temperature;
  SensorFn clock;
  ProcessesFn processes;
  ProcessUtilizationFn process_utilization;

  static SampleApi Load(const Library& library) {
    auto find = [&library](auto& field, const char* name) {
      field =
          reinterpret_cast<std::remove_reference_t<decltype(field)>>(dlsym(library.get(), name));
    };
    SampleApi api{};
    find(api.utilization, "nvmlDeviceGetUtilizationRates");
    find(api.power, "nvmlDeviceGetPowerUsage");
    find(api.energy, "nvmlDeviceGetTotalEnergyConsumption");
    find(api.temperature, "nvmlDeviceGetTemperature");
    find(api.clock, "nvmlDeviceGetClockInfo");
    find(api.processes, "nvmlDeviceGetComputeRunningProcesses_v3");
    if (api.processes == nullptr) find(api.processes, "nvmlDeviceGetComputeRunningProcesses_v2");
    find(api.process_utilization, "nvmlDeviceGetProcessUtilization");
    return api;
  }
};

}  // namespace

struct NvmlSampler::State {
  explicit State(void* handle) : library(handle) {}
  ~State() {
    if (initialized) api.shutdown();
  }
  Library library;
  Api api{};
  SampleApi sample{};
  bool initialized = false;
  struct Device {
    nvmlDevice_t handle = nullptr;
    std::string uuid;
    unsigned long long last_seen = 0;  // the newest process utilization sample's timestamp
  };
  std::vector<Device> devices;
  std::vector<nvmlProcessInfo_t> infos = std::vector<nvmlProcessInfo_t>(kMaxProcessesPerGpu);
  std::vector<nvmlProcessUtilizationSample_t> utilization =
      std::vector<nvmlProcessUtilizationSample_t>(kMaxProcessesPerGpu);
};

NvmlSampler::NvmlSampler(std::unique_ptr<State> state) : state_(std::move(state)) {}
NvmlSampler::~NvmlSampler() = default;

std::size_t NvmlSampler::gpu_count() const { return state_->devices.size(); }

Result<std::unique_ptr<NvmlSampler>> NvmlSampler::Open(const std::string& library_name) {
  auto state = std::make_unique<State>(dlopen(library_name.c_str(), RTLD_NOW | RTLD_LOCAL));
  if (state->library.get() == nullptr) {
    const char* error = dlerror();
    return Unavailable(fmt::format("NVML is not available (cannot load {}: {})", library_name,
                                   error ? error : "unknown error"));
  }
  DROVER_ASSIGN_OR_RETURN(state->api, LoadApi(state->library));
  state->sample = SampleApi::Load(state->library);
  if (nvmlReturn_t rc = state->api.init(); rc != kNvmlSuccess) {
    return Unavailable("nvmlInit failed: " + state->api.Describe(rc));
  }
  state->initialized = true;
  DROVER_ASSIGN_OR_RETURN(NvmlInventory inventory, ListDevices(state->api));
  for (const NvmlGpu& gpu : inventory.gpus) {
    State::Device device;
    device.uuid = gpu.gpu.uuid;
    if (nvmlReturn_t rc =
            state->api.get_handle(static_cast<unsigned>(gpu.gpu.index), &device.handle);
        rc != kNvmlSuccess) {
      return Unavailable(fmt::format("nvmlDeviceGetHandleByIndex({}) failed: {}", gpu.gpu.index,
                                     state->api.Describe(rc)));
    }
    state->devices.push_back(std::move(device));
  }
  return std::unique_ptr<NvmlSampler>(new NvmlSampler(std::move(state)));
}

void NvmlSampler::Sample(std::vector<model::GpuSample>& gpus,
                         std::vector<model::GpuProcessSample>& processes) {
  const SampleApi& api = state_->sample;
  for (std::size_t i = 0; i < state_->devices.size(); ++i) {
    State::Device& device = state_->devices[i];
    model::GpuSample gpu;
    gpu.index = static_cast<int>(i);
    gpu.uuid = device.uuid;
    if (nvmlUtilization_t rates{};
        api.utilization && api.utilization(device.handle, &rates) == kNvmlSuccess) {
      gpu.utilization_pct = static_cast<int>(std::min(rates.gpu, 100u));
      gpu.memory_activity_pct = static_cast<int>(std::min(rates.memory, 100u));
    }
    if (nvmlMemory_t memory{}; state_->api.get_memory(device.handle, &memory) == kNvmlSuccess) {
      gpu.memory_used_bytes = static_cast<std::int64_t>(memory.used);
    }
    if (unsigned value = 0; api.power && api.power(device.handle, &value) == kNvmlSuccess) {
      gpu.power_mw = static_cast<int>(std::min<unsigned>(value, 1u << 30));
    }
    if (unsigned long long value = 0;
        api.energy && api.energy(device.handle, &value) == kNvmlSuccess) {
      gpu.energy_mj = static_cast<std::int64_t>(std::min<unsigned long long>(value, 1ULL << 62));
    }
    if (unsigned value = 0; api.temperature && api.temperature(device.handle, kNvmlTemperatureGpu,
                                                               &value) == kNvmlSuccess) {
      gpu.temperature_c = static_cast<int>(std::min<unsigned>(value, 1000));
    }
    if (unsigned value = 0;
        api.clock && api.clock(device.handle, kNvmlClockSm, &value) == kNvmlSuccess) {
      gpu.sm_clock_mhz = static_cast<int>(std::min<unsigned>(value, 1u << 20));
    }
    gpus.push_back(std::move(gpu));
    if (api.processes == nullptr) continue;
    unsigned count = kMaxProcessesPerGpu;
    nvmlReturn_t rc = api.processes(device.handle, &count, state_->infos.data());
    if (rc != kNvmlSuccess && rc != kNvmlInsufficientSize) continue;
    count = std::min(count, kMaxProcessesPerGpu);
    const std::size_t first = processes.size();
    for (unsigned p = 0; p < count; ++p) {
      const nvmlProcessInfo_t& info = state_->infos[p];
      model::GpuProcessSample process;
      process.gpu_index = static_cast<int>(i);
      process.pid = info.pid;
      if (info.usedGpuMemory != kNvmlValueNotAvailable) {
        process.memory_used_bytes = static_cast<std::int64_t>(info.usedGpuMemory);
      }
      processes.push_back(process);
    }
    if (api.process_utilization == nullptr || count == 0) continue;
    unsigned samples = kMaxProcessesPerGpu;
    if (api.process_utilization(device.handle, state_->utilization.data(), &samples,
                                device.last_seen) != kNvmlSuccess) {
      continue;
    }
    for (unsigned p = 0; p < std::min(samples, kMaxProcessesPerGpu); ++p) {
      const nvmlProcessUtilizationSample_t& sample = state_->utilization[p];
      device.last_seen = std::max(device.last_seen, sample.timeStamp);
      for (std::size_t k = first; k < processes.size(); ++k) {
        if (processes[k].pid == sample.pid) {
          processes[k].sm_pct = static_cast<int>(std::min(sample.smUtil, 100u));
        }
      }
    }
  }
}

Result<NvmlInventory> DiscoverNvml(const std::string& library_name) {
  Library library(dlopen(library_name.c_str(), RTLD_NOW | RTLD_LOCAL));
  if (library.get() == nullptr) {
    const char* error = dlerror();
    return Unavailable(
        fmt::format("NVML is not available (cannot load {}: {}); no NVIDIA driver "
                    "on this machine? Declare GPUs instead",
                    library_name, error ? error : "unknown error"));
  }
  DROVER_ASSIGN_OR_RETURN(auto api, LoadApi(library));
  if (nvmlReturn_t rc = api.init(); rc != kNvmlSuccess) {
    return Unavailable("nvmlInit failed: " + api.Describe(rc));
  }
  auto inventory = ListDevices(api);
  api.shutdown();
  return inventory;
}

Result<std::vector<model::Gpu>> DiscoverNvmlGpus() {
  DROVER_ASSIGN_OR_RETURN(auto inventory, DiscoverNvml());
  std::vector<model::Gpu> gpus;
  for (NvmlGpu& gpu : inventory.gpus) gpus.push_back(std::move(gpu.gpu));
  return gpus;
}

}  // namespace drover::agent
