#include "drover/agent/gpu/nvml.h"

#include <dlfcn.h>
#include <fmt/format.h>

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

}  // namespace

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
