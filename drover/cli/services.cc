// `drover services`, `drover service ls|get|delete` and the service part of `drover submit`
// (commands.h; docs/inference.md).

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

namespace {

// "2/3 ready (min 1, max 4)".
std::string ReplicaText(const json& replicas) {
  return fmt::format("{}/{} ready (min {}, max {})", replicas["ready"].get<int>(),
                     replicas["desired"].get<int>(), replicas["min"].get<int>(),
                     replicas["max"].get<int>());
}

// `drover service get NAME`: the service, then one row per replica; a replica that waits shows
// why (its job's status message, the scheduler's pending reason: `drover explain ID` says more).
int GetService(const ClientFlags& flags, const std::string& name) {
  api::ApiClient client = ClientOf(flags);
  auto response = client.Get("/v1/services/" + api::UrlEncode(name));
  if (!response) return ReportError(response.error());
  const json& s = response->json;
  if (flags.output == "json") {
    std::cout << s.dump(2) << "\n";
    return 0;
  }
  std::cout << fmt::format("service {} ({}): {}, {}\n", s["name"].get<std::string>(),
                           fmt::join(s["models"].get<std::vector<std::string>>(), ", "),
                           s["state"].get<std::string>(), ReplicaText(s["replicas"]));
  std::cout << fmt::format("owner {} team {} queue {} priority {} generation {}\n",
                           s["owner"].get<std::string>(), s["team"].get<std::string>(),
                           s["queue"].get<std::string>(), s["priority"].get<std::string>(),
                           s["generation"].get<int>());
  if (s["load"].is_object()) {
    std::cout << fmt::format("load: {} in flight, {} waiting ({})\n",
                             s["load"]["in_flight"].get<std::int64_t>(),
                             s["load"]["waiting"].get<std::int64_t>(),
                             FormatTimestamp(s["load"]["received_at"].get<TimeMs>()));
  }
  if (s["last_scaling"].is_object()) {
    std::cout << fmt::format("last scaling: {} ({})\n",
                             s["last_scaling"]["reason"].get<std::string>(),
                             FormatTimestamp(s["last_scaling"]["at"].get<TimeMs>()));
  }
  if (s["blocked"].is_string()) {
    std::cout << "blocked: " << s["blocked"].get<std::string>() << "\n";
  }
  Table table({"JOB", "STATE", "READY", "URL", "NODE", "GEN", "PROTECTED", "WHY"});
  for (const json& e : s["endpoints"]) {
    std::string why = "-";
    if (!e["ready"].get<bool>()) {
      auto job = client.Get(fmt::format("/v1/jobs/{}", e["job"].get<std::int64_t>()));
      if (job && job->json.contains("message")) why = job->json["message"].get<std::string>();
    }
    table.AddRow({std::to_string(e["job"].get<std::int64_t>()), e["state"],
                  e["ready"].get<bool>() ? "yes" : "no",
                  e["url"].get<std::string>().empty() ? "-" : e["url"].get<std::string>(),
                  e["node"].get<std::string>().empty() ? "-" : e["node"].get<std::string>(),
                  std::to_string(e["generation"].get<int>()),
                  e["protected"].get<bool>() ? "yes" : "no", why.empty() ? "-" : why});
  }
  std::cout << table.Render();
  return 0;
}

int DeleteService(const ClientFlags& flags, const std::string& name) {
  api::ApiClient client = ClientOf(flags);
  auto response = client.Delete("/v1/services/" + api::UrlEncode(name));
  if (!response) return ReportError(response.error());
  if (flags.output == "json") {
    std::cout << response->json.dump(2) << "\n";
  } else {
    std::cout << fmt::format("service {} deleted: its replicas are stopping\n", name);
  }
  return 0;
}

}  // namespace

int SubmitServices(const ClientFlags& flags, const std::vector<model::ServiceSpec>& services) {
  api::ApiClient client = ClientOf(flags);
  json out = json::array();
  for (const model::ServiceSpec& service : services) {
    auto response = client.Post("/v1/services", codec::ToJson(service).dump(), "application/json");
    if (!response) return ReportError(response.error());
    if (flags.output == "json") {
      out.push_back(response->json);
      continue;
    }
    std::cout << fmt::format("service {} (generation {}): {}\n", service.name,
                             response->json["generation"].get<int>(),
                             ReplicaText(response->json["replicas"]));
  }
  if (flags.output == "json") std::cout << json{{"services", out}}.dump(2) << "\n";
  return 0;
}

int ServicesCommand(const ClientFlags& flags) {
  api::ApiClient client = ClientOf(flags);
  auto response = client.Get("/v1/services");
  if (!response) return ReportError(response.error());
  if (flags.output == "json") {
    std::cout << response->json.dump(2) << "\n";
    return 0;
  }
  Table table({"NAME", "MODELS", "STATE", "READY", "DESIRED", "MIN", "MAX", "QUEUE", "TEAM"});
  for (const json& s : response->json["services"]) {
    const json& r = s["replicas"];
    table.AddRow({s["name"],
                  fmt::format("{}", fmt::join(s["models"].get<std::vector<std::string>>(), ",")),
                  s["state"], std::to_string(r["ready"].get<int>()),
                  std::to_string(r["desired"].get<int>()), std::to_string(r["min"].get<int>()),
                  std::to_string(r["max"].get<int>()), s["queue"], s["team"]});
  }
  std::cout << table.Render();
  return 0;
}

void AddServiceCommands(CLI::App& app, const ClientFlags& flags, std::string& name,
                        std::function<int()>& run) {
  // The callbacks outlive this call: they hold pointers to what the caller keeps alive.
  const ClientFlags* client = &flags;
  const std::string* service_name = &name;
  std::function<int()>* chosen = &run;
  auto* service = app.add_subcommand("service", "list, show or delete inference services");
  service->require_subcommand(1);
  auto* ls = service->add_subcommand("ls", "list services: state, ready and desired replicas");
  auto* services = app.add_subcommand("services", "list services (as `service ls`)");
  for (auto* list : {ls, services}) {
    list->callback([=] { *chosen = [=] { return ServicesCommand(*client); }; });
  }
  auto* get = service->add_subcommand(
      "get", "show service NAME with its replicas: URL, readiness, why one waits");
  get->add_option("name", name, "the service")->required();
  get->callback([=] { *chosen = [=] { return GetService(*client, *service_name); }; });
  auto* remove = service->add_subcommand("delete", "stop every replica of NAME and remove it");
  remove->add_option("name", name, "the service")->required();
  remove->callback([=] { *chosen = [=] { return DeleteService(*client, *service_name); }; });
}

}  // namespace drover::cli
