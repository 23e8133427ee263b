#include "drover/os/allocator.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace drover::os {
namespace {

// Test binaries allocate with glibc's malloc (only drover-full links mimalloc): there is no
// arena to reserve, and saying so changes nothing for the allocations that follow.
TEST(ReserveArena, IsRefusedWhereMimallocIsNotTheAllocator) {
  EXPECT_FALSE(ReserveArena(kServerArenaBytes));
  std::vector<std::string> still_allocates(1000, std::string(100, 'x'));
  EXPECT_EQ(still_allocates.back().size(), 100u);
}

}  // namespace
}  // namespace drover::os
