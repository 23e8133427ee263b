// Work spread over a few threads (threads.h).

#include "drover/os/threads.h"

#include <algorithm>
#include <atomic>
#include <system_error>
#include <thread>
#include <vector>

namespace drover::os {

ThreadsRun RunOnThreads(std::size_t count, int most_threads,
                        const std::function<void(std::size_t)>& run) {
  std::atomic<std::size_t> next{0};
  const auto work = [&] {
    for (std::size_t i = next++; i < count; i = next++) run(i);
  };
  const std::size_t wanted = std::min<std::size_t>(std::max(most_threads, 1), count);
  std::vector<std::thread> helpers;
  ThreadsRun ran;
  for (std::size_t i = 1; i < wanted; ++i) {
    try {
      helpers.emplace_back(work);
    } catch (const std::system_error&) {
      ran.refused = true;  // fewer at once: the ones running take its share
      break;
    }
  }
  work();
  for (std::thread& helper : helpers) helper.join();
  ran.threads = static_cast<int>(helpers.size()) + 1;
  return ran;
}

}  // namespace drover::os
