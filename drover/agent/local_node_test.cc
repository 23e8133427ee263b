#include "drover/agent/local_node.h"

#include <gtest/gtest.h>

namespace drover::agent {
namespace {

TEST(LocalNode, DescribesThisMachine) {
  model::Gpu gpu;
  gpu.model = "H100";
  model::Node node = LocalNode("here", {gpu});
  EXPECT_EQ(node.name, NodeId("here"));
  EXPECT_GE(node.cpu_millis, 1000);
  EXPECT_EQ(node.cpu_millis % 1000, 0);
  EXPECT_GT(node.memory_bytes, 0);
  EXPECT_EQ(node.address, "127.0.0.1");
  ASSERT_EQ(node.gpus.size(), 1u);
}

}  // namespace
}  // namespace drover::agent
