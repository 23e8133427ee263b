#include "drover/os/allocator.h"

#include <gtest/gtest.h>

namespace drover::os {
namespace {

// Test binaries allocate with glibc's malloc (only drover-full links mimalloc): there is no
// arena to reserve.
TEST(ReserveArena, IsRefusedWhereMimallocIsNotTheAllocator) {
  EXPECT_FALSE(ReserveArena(kServerArenaBytes));
}

}  // namespace
}  // namespace drover::os
