#pragma once

// The calling process's thread count, for tests and benchmarks that bound a server's threads.

namespace drover::testing {

// Threads of this process now (entries of /proc/self/task); 0 where /proc is not mounted.
int CountThreads();

}  // namespace drover::testing
