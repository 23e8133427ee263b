// A short, known GPU load for tools/device_check.sh (docs/operations.md, "Device check"):
//   gpu_load fp32 SECONDS     FP32 fused multiply-adds on every SM (tensor cores idle)
//   gpu_load tensor SECONDS   FP16 tensor-core matrix multiply-accumulates (WMMA) on every SM
//   gpu_load sleep SECONDS    holds a CUDA context and 1 GiB of device memory, runs nothing
// Built where nvcc is (not on the device machine): nvcc -O2 -arch=sm_90 -o build/gpu_load
// tools/gpu_load.cu. Exits 0 after SECONDS, 1 on a CUDA error (printed).

#include <cuda_fp16.h>
#include <mma.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <thread>

namespace {

bool Check(cudaError_t rc, const char* what) {
  if (rc == cudaSuccess) return true;
  std::fprintf(stderr, "gpu_load: %s: %s\n", what, cudaGetErrorString(rc));
  return false;
}

// Each thread runs `iterations` dependent FMAs on registers: the SMs busy, no memory traffic.
__global__ void Fp32(float* out, int iterations) {
  float a = threadIdx.x * 1e-3f, b = 1.0001f, c = 0.999f;
  for (int i = 0; i < iterations; ++i) {
    a = fmaf(a, b, c);
    c = fmaf(c, b, a);
  }
  if (a == 12345.0f) out[0] = a + c;  // never true; keeps the loop
}

// Each warp multiplies 16x16 FP16 tiles into an FP32 accumulator `iterations` times.
__global__ void Tensor(float* out, int iterations) {
  using namespace nvcuda;
  __shared__ half tile[16 * 16];
  for (int i = threadIdx.x; i < 16 * 16; i += blockDim.x) tile[i] = __float2half(1e-3f);
  __syncthreads();
  wmma::fragment<wmma::matrix_a, 16, 16, 16, half, wmma::row_major> a;
  wmma::fragment<wmma::matrix_b, 16, 16, 16, half, wmma::col_major> b;
  wmma::fragment<wmma::accumulator, 16, 16, 16, float> acc;
  wmma::load_matrix_sync(a, tile, 16);
  wmma::load_matrix_sync(b, tile, 16);
  wmma::fill_fragment(acc, 0.0f);
  for (int i = 0; i < iterations; ++i) wmma::mma_sync(acc, a, b, acc);
  if (acc.x[0] == 12345.0f) out[0] = acc.x[0];
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 3) {
    std::fprintf(stderr, "usage: gpu_load fp32|tensor|sleep SECONDS\n");
    return 2;
  }
  const char* mode = argv[1];
  const double seconds = std::atof(argv[2]);
  int sms = 0;
  if (!Check(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0), "SM count")) {
    return 1;
  }
  float* out = nullptr;
  if (!Check(cudaMalloc(&out, std::size_t{1} << 30), "cudaMalloc 1 GiB")) return 1;
  std::printf("gpu_load: %s for %.0f s on %d SMs\n", mode, seconds, sms);
  std::fflush(stdout);
  const auto end = std::chrono::steady_clock::now() + std::chrono::duration<double>(seconds);
  while (std::chrono::steady_clock::now() < end) {
    if (std::strcmp(mode, "fp32") == 0) {
      Fp32<<<sms * 4, 256>>>(out, 1 << 16);
    } else if (std::strcmp(mode, "tensor") == 0) {
      Tensor<<<sms * 4, 128>>>(out, 1 << 14);
    } else if (std::strcmp(mode, "sleep") == 0) {
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
      continue;
    } else {
      std::fprintf(stderr, "gpu_load: unknown mode %s\n", mode);
      return 2;
    }
    if (!Check(cudaDeviceSynchronize(), mode)) return 1;
  }
  cudaFree(out);
  return 0;
}
