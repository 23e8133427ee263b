#include "drover/agent/proc_tree.h"

#include <dirent.h>
#include <unistd.h>

#include <charconv>
#include <fstream>
#include <sstream>
#include <string_view>

#include "drover/common/clock.h"

namespace drover::agent {
namespace {

// What one /proc/PID/stat says.
struct Stat {
  pid_t pid = 0;
  pid_t ppid = 0;
  pid_t pgrp = 0;
  std::int64_t cpu_ticks = 0;      // utime + stime
  std::int64_t iowait_ticks = -1;  // delayacct_blkio_ticks; -1 on kernels without the field
};

bool ReadFile(const std::string& path, std::string& out) {
  std::ifstream in(path);
  if (!in) return false;
  std::ostringstream text;
  text << in.rdbuf();
  out = text.str();
  return true;
}

std::int64_t ToInt(std::string_view word) {
  std::int64_t value = 0;
  std::from_chars(word.data(), word.data() + word.size(), value);
  return value;
}

// Parses the fields after the command name (which may hold spaces and parentheses: the last
// ')' ends it). Field 3 (state) is index 0 after it.
bool ParseStat(pid_t pid, const std::string& text, Stat& stat) {
  const std::size_t close = text.rfind(')');
  if (close == std::string::npos) return false;
  std::vector<std::string_view> fields;
  std::string_view rest(text);
  rest.remove_prefix(close + 1);
  while (!rest.empty()) {
    const std::size_t start = rest.find_first_not_of(" \n");
    if (start == std::string_view::npos) break;
    rest.remove_prefix(start);
    const std::size_t end = std::min(rest.find_first_of(" \n"), rest.size());
    fields.push_back(rest.substr(0, end));
    rest.remove_prefix(end);
  }
  if (fields.size() < 13) return false;
  stat.pid = pid;
  stat.ppid = static_cast<pid_t>(ToInt(fields[1]));
  stat.pgrp = static_cast<pid_t>(ToInt(fields[2]));
  stat.cpu_ticks = ToInt(fields[11]) + ToInt(fields[12]);
  if (fields.size() > 39) stat.iowait_ticks = ToInt(fields[39]);
  return true;
}

// The value of `key` (e.g. "VmHWM:") in a "key value unit" file, times `scale`; -1 if absent.
std::int64_t KeyedValue(const std::string& text, std::string_view key, std::int64_t scale) {
  const std::size_t at = text.find(key);
  if (at == std::string::npos) return -1;
  std::istringstream in(text.substr(at + key.size(), 32));
  std::int64_t value = 0;
  if (!(in >> value)) return -1;
  return value * scale;
}

}  // namespace

ProcessTreeReader::ProcessTreeReader(std::string proc_root)
    : proc_root_(std::move(proc_root)), ticks_per_second_(sysconf(_SC_CLK_TCK)) {}

std::vector<model::ProcessSample> ProcessTreeReader::Sample(
    const std::map<model::WorkerKey, pid_t>& roots,
    std::map<std::int64_t, model::WorkerKey>& pids) const {
  std::vector<model::ProcessSample> samples;
  if (roots.empty()) return samples;
  std::map<pid_t, Stat> stats;
  if (DIR* dir = opendir(proc_root_.c_str())) {
    std::string text;
    while (dirent* entry = readdir(dir)) {
      const pid_t pid = static_cast<pid_t>(ToInt(entry->d_name));
      if (pid <= 0) continue;
      Stat stat;
      if (ReadFile(proc_root_ + "/" + entry->d_name + "/stat", text) &&
          ParseStat(pid, text, stat)) {
        stats[pid] = stat;
      }
    }
    closedir(dir);
  }
  std::multimap<pid_t, pid_t> children;  // ppid -> pid
  for (const auto& [pid, stat] : stats) children.emplace(stat.ppid, pid);
  const std::int64_t ms_per_tick =
      ticks_per_second_ > 0 ? kMillisPerSecond / ticks_per_second_ : 10;
  for (const auto& [key, root] : roots) {
    if (!stats.contains(root)) continue;
    // The tree: descendants by parent pid, then the rest of the process group.
    std::vector<pid_t> members{root};
    for (std::size_t i = 0; i < members.size(); ++i) {
      auto [begin, end] = children.equal_range(members[i]);
      for (auto it = begin; it != end; ++it) members.push_back(it->second);
    }
    for (const auto& [pid, stat] : stats) {
      if (stat.pgrp == root && std::find(members.begin(), members.end(), pid) == members.end()) {
        members.push_back(pid);
      }
    }
    model::ProcessSample sample;
    sample.worker = key;
    std::string text;
    for (pid_t pid : members) {
      const Stat& stat = stats.at(pid);
      pids[pid] = key;
      ++sample.processes;
      sample.cpu_ms += stat.cpu_ticks * ms_per_tick;
      if (stat.iowait_ticks >= 0) {
        sample.iowait_ms =
            std::max<std::int64_t>(sample.iowait_ms, 0) + stat.iowait_ticks * ms_per_tick;
      }
      const std::string dir = proc_root_ + "/" + std::to_string(pid);
      if (ReadFile(dir + "/status", text)) {
        sample.rss_bytes += std::max<std::int64_t>(KeyedValue(text, "VmRSS:", 1024), 0);
        sample.peak_rss_bytes = std::max(sample.peak_rss_bytes, KeyedValue(text, "VmHWM:", 1024));
      }
      if (ReadFile(dir + "/io", text)) {
        const std::int64_t read = KeyedValue(text, "\nread_bytes:", 1);
        if (read >= 0) sample.read_bytes = std::max<std::int64_t>(sample.read_bytes, 0) + read;
      }
    }
    samples.push_back(sample);
  }
  return samples;
}

}  // namespace drover::agent
