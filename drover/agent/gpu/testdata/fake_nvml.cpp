// A stand-in for libnvidia-ml.so.1 used by nvml_test.cc: two H100s and one RTX 4090.
// Built as a shared library by drover/agent/CMakeLists.txt (named .cpp so the library glob,
// which takes *.cc, leaves it out).

#include <cstring>

extern "C" {

struct nvmlDevice_st {
  int index;
};
struct nvmlMemory_t {
  unsigned long long total;
  unsigned long long free;
  unsigned long long used;
};

static nvmlDevice_st devices[3] = {{0}, {1}, {2}};
static const char* names[3] = {"NVIDIA H100 80GB HBM3", "NVIDIA H100 80GB HBM3",
                               "NVIDIA GeForce RTX 4090"};

static int Copy(const char* text, char* out, unsigned int length) {
  if (std::strlen(text) + 1 > length) return 7;  // NVML_ERROR_INSUFFICIENT_SIZE
  std::strcpy(out, text);
  return 0;
}

int nvmlInit_v2() { return 0; }
int nvmlShutdown() { return 0; }
const char* nvmlErrorString(int) { return "fake error"; }
int nvmlSystemGetDriverVersion(char* out, unsigned int length) {
  return Copy("550.54.15", out, length);
}
int nvmlDeviceGetCount_v2(unsigned int* count) {
  *count = 3;
  return 0;
}
int nvmlDeviceGetHandleByIndex_v2(unsigned int index, nvmlDevice_st** device) {
  if (index >= 3) return 2;  // NVML_ERROR_INVALID_ARGUMENT
  *device = &devices[index];
  return 0;
}
int nvmlDeviceGetName(nvmlDevice_st* device, char* out, unsigned int length) {
  return Copy(names[device->index], out, length);
}
int nvmlDeviceGetUUID(nvmlDevice_st* device, char* out, unsigned int length) {
  const char* uuids[3] = {"GPU-00000000-aaaa", "GPU-11111111-bbbb", "GPU-22222222-cccc"};
  return Copy(uuids[device->index], out, length);
}
int nvmlDeviceGetMemoryInfo(nvmlDevice_st* device, nvmlMemory_t* memory) {
  memory->total = device->index == 2 ? 25757220864ULL : 85520809984ULL;
  memory->free = memory->total;
  memory->used = 0;
  return 0;
}

}  // extern "C"
