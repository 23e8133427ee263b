// RunOnThreads with real threads, and with a process that may not map another thread's stack.

#include "drover/os/threads.h"

#include <gtest/gtest.h>
#include <sys/resource.h>

#include <atomic>
#include <cstdlib>
#include <fstream>
#include <mutex>
#include <set>
#include <thread>
#include <vector>

namespace drover::os {
namespace {

TEST(RunOnThreads, RunsEveryIndexOnceOnAtMostTheThreadsAsked) {
  std::vector<std::atomic<int>> runs(1000);
  std::mutex mu;
  std::set<std::thread::id> threads;
  const ThreadsRun ran = RunOnThreads(runs.size(), 4, [&](std::size_t i) {
    ++runs[i];
    std::lock_guard lock(mu);
    threads.insert(std::this_thread::get_id());
  });
  EXPECT_EQ(ran.threads, 4);
  EXPECT_FALSE(ran.refused);
  EXPECT_LE(threads.size(), 4u);
  for (std::size_t i = 0; i < runs.size(); ++i) EXPECT_EQ(runs[i], 1) << "index " << i;
}

TEST(RunOnThreads, NeverStartsMoreThreadsThanThereAreCalls) {
  std::atomic<int> calls{0};
  EXPECT_EQ(RunOnThreads(2, 16, [&](std::size_t) { ++calls; }).threads, 2);
  EXPECT_EQ(calls, 2);
  EXPECT_EQ(RunOnThreads(0, 16, [&](std::size_t) { ++calls; }).threads, 1);
  EXPECT_EQ(RunOnThreads(3, 0, [&](std::size_t) { ++calls; }).threads,
            1);  // the caller's, at least
  EXPECT_EQ(calls, 5);
}

// The address space capped just above what the process maps: a new thread's stack (8 MiB by
// default) cannot be mapped, so std::thread throws std::system_error (EAGAIN), in a child
// process of the death test's, so that the cap stays there.
void RunWhereNoThreadCanStart() {
  std::ifstream statm("/proc/self/statm");
  long pages = 0;
  statm >> pages;
  const rlim_t mapped = static_cast<rlim_t>(pages) * 4096;
  const rlimit cap{mapped + (2 << 20), mapped + (2 << 20)};
  if (setrlimit(RLIMIT_AS, &cap) != 0) std::_Exit(3);
  std::vector<int> runs(100, 0);
  const ThreadsRun ran = RunOnThreads(runs.size(), 8, [&](std::size_t i) { ++runs[i]; });
  for (int run : runs) {
    if (run != 1) std::_Exit(2);
  }
  std::_Exit(ran.threads == 1 && ran.refused ? 0 : 1);
}

TEST(RunOnThreadsDeathTest, AThreadTheSystemRefusesLeavesItsCallsToTheCaller) {
  GTEST_FLAG_SET(death_test_style, "fast");
  EXPECT_EXIT(RunWhereNoThreadCanStart(), ::testing::ExitedWithCode(0), "");
}

}  // namespace
}  // namespace drover::os
