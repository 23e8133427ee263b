#include "drover/agent/gpu/gpu_model.h"

#include <gtest/gtest.h>

namespace drover::agent {
namespace {

TEST(NormalizeGpuModel, ReducesNvmlNamesToShortModels) {
  EXPECT_EQ(NormalizeGpuModel("NVIDIA H100 80GB HBM3"), "H100");
  EXPECT_EQ(NormalizeGpuModel("NVIDIA H200"), "H200");
  EXPECT_EQ(NormalizeGpuModel("NVIDIA A100-SXM4-40GB"), "A100");
  EXPECT_EQ(NormalizeGpuModel("NVIDIA A100 80GB PCIe"), "A100");
  EXPECT_EQ(NormalizeGpuModel("Tesla V100-SXM2-16GB"), "V100");
  EXPECT_EQ(NormalizeGpuModel("Tesla T4"), "T4");
  EXPECT_EQ(NormalizeGpuModel("NVIDIA GeForce RTX 4090"), "RTX4090");
  EXPECT_EQ(NormalizeGpuModel("NVIDIA L40S"), "L40S");
  EXPECT_EQ(NormalizeGpuModel("NVIDIA L4"), "L4");
  EXPECT_EQ(NormalizeGpuModel("NVIDIA H100 NVL"), "H100");
}

TEST(NormalizeGpuModel, KeepsUnrecognizableNamesCompact) {
  EXPECT_EQ(NormalizeGpuModel(""), "");
  EXPECT_EQ(NormalizeGpuModel("NVIDIA"), "NVIDIA");
  EXPECT_EQ(NormalizeGpuModel("  MI300X  "), "MI300X");
}

}  // namespace
}  // namespace drover::agent
