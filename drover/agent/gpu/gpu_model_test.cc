#include "drover/agent/gpu/gpu_model.h"

#include <gtest/gtest.h>

namespace drover::agent {
namespace {

constexpr std::int64_t kGi = std::int64_t{1} << 30;

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

TEST(DefaultGpuMemoryBytes, KnowsCommonModelsOnly) {
  EXPECT_EQ(DefaultGpuMemoryBytes("H100"), 80 * kGi);
  EXPECT_EQ(DefaultGpuMemoryBytes("H200"), 141 * kGi);
  EXPECT_EQ(DefaultGpuMemoryBytes("A100"), 80 * kGi);
  EXPECT_EQ(DefaultGpuMemoryBytes("V100"), 16 * kGi);
  EXPECT_EQ(DefaultGpuMemoryBytes("L4"), 24 * kGi);
  EXPECT_EQ(DefaultGpuMemoryBytes("RTX4090"), std::nullopt);
}

TEST(ParseGpuMemory, ReadsVendorGigabytesAsGibibytes) {
  EXPECT_EQ(ParseGpuMemory("80GB"), 80 * kGi);
  EXPECT_EQ(ParseGpuMemory("80G"), 80 * kGi);
  EXPECT_EQ(ParseGpuMemory("80Gi"), 80 * kGi);
  EXPECT_EQ(ParseGpuMemory("81559Mi"), std::int64_t{81559} << 20);
  EXPECT_FALSE(ParseGpuMemory("0"));
  EXPECT_FALSE(ParseGpuMemory("lots"));
}

}  // namespace
}  // namespace drover::agent
