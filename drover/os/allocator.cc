#include "drover/os/allocator.h"

// mimalloc's own declaration (mimalloc.h), made weak: resolved by the dynamic linker where the
// binary links libmimalloc, null elsewhere. The header is not included so that the libraries
// built on this one need no mimalloc to compile or link.
extern "C" int mi_reserve_os_memory(std::size_t size, bool commit, bool allow_large)
    __attribute__((weak));

namespace drover::os {

bool ReserveArena(std::size_t bytes) {
  if (mi_reserve_os_memory == nullptr) return false;
  // Committed: an arena reserved uncommitted commits on demand and gave back nothing of the
  // gain (measured, docs/benchmarks.md). No large OS pages: resident memory grows by 4 KiB
  // pages as it is written, as it did without the arena.
  return mi_reserve_os_memory(bytes, /*commit=*/true, /*allow_large=*/false) == 0;
}

}  // namespace drover::os
