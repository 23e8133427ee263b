// `drover hold`, `release`, `update` and `requeue` (commands.h): the job verbs, each one POST of
// docs/api.md's "Job verbs" that answers the job's summary.

#include <fmt/format.h>

#include <iostream>

#include "drover/api/client.h"
#include "drover/cli/commands.h"
#include "drover/cli/text.h"

namespace drover::cli {

using nlohmann::json;

namespace {

// The body of the verb's request: the reason and, for update, the fields to change.
json VerbBody(const JobVerbFlags& verb) {
  json body = json::object();
  if (!verb.reason.empty()) body["reason"] = verb.reason;
  if (verb.name != "update") return body;
  if (!verb.priority.empty()) body["priority"] = verb.priority;
  if (!verb.timeout.empty()) body["timeout"] = verb.timeout;
  if (!verb.queue.empty()) body["queue"] = verb.queue;
  return body;
}

// One line saying what the verb left the job as.
std::string Describe(const std::string& verb, const json& job) {
  const std::string head = fmt::format("job {} ({})", job.value("id", std::int64_t{0}),
                                       job.value("name", std::string()));
  if (verb == "hold")
    return head + " is held; it keeps its place in queue " + job.value("queue", "");
  if (verb == "release") return fmt::format("{} is released ({})", head, job.value("state", ""));
  if (verb == "requeue") return head + " is being stopped and requeued";
  return fmt::format("{} updated; it is {} with priority {} in queue {}", head,
                     job.value("state", ""), job.value("priority", ""), job.value("queue", ""));
}

}  // namespace

int JobVerbCommand(const ClientFlags& flags, const std::string& id, const JobVerbFlags& verb) {
  if (verb.name == "update" && verb.priority.empty() && verb.timeout.empty() &&
      verb.queue.empty()) {
    std::cerr << "drover update: nothing to change; give --priority, --timeout and/or --queue\n";
    return 2;
  }
  api::ApiClient client = ClientOf(flags);
  auto response = client.Post(fmt::format("/v1/jobs/{}/{}", api::UrlEncode(id), verb.name),
                              VerbBody(verb).dump(), "application/json");
  if (!response) return ReportError(response.error());
  if (flags.output == "json") {
    std::cout << response->json.dump(2) << "\n";
    return 0;
  }
  std::cout << Describe(verb.name, response->json) << "\n";
  return 0;
}

}  // namespace drover::cli
