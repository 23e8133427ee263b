// `drover crons` and the cron part of `drover submit` (commands.h).

#include <fmt/format.h>

#include <iostream>

#include "drover/api/client.h"
#include "drover/cli/commands.h"
#include "drover/cli/table.h"
#include "drover/cli/text.h"
#include "drover/codec/json.h"

namespace drover::cli {

using nlohmann::json;

int SubmitCrons(const ClientFlags& flags, const std::vector<model::CronSpec>& crons) {
  api::ApiClient client = ClientOf(flags);
  json out = json::array();
  for (const model::CronSpec& cron : crons) {
    auto response = client.Post("/v1/crons", codec::ToJson(cron).dump(), "application/json");
    if (!response) return ReportError(response.error());
    if (flags.output == "json") {
      out.push_back(response->json);
      continue;
    }
    const json& next = response->json["next_run_at"];
    std::cout << fmt::format("cron job {} ({} {}): next run {}\n", cron.name, cron.schedule,
                             cron.time_zone,
                             next.is_number() ? FormatTimestamp(next.get<TimeMs>()) : "suspended");
  }
  if (flags.output == "json") std::cout << json{{"crons", out}}.dump(2) << "\n";
  return 0;
}

int CronsCommand(const ClientFlags& flags) {
  api::ApiClient client = ClientOf(flags);
  auto response = client.Get("/v1/crons");
  if (!response) return ReportError(response.error());
  if (flags.output == "json") {
    std::cout << response->json.dump(2) << "\n";
    return 0;
  }
  const TimeMs now = SystemClock().Now();
  Table table({"NAME", "SCHEDULE", "ZONE", "POLICY", "NEXT RUN", "LAST RUN", "ACTIVE"});
  for (const json& cron : response->json["crons"]) {
    const json& next = cron["next_run_at"];
    const json& last = cron["last_run"];
    std::string last_text = "-";
    if (last.is_object()) {
      // The run id is NAME@DUE; the due time and the state say enough.
      const std::string id = last["id"];
      last_text =
          fmt::format("{} {}", id.substr(id.find('@') + 1), last["state"].get<std::string>());
    }
    table.AddRow({cron["name"], cron["schedule"], cron["time_zone"], cron["concurrency_policy"],
                  next.is_number() ? FormatRelative(next.get<TimeMs>(), now) : "suspended",
                  last_text, std::to_string(cron["active_runs"].size())});
  }
  std::cout << table.Render();
  return 0;
}

}  // namespace drover::cli
