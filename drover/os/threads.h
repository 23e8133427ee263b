#pragma once

// Work spread over a few threads for as long as a call lasts: a batch of launches, a round of
// service probes. A driver's concern (the pure core has no threads).

#include <cstddef>
#include <functional>

namespace drover::os {

// Calls `run(i)` once for every i in [0, count), on up to `most_threads` threads at once (at
// least one: the caller's, which takes part), and returns when every call has returned. The
// calls take indexes in ascending order as threads come free; `run` must be safe to call from
// several threads at once for distinct indexes. A thread the system refuses to start (the
// std::system_error of std::thread: out of threads or memory) is not retried: the threads
// already running, the caller's at least, do its share, so every index is run and nothing
// throws for it.
struct ThreadsRun {
  int threads = 1;       // that took part, the caller's included
  bool refused = false;  // a thread could not be started: fewer ran at once (the caller may log)
};
ThreadsRun RunOnThreads(std::size_t count, int most_threads,
                        const std::function<void(std::size_t)>& run);

}  // namespace drover::os
