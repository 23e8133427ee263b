#pragma once

// The process's memory allocator, as seen by the drivers that tune it. drover-full links
// mimalloc in place of glibc's malloc (CMakeLists.txt); test binaries and the sanitizer builds
// keep glibc's (or the sanitizer's), so nothing here may require mimalloc to be linked: its
// entry point is a weak reference, null where mimalloc is absent.

#include <cstddef>

namespace drover::os {

// How much address space the server gives mimalloc as one arena up front (ReserveArena).
inline constexpr std::size_t kServerArenaBytes = std::size_t{256} << 20;

// Reserves `bytes` of address space, committed, as mimalloc's first arena, so that memory the
// process frees there is kept for its next allocations rather than handed back to the kernel
// and faulted in again. Why the server wants it: without an arena, mimalloc 2.0 returned the
// large blocks of a scheduling cycle (a verdict per pending job, 368 bytes each: about 18 MB at
// 50,000) to the kernel when they were freed, and each cycle faulted them in again;
// `policy_bench`'s 50,000-job cycle took 127 to 175 ms under mimalloc without the arena and 72.9
// to 112 ms with it (docs/benchmarks.md, "The 50k cycle under the server's allocator").
// Committed address space is not resident memory: pages count in RSS only once written. True
// when reserved; false where mimalloc is not the allocator, or when the kernel refused the
// mapping (the allocator then works as before).
bool ReserveArena(std::size_t bytes);

}  // namespace drover::os
