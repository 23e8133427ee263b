#include "drover/agent/oom.h"

#include <fstream>
#include <sstream>

namespace drover::agent {
namespace {

std::optional<std::string> ReadText(const std::string& path) {
  std::ifstream in(path);
  if (!in) return std::nullopt;
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

}  // namespace

std::vector<std::string> OomCounterPaths(std::string_view proc_self_cgroup) {
  std::vector<std::string> paths;
  std::string v1;
  std::istringstream lines{std::string(proc_self_cgroup)};
  for (std::string line; std::getline(lines, line);) {
    const auto first = line.find(':');
    const auto second = first == std::string::npos ? first : line.find(':', first + 1);
    if (second == std::string::npos) continue;
    const std::string controllers = line.substr(first + 1, second - first - 1);
    const std::string path = line.substr(second + 1);
    if (line.compare(0, first, "0") == 0 && controllers.empty()) {
      paths.insert(paths.begin(), "/sys/fs/cgroup" + (path == "/" ? "" : path) + "/memory.events");
      continue;
    }
    std::istringstream names(controllers);
    for (std::string name; std::getline(names, name, ',');) {
      if (name == "memory") {
        v1 = "/sys/fs/cgroup/memory" + (path == "/" ? "" : path) + "/memory.oom_control";
      }
    }
  }
  if (!v1.empty()) paths.push_back(v1);
  paths.push_back("/proc/vmstat");
  return paths;
}

std::optional<std::int64_t> ParseOomKills(std::string_view text) {
  std::istringstream lines{std::string(text)};
  for (std::string line; std::getline(lines, line);) {
    std::istringstream fields(line);
    std::string key;
    std::int64_t value = 0;
    if (fields >> key >> value && key == "oom_kill") return value;
  }
  return std::nullopt;
}

std::optional<OomCount> ReadOomKills(const std::string& path) {
  std::vector<std::string> paths;
  if (!path.empty()) {
    paths.push_back(path);
  } else {
    paths = OomCounterPaths(ReadText("/proc/self/cgroup").value_or(""));
  }
  for (const std::string& candidate : paths) {
    std::optional<std::string> text = ReadText(candidate);
    if (!text) continue;
    if (std::optional<std::int64_t> kills = ParseOomKills(*text)) {
      return OomCount{candidate, *kills};
    }
  }
  return std::nullopt;
}

}  // namespace drover::agent
