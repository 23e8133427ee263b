#include "drover/agent/gpu/nvml.h"

#include <dlfcn.h>
#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <map>
#include <optional>
#include <span>

#include "drover/agent/gpu/energy_counter.h"
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
// GPU Performance Monitoring (GPM), as nvml.h declares it since NVML 12.0 (CUDA 12.0, driver
// R525; the layout is unchanged through the 12.x headers): a sample is an opaque handle
// (`typedef struct nvmlGpmSample_st* nvmlGpmSample_t`), and a metric is computed from two samples.
struct nvmlGpmSample_st;
using nvmlGpmSample_t = nvmlGpmSample_st*;
struct nvmlGpmMetric_t {
  unsigned int metricId;    // IN: NVML_GPM_METRIC_*
  nvmlReturn_t nvmlReturn;  // OUT: this metric's status; value is valid only on success
  double value;             // OUT
  struct {
    char* shortName;
    char* longName;
    char* unit;
  } metricInfo;  // OUT: may be null
};
// NVML_GPM_METRIC_MAX was 98 in nvml.h 12.0 and has grown since (210 in 12.2) without a new
// NVML_GPM_METRICS_GET_VERSION: NVML reads numMetrics entries, so the array is sized by the
// smallest published maximum (never below what numMetrics asks).
constexpr unsigned kGpmMetricMax = 98;
struct nvmlGpmMetricsGet_t {
  unsigned int version;     // NVML_GPM_METRICS_GET_VERSION
  unsigned int numMetrics;  // entries of metrics[] to fill
  nvmlGpmSample_t sample1;
  nvmlGpmSample_t sample2;
  nvmlGpmMetric_t metrics[kGpmMetricMax];
};
struct nvmlGpmSupport_t {
  unsigned int version;            // NVML_GPM_SUPPORT_VERSION
  unsigned int isSupportedDevice;  // OUT
};
constexpr unsigned kNvmlGpmMetricsGetVersion = 1;  // NVML_GPM_METRICS_GET_VERSION
constexpr unsigned kNvmlGpmSupportVersion = 1;     // NVML_GPM_SUPPORT_VERSION
// nvmlGpmMetricId_t values read (each 0.0 - 100.0, per nvml.h).
constexpr unsigned kGpmSmUtil = 2;         // NVML_GPM_METRIC_SM_UTIL
constexpr unsigned kGpmSmOccupancy = 3;    // NVML_GPM_METRIC_SM_OCCUPANCY
constexpr unsigned kGpmAnyTensorUtil = 5;  // NVML_GPM_METRIC_ANY_TENSOR_UTIL
constexpr unsigned kGpmDramBwUtil = 10;    // NVML_GPM_METRIC_DRAM_BW_UTIL
constexpr unsigned kGpmMetricsRead = 4;
using GpmSupportFn = nvmlReturn_t (*)(nvmlDevice_t, nvmlGpmSupport_t*);
using GpmSampleAllocFn = nvmlReturn_t (*)(nvmlGpmSample_t*);
using GpmSampleFreeFn = nvmlReturn_t (*)(nvmlGpmSample_t);
using GpmSampleGetFn = nvmlReturn_t (*)(nvmlDevice_t, nvmlGpmSample_t);
using GpmMetricsGetFn = nvmlReturn_t (*)(nvmlGpmMetricsGet_t*);

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
  // GPM: all five or none is used (NvmlSampler::State::Device::gpm).
  GpmSupportFn gpm_support;
  GpmSampleAllocFn gpm_alloc;
  GpmSampleFreeFn gpm_free;
  GpmSampleGetFn gpm_get;
  GpmMetricsGetFn gpm_metrics;

  bool has_gpm() const { return gpm_support && gpm_alloc && gpm_free && gpm_get && gpm_metrics; }

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
    find(api.gpm_support, "nvmlGpmQueryDeviceSupport");
    find(api.gpm_alloc, "nvmlGpmSampleAlloc");
    find(api.gpm_free, "nvmlGpmSampleFree");
    find(api.gpm_get, "nvmlGpmSampleGet");
    find(api.gpm_metrics, "nvmlGpmMetricsGet");
    return api;
  }
};

}  // namespace

struct NvmlSampler::State {
  explicit State(void* handle) : library(handle) {}
  ~State() {
    for (Device& device : devices) {
      for (nvmlGpmSample_t buffer : device.gpm) {
        if (buffer != nullptr) sample.gpm_free(buffer);
      }
    }
    if (initialized) api.shutdown();
  }
  Library library;
  Api api{};
  SampleApi sample{};
  bool initialized = false;
  struct Device {
    explicit Device(DurationMs energy_read_interval_ms) : energy(energy_read_interval_ms) {}
    nvmlDevice_t handle = nullptr;
    std::string uuid;
    EnergyCounter energy;
    unsigned long long last_seen = 0;  // the newest process utilization sample's timestamp
    // GPM sample buffers, allocated at Open when the device supports GPM (both null otherwise):
    // gpm[previous] holds the last sample taken, gpm[1 - previous] receives the next.
    std::array<nvmlGpmSample_t, 2> gpm{nullptr, nullptr};
    int previous = 0;
    bool gpm_primed = false;  // gpm[previous] holds a sample
  };
  // Reads the GPM metrics of `device` since its previous sample; none on its first sample or
  // when NVML refuses (the metrics are then left out for this sample only).
  std::optional<model::GpmSample> ReadGpm(Device& device);
  // Sets `processes`' SM shares (sm_pct) to the mean of the driver's samples of each since the
  // previous read, where NVML gives them.
  void ReadProcessShares(Device& device, std::span<model::GpuProcessSample> processes);
  // Allocates `device`'s GPM buffers when the library has GPM and the device supports it
  // (nvmlGpmQueryDeviceSupport); otherwise, or when an allocation fails, leaves them null.
  static void OpenGpm(const SampleApi& api, Device& device);
  nvmlGpmMetricsGet_t gpm_query{};
  std::vector<Device> devices;
  std::vector<nvmlProcessInfo_t> infos = std::vector<nvmlProcessInfo_t>(kMaxProcessesPerGpu);
  std::vector<nvmlProcessUtilizationSample_t> utilization =
      std::vector<nvmlProcessUtilizationSample_t>(kMaxProcessesPerGpu);
};

void NvmlSampler::State::OpenGpm(const SampleApi& api, Device& device) {
  if (!api.has_gpm()) return;
  nvmlGpmSupport_t support{kNvmlGpmSupportVersion, 0};
  if (api.gpm_support(device.handle, &support) != kNvmlSuccess || support.isSupportedDevice == 0) {
    return;
  }
  for (nvmlGpmSample_t& buffer : device.gpm) {
    if (api.gpm_alloc(&buffer) != kNvmlSuccess) buffer = nullptr;
  }
  if (device.gpm[0] == nullptr || device.gpm[1] == nullptr) {
    for (nvmlGpmSample_t& buffer : device.gpm) {
      if (buffer != nullptr) api.gpm_free(buffer);
      buffer = nullptr;
    }
  }
}

std::optional<model::GpmSample> NvmlSampler::State::ReadGpm(Device& device) {
  if (device.gpm[0] == nullptr) return std::nullopt;
  const int next = 1 - device.previous;
  if (sample.gpm_get(device.handle, device.gpm[next]) != kNvmlSuccess) return std::nullopt;
  const bool primed = device.gpm_primed;
  const int previous = device.previous;
  device.previous = next;
  device.gpm_primed = true;
  if (!primed) return std::nullopt;
  nvmlGpmMetricsGet_t& query = gpm_query;
  query.version = kNvmlGpmMetricsGetVersion;
  query.numMetrics = kGpmMetricsRead;
  query.sample1 = device.gpm[previous];
  query.sample2 = device.gpm[next];
  const std::array<unsigned, kGpmMetricsRead> ids = {kGpmSmUtil, kGpmSmOccupancy, kGpmAnyTensorUtil,
                                                     kGpmDramBwUtil};
  for (unsigned m = 0; m < kGpmMetricsRead; ++m) {
    query.metrics[m] = nvmlGpmMetric_t{};
    query.metrics[m].metricId = ids[m];
  }
  if (sample.gpm_metrics(&query) != kNvmlSuccess) return std::nullopt;
  std::array<double, kGpmMetricsRead> values{};
  for (unsigned m = 0; m < kGpmMetricsRead; ++m) {
    // A metric the device refuses leaves the whole sample out: the four are read together.
    if (query.metrics[m].nvmlReturn != kNvmlSuccess) return std::nullopt;
    values[m] = std::clamp(query.metrics[m].value, 0.0, 100.0);
  }
  return model::GpmSample{values[0], values[1], values[2], values[3]};
}

NvmlSampler::NvmlSampler(std::unique_ptr<State> state) : state_(std::move(state)) {}
NvmlSampler::~NvmlSampler() = default;

std::size_t NvmlSampler::gpu_count() const { return state_->devices.size(); }

std::size_t NvmlSampler::gpm_gpu_count() const {
  return static_cast<std::size_t>(
      std::count_if(state_->devices.begin(), state_->devices.end(),
                    [](const State::Device& device) { return device.gpm[0] != nullptr; }));
}

Result<std::unique_ptr<NvmlSampler>> NvmlSampler::Open(const std::string& library_name,
                                                       NvmlSamplerOptions options) {
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
    State::Device device(options.energy_read_interval_ms);
    device.uuid = gpu.gpu.uuid;
    if (nvmlReturn_t rc =
            state->api.get_handle(static_cast<unsigned>(gpu.gpu.index), &device.handle);
        rc != kNvmlSuccess) {
      return Unavailable(fmt::format("nvmlDeviceGetHandleByIndex({}) failed: {}", gpu.gpu.index,
                                     state->api.Describe(rc)));
    }
    state->devices.push_back(std::move(device));
    State::OpenGpm(state->sample, state->devices.back());
  }
  return std::unique_ptr<NvmlSampler>(new NvmlSampler(std::move(state)));
}

void NvmlSampler::State::ReadProcessShares(Device& device,
                                           std::span<model::GpuProcessSample> processes) {
  unsigned count = kMaxProcessesPerGpu;
  if (sample.process_utilization(device.handle, utilization.data(), &count, device.last_seen) !=
      kNvmlSuccess) {
    return;
  }
  std::map<unsigned, std::pair<unsigned long long, unsigned>> per_pid;  // pid -> sum, samples
  for (unsigned p = 0; p < std::min(count, kMaxProcessesPerGpu); ++p) {
    const nvmlProcessUtilizationSample_t& share = utilization[p];
    device.last_seen = std::max(device.last_seen, share.timeStamp);
    auto& [sum, samples] = per_pid[share.pid];
    sum += std::min(share.smUtil, 100u);
    ++samples;
  }
  for (model::GpuProcessSample& process : processes) {
    if (auto it = per_pid.find(static_cast<unsigned>(process.pid)); it != per_pid.end()) {
      process.sm_pct = static_cast<int>(it->second.first / it->second.second);
    }
  }
}

void NvmlSampler::Sample(std::int64_t steady_ms, ProcessShares shares,
                         std::vector<model::GpuSample>& gpus,
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
    std::optional<std::int64_t> energy_read;
    if (api.energy && device.energy.ReadDue(steady_ms, gpu.power_mw)) {
      unsigned long long value = 0;
      energy_read = api.energy(device.handle, &value) == kNvmlSuccess
                        ? static_cast<std::int64_t>(std::min<unsigned long long>(value, 1ULL << 62))
                        : -1;
    }
    gpu.energy_mj = device.energy.Report(steady_ms, gpu.power_mw, energy_read);
    if (unsigned value = 0; api.temperature && api.temperature(device.handle, kNvmlTemperatureGpu,
                                                               &value) == kNvmlSuccess) {
      gpu.temperature_c = static_cast<int>(std::min<unsigned>(value, 1000));
    }
    if (unsigned value = 0;
        api.clock && api.clock(device.handle, kNvmlClockSm, &value) == kNvmlSuccess) {
      gpu.sm_clock_mhz = static_cast<int>(std::min<unsigned>(value, 1u << 20));
    }
    gpu.gpm = state_->ReadGpm(device);
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
    if (shares == ProcessShares::kRead && api.process_utilization != nullptr && count > 0) {
      state_->ReadProcessShares(device, std::span(processes).subspan(first));
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
