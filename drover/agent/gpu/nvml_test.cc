#include "drover/agent/gpu/nvml.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace drover::agent {
namespace {

using ::testing::HasSubstr;

TEST(DiscoverNvml, MissingLibraryIsUnavailable) {
  auto inventory = DiscoverNvml("/nonexistent/libnvidia-ml.so.1");
  ASSERT_FALSE(inventory);
  EXPECT_EQ(inventory.error().code, ErrorCode::kUnavailable);
  EXPECT_THAT(inventory.error().message, HasSubstr("NVML is not available"));
}

TEST(DiscoverNvml, LibraryWithoutNvmlSymbolsIsUnavailable) {
  auto inventory = DiscoverNvml("libm.so.6");
  ASSERT_FALSE(inventory);
  EXPECT_EQ(inventory.error().code, ErrorCode::kUnavailable);
  EXPECT_THAT(inventory.error().message, HasSubstr("nvmlInit_v2"));
}

TEST(DiscoverNvml, SystemLibraryEitherWorksOrIsUnavailable) {
  // On a machine without the NVIDIA driver this must fail gracefully; with one it must work.
  auto gpus = DiscoverNvmlGpus();
  if (!gpus) {
    EXPECT_EQ(gpus.error().code, ErrorCode::kUnavailable) << gpus.error().ToString();
    return;
  }
  for (const model::Gpu& gpu : *gpus) {
    EXPECT_FALSE(gpu.model.empty());
    EXPECT_GT(gpu.memory_bytes, 0);
    EXPECT_FALSE(gpu.uuid.empty());
  }
}

TEST(DiscoverNvml, ListsDevicesThroughTheLibrary) {
  auto inventory = DiscoverNvml(DROVER_FAKE_NVML);
  ASSERT_TRUE(inventory) << inventory.error().ToString();
  EXPECT_EQ(inventory->driver_version, "550.54.15");
  ASSERT_EQ(inventory->gpus.size(), 3u);
  EXPECT_EQ(inventory->gpus[0].full_name, "NVIDIA H100 80GB HBM3");
  EXPECT_EQ(inventory->gpus[0].gpu.model, "H100");
  EXPECT_EQ(inventory->gpus[0].gpu.uuid, "GPU-00000000-aaaa");
  EXPECT_EQ(inventory->gpus[0].gpu.memory_bytes, 85520809984);
  EXPECT_EQ(inventory->gpus[1].gpu.index, 1);
  EXPECT_EQ(inventory->gpus[2].gpu.model, "RTX4090");
}

}  // namespace
}  // namespace drover::agent
