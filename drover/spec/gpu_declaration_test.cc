#include "drover/spec/gpu_declaration.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace drover::spec {
namespace {

using ::testing::HasSubstr;

constexpr std::int64_t kGi = std::int64_t{1} << 30;

TEST(ParseGpuDeclaration, ExpandsOneEntry) {
  auto gpus = ParseGpuDeclaration("8xH100-80GB");
  ASSERT_TRUE(gpus) << gpus.error().ToString();
  ASSERT_EQ(gpus->size(), 8u);
  for (int i = 0; i < 8; ++i) {
    const model::Gpu& gpu = (*gpus)[i];
    EXPECT_EQ(gpu.index, i);
    EXPECT_EQ(gpu.uuid, "GPU-declared-" + std::to_string(i));
    EXPECT_EQ(gpu.model, "H100");
    EXPECT_EQ(gpu.memory_bytes, 80 * kGi);
    EXPECT_EQ(gpu.topology_group, "g0");
  }
}

TEST(ParseGpuDeclaration, GivesEachEntryItsOwnTopologyGroup) {
  auto gpus = ParseGpuDeclaration("2xA100-40GB, 2xV100-16GB");
  ASSERT_TRUE(gpus) << gpus.error().ToString();
  ASSERT_EQ(gpus->size(), 4u);
  EXPECT_EQ((*gpus)[1].model, "A100");
  EXPECT_EQ((*gpus)[1].memory_bytes, 40 * kGi);
  EXPECT_EQ((*gpus)[1].topology_group, "g0");
  EXPECT_EQ((*gpus)[2].model, "V100");
  EXPECT_EQ((*gpus)[2].index, 2);
  EXPECT_EQ((*gpus)[2].memory_bytes, 16 * kGi);
  EXPECT_EQ((*gpus)[2].topology_group, "g1");
}

TEST(ParseGpuDeclaration, UsesTheModelsDefaultMemory) {
  auto gpus = ParseGpuDeclaration("4xH200");
  ASSERT_TRUE(gpus) << gpus.error().ToString();
  ASSERT_EQ(gpus->size(), 4u);
  EXPECT_EQ((*gpus)[3].memory_bytes, 141 * kGi);
  auto l4 = ParseGpuDeclaration("1xL4");
  ASSERT_TRUE(l4);
  EXPECT_EQ((*l4)[0].memory_bytes, 24 * kGi);
}

TEST(ParseGpuDeclaration, ZeroOrEmptyMeansNoGpus) {
  for (const char* spec : {"", "0", "  "}) {
    auto gpus = ParseGpuDeclaration(spec);
    ASSERT_TRUE(gpus) << spec;
    EXPECT_TRUE(gpus->empty()) << spec;
  }
}

TEST(ParseGpuDeclaration, RequiresMemoryForUnknownModels) {
  auto gpus = ParseGpuDeclaration("2xRTX4090");
  ASSERT_FALSE(gpus);
  EXPECT_EQ(gpus.error().code, ErrorCode::kInvalidArgument);
  EXPECT_THAT(gpus.error().message, HasSubstr("no default memory"));
  auto with_memory = ParseGpuDeclaration("2xRTX4090-24GB");
  ASSERT_TRUE(with_memory);
  EXPECT_EQ((*with_memory)[0].memory_bytes, 24 * kGi);
}

TEST(ParseGpuDeclaration, ReadsASharingModePerEntry) {
  auto gpus = ParseGpuDeclaration("1xH100-80GB,2xL4:timeslice,1xA100:exclusive");
  ASSERT_TRUE(gpus) << gpus.error().ToString();
  ASSERT_EQ(gpus->size(), 4u);
  EXPECT_EQ((*gpus)[0].sharing, model::GpuSharing::kExclusive);
  EXPECT_EQ((*gpus)[1].sharing, model::GpuSharing::kTimeslice);
  EXPECT_EQ((*gpus)[2].sharing, model::GpuSharing::kTimeslice);
  EXPECT_EQ((*gpus)[2].model, "L4");
  EXPECT_EQ((*gpus)[2].memory_bytes, 24 * kGi);
  EXPECT_EQ((*gpus)[3].sharing, model::GpuSharing::kExclusive);

  auto mig = ParseGpuDeclaration("2xA100-40GB:mig");
  ASSERT_FALSE(mig);
  EXPECT_THAT(mig.error().message, HasSubstr("MIG GPUs need their layout"));
  auto unknown = ParseGpuDeclaration("2xA100:shared");
  ASSERT_FALSE(unknown);
  EXPECT_THAT(unknown.error().message, HasSubstr("unknown sharing mode 'shared'"));
}

TEST(ParseGpuDeclaration, ErrorsNameTheEntryAndColumn) {
  auto bad_memory = ParseGpuDeclaration("2xA100-40GB,2xV100-16XB");
  ASSERT_FALSE(bad_memory);
  EXPECT_THAT(bad_memory.error().message, HasSubstr("GPU entry 2 '2xV100-16XB' (column 13)"));
  EXPECT_THAT(bad_memory.error().message, HasSubstr("memory '16XB'"));

  auto no_count = ParseGpuDeclaration("H100");
  ASSERT_FALSE(no_count);
  EXPECT_THAT(no_count.error().message, HasSubstr("GPU entry 1 'H100' (column 1)"));
  EXPECT_THAT(no_count.error().message, HasSubstr("COUNTxMODEL"));

  auto empty_entry = ParseGpuDeclaration("1xH100,");
  ASSERT_FALSE(empty_entry);
  EXPECT_THAT(empty_entry.error().message, HasSubstr("GPU entry 2 (column 8): is empty"));

  auto zero = ParseGpuDeclaration("0xH100");
  ASSERT_FALSE(zero);
  EXPECT_THAT(zero.error().message, HasSubstr("count must be between"));

  auto bad_model = ParseGpuDeclaration("2xH 100");
  ASSERT_FALSE(bad_model);
  EXPECT_THAT(bad_model.error().message, HasSubstr("invalid character"));
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
}  // namespace drover::spec
