#include "drover/agent/oom.h"

#include <gtest/gtest.h>

namespace drover::agent {
namespace {

TEST(Oom, CounterPathsFollowTheCgroupVersion) {
  EXPECT_EQ(OomCounterPaths("0::/system.slice/drover.service\n"),
            (std::vector<std::string>{"/sys/fs/cgroup/system.slice/drover.service/memory.events",
                                      "/proc/vmstat"}));
  EXPECT_EQ(OomCounterPaths("5:cpu,cpuacct:/\n4:memory:/pods/a\n0::/\n"),
            (std::vector<std::string>{"/sys/fs/cgroup/memory.events",
                                      "/sys/fs/cgroup/memory/pods/a/memory.oom_control",
                                      "/proc/vmstat"}));
  EXPECT_EQ(OomCounterPaths(""), std::vector<std::string>{"/proc/vmstat"});
}

TEST(Oom, ParsesTheOomKillLine) {
  EXPECT_EQ(ParseOomKills("low 0\nhigh 0\nmax 3\noom 2\noom_kill 2\noom_group_kill 0\n"), 2);
  EXPECT_EQ(ParseOomKills("oom_kill_disable 0\nunder_oom 0\noom_kill 7\n"), 7);
  EXPECT_EQ(ParseOomKills("nr_free_pages 1\n"), std::nullopt);
}

}  // namespace
}  // namespace drover::agent
