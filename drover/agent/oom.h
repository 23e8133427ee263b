#pragma once

// Whether the kernel's OOM killer ended a worker (docs/operations.md, "Disruptions"). Drover sets
// no memory limit of its own; a worker runs in its supervisor's memory cgroup (the agent's, or
// the server's), so an OOM kill is seen as a rise of that cgroup's oom_kill counter while the
// worker ran, together with a SIGKILL the supervisor did not send. Where no memory cgroup file
// is readable, the machine-wide counter in /proc/vmstat stands in. Both are inferences: another
// process of the same cgroup (or machine) killed for memory at the same time as the worker died
// of someone else's SIGKILL reads the same.

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace drover::agent {

// The files to read the oom_kill counter from, best first, for a process whose /proc/self/cgroup
// reads `proc_self_cgroup`: cgroup v2 ("0::/P") /sys/fs/cgroup/P/memory.events; cgroup v1 (a
// "N:...memory...:/P" line) /sys/fs/cgroup/memory/P/memory.oom_control; then /proc/vmstat.
std::vector<std::string> OomCounterPaths(std::string_view proc_self_cgroup);

// The value of the "oom_kill N" line of one of those files' text; nullopt when there is none.
std::optional<std::int64_t> ParseOomKills(std::string_view text);

// A counter read: the file it came from and its value.
struct OomCount {
  std::string path;
  std::int64_t kills = 0;
};
// Reads the first of OomCounterPaths(this process's /proc/self/cgroup) that has the counter;
// nullopt when none does. Reads `path` only when given (to read the same counter again).
std::optional<OomCount> ReadOomKills(const std::string& path = "");

}  // namespace drover::agent
