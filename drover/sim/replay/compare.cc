// CompareQueueTimes (replay.h).

#include <map>
#include <string>
#include <vector>

#include "drover/sim/replay/replay.h"
#include "drover/sim/replay/stats.h"

namespace drover::sim {
namespace {

using internal::Round;

// Team -> {"jobs","mean","p50","p95"} of one report.
std::map<std::string, nlohmann::json> ByTeam(const nlohmann::json& report) {
  std::map<std::string, nlohmann::json> out;
  auto rows = report.find("job_rows");
  if (rows != report.end() && rows->is_array()) {
    std::map<std::string, std::vector<double>> waits;
    for (const nlohmann::json& row : *rows) {
      auto queue_s = row.find("queue_s");
      if (queue_s == row.end() || !queue_s->is_number()) continue;  // unfinished
      std::string team = row.value("team", "");
      if (team.empty()) team = row.value("queue", "");
      waits[team].push_back(queue_s->get<double>());
    }
    for (auto& [team, values] : waits) {
      const internal::Summary summary = internal::Summarize(values);
      out[team] = {{"jobs", values.size()},
                   {"mean", Round(summary.mean)},
                   {"p50", Round(summary.p50)},
                   {"p95", Round(summary.p95)}};
    }
    return out;
  }
  auto queues = report.find("per_queue");
  if (queues == report.end() || !queues->is_object()) return out;
  for (const auto& [queue, stats] : queues->items()) {
    const nlohmann::json waits = stats.value("queue_seconds", nlohmann::json::object());
    out[queue] = {{"jobs", stats.value("jobs", 0)},
                  {"mean", waits.value("mean", 0.0)},
                  {"p50", waits.value("p50", 0.0)},
                  {"p95", waits.value("p95", 0.0)}};
  }
  return out;
}

}  // namespace

nlohmann::json CompareQueueTimes(const nlohmann::json& before, const nlohmann::json& after) {
  const std::map<std::string, nlohmann::json> old_teams = ByTeam(before);
  const std::map<std::string, nlohmann::json> new_teams = ByTeam(after);
  std::map<std::string, int> teams;
  for (const auto& [team, stats] : old_teams) teams[team] = 0;
  for (const auto& [team, stats] : new_teams) teams[team] = 0;
  nlohmann::json out_teams = nlohmann::json::object();
  for (const auto& [team, unused] : teams) {
    auto old_it = old_teams.find(team);
    auto new_it = new_teams.find(team);
    nlohmann::json entry = {
        {"before", old_it == old_teams.end() ? nlohmann::json() : old_it->second},
        {"after", new_it == new_teams.end() ? nlohmann::json() : new_it->second},
        {"difference", nullptr}};
    if (old_it != old_teams.end() && new_it != new_teams.end()) {
      nlohmann::json difference = nlohmann::json::object();
      for (const char* key : {"mean", "p50", "p95"}) {
        difference[key] =
            Round(new_it->second.at(key).get<double>() - old_it->second.at(key).get<double>());
      }
      entry["difference"] = std::move(difference);
    }
    out_teams[team] = std::move(entry);
  }
  return {{"teams", std::move(out_teams)}};
}

}  // namespace drover::sim
