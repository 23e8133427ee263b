// `drover crons` and the cron part of `drover submit` (commands.h).

#include <fmt/format.h>

#include <CLI/CLI.hpp>
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

namespace {

// The table `drover cron ls` prints of GET /v1/crons's crons: the state is "suspended" or
// "scheduled"; the last run is its due time and its state.
std::string CronTable(const json& crons, TimeMs now) {
  Table table(
      {"NAME", "SCHEDULE", "ZONE", "POLICY", "STATE", "NEXT RUN", "LAST RUN", "ACTIVE RUNS"});
  for (const json& cron : crons) {
    const json& next = cron["next_run_at"];
    const json& last = cron["last_run"];
    std::string last_text = "-";
    if (last.is_object()) {
      // The run id is NAME@DUE; the due time and the state say enough.
      const std::string id = last["id"];
      last_text =
          fmt::format("{} {}", id.substr(id.find('@') + 1), last["state"].get<std::string>());
    }
    const bool suspended = cron["suspend"].get<bool>();
    table.AddRow({cron["name"], cron["schedule"], cron["time_zone"], cron["concurrency_policy"],
                  suspended ? "suspended" : "scheduled",
                  next.is_number() ? FormatRelative(next.get<TimeMs>(), now) : "-", last_text,
                  std::to_string(cron["active_runs"].size())});
  }
  return table.Render();
}

// `drover cron suspend|resume NAME`: POST /v1/crons/NAME/ACTION.
int SetSuspended(const ClientFlags& flags, const std::string& name, const std::string& action) {
  api::ApiClient client = ClientOf(flags);
  auto response =
      client.Post(fmt::format("/v1/crons/{}/{}", api::UrlEncode(name), action), "", "text/plain");
  if (!response) return ReportError(response.error());
  if (flags.output == "json") {
    std::cout << response->json.dump(2) << "\n";
    return 0;
  }
  const json& next = response->json["next_run_at"];
  if (next.is_number()) {
    std::cout << fmt::format("cron job {} resumed: next run {}\n", name,
                             FormatTimestamp(next.get<TimeMs>()));
  } else {
    std::cout << fmt::format("cron job {} suspended: it starts no run until resumed\n", name);
  }
  return 0;
}

// `drover cron delete NAME`: DELETE /v1/crons/NAME; the runs' jobs stay.
int DeleteCron(const ClientFlags& flags, const std::string& name) {
  api::ApiClient client = ClientOf(flags);
  auto response = client.Delete("/v1/crons/" + api::UrlEncode(name));
  if (!response) return ReportError(response.error());
  if (flags.output == "json") {
    std::cout << response->json.dump(2) << "\n";
  } else {
    std::cout << fmt::format("cron job {} deleted (its runs' jobs stay listed)\n", name);
  }
  return 0;
}

}  // namespace

int CronsCommand(const ClientFlags& flags) {
  api::ApiClient client = ClientOf(flags);
  auto response = client.Get("/v1/crons");
  if (!response) return ReportError(response.error());
  if (flags.output == "json") {
    std::cout << response->json.dump(2) << "\n";
    return 0;
  }
  std::cout << CronTable(response->json["crons"], SystemClock().Now());
  return 0;
}

void AddCronCommands(CLI::App& app, const ClientFlags& flags, std::string& name,
                     std::function<int()>& run) {
  // The callbacks outlive this call: they hold pointers to what the caller keeps alive.
  const ClientFlags* client = &flags;
  const std::string* cron_name = &name;
  std::function<int()>* chosen = &run;
  auto* cron = app.add_subcommand("cron", "list, suspend, resume or delete cron jobs");
  cron->require_subcommand(1);
  auto* ls = cron->add_subcommand("ls", "list cron jobs: state, schedule, next and last run");
  // `drover crons` is the older name of `drover cron ls`.
  auto* crons = app.add_subcommand("crons", "list cron jobs (as `cron ls`)");
  for (auto* list : {ls, crons}) {
    list->callback([=] { *chosen = [=] { return CronsCommand(*client); }; });
  }
  for (const char* action : {"suspend", "resume"}) {
    auto* sub = cron->add_subcommand(
        action, std::string(action) == "suspend"
                    ? "stop starting runs of cron job NAME (running ones go on)"
                    : "start runs of cron job NAME again, from its next due time");
    sub->add_option("name", name, "the cron job")->required();
    sub->callback([=] { *chosen = [=] { return SetSuspended(*client, *cron_name, action); }; });
  }
  auto* remove = cron->add_subcommand("delete", "delete cron job NAME (its runs' jobs stay)");
  remove->add_option("name", name, "the cron job")->required();
  remove->callback([=] { *chosen = [=] { return DeleteCron(*client, *cron_name); }; });
}

}  // namespace drover::cli
