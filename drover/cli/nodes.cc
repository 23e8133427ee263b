// `drover node cordon|uncordon|drain|maintenance` and the CONDITIONS column of `drover nodes`
// (commands.h; docs/operations.md, "Node lifecycle").

#include <fmt/format.h>

#include <iostream>

#include "drover/api/client.h"
#include "drover/cli/commands.h"
#include "drover/cli/text.h"
#include "drover/common/quantity.h"

namespace drover::cli {
namespace {

using nlohmann::json;

// "now", "+2h" / "2h" (from now), or an ISO time. kInvalidArgument naming `flag` otherwise.
Result<TimeMs> ParseWhen(const std::string& flag, const std::string& text, TimeMs now) {
  if (text == "now") return now;
  const std::string duration = !text.empty() && text.front() == '+' ? text.substr(1) : text;
  if (Result<DurationMs> in = ParseDuration(duration)) return now + *in;
  Result<TimeMs> at = ParseIsoTime(text);
  if (!at) {
    return InvalidArgument(fmt::format(
        "{}: '{}' is neither now, a duration from now (+2h) nor an ISO time (2026-05-01T12:00)",
        flag, text));
  }
  return *at;
}

// One condition as the table shows it: "cordoned 5m ago by admin (reason)".
std::string ConditionText(const json& condition, TimeMs now) {
  const std::string type = condition.value("type", "");
  std::string text = type;
  if (type == "maintenance") {
    const TimeMs from = condition.value("from", TimeMs{0});
    const TimeMs to = condition.value("to", TimeMs{0});
    text =
        condition.value("active", false)
            ? fmt::format("maintenance until {}", FormatRelative(to, now))
            : fmt::format("maintenance {} to {}", FormatRelative(from, now), FormatTimestamp(to));
  } else if (const json since = condition.value("since", json(nullptr)); since.is_number()) {
    text += " " + FormatRelative(since.get<TimeMs>(), now);
  }
  if (const std::string by = condition.value("by", ""); !by.empty()) text += " by " + by;
  if (const std::string message = condition.value("message", ""); !message.empty()) {
    text += " (" + message + ")";
  }
  return text;
}

}  // namespace

std::string NodeConditionsText(const json& node, TimeMs now) {
  std::string text;
  for (const json& condition : node.value("conditions", json::array())) {
    text += (text.empty() ? "" : "; ") + ConditionText(condition, now);
  }
  return text.empty() ? "-" : text;
}

int NodeCommand(const ClientFlags& flags, const NodeFlags& node) {
  api::ApiClient client = ClientOf(flags);
  const std::string path = "/v1/nodes/" + api::UrlEncode(node.name);
  json body = json::object();
  if (!node.reason.empty()) body["reason"] = node.reason;
  Result<api::ApiResponse> response = InvalidArgument("unknown node action");
  if (node.action == "cordon" || node.action == "uncordon") {
    if (node.action == "uncordon") body = json::object();
    response = client.Post(path + "/" + node.action, body.dump(), "application/json");
  } else if (node.action == "drain") {
    if (!node.grace.empty()) {
      Result<DurationMs> grace = ParseDuration(node.grace);
      if (!grace) {
        return ReportError(
            InvalidArgument(fmt::format("--grace: {}", grace.error().message)).value());
      }
      body["grace_ms"] = *grace;
    }
    response = client.Post(path + "/drain", body.dump(), "application/json");
  } else if (node.action == "maintenance" && node.clear) {
    response = client.Delete(path + "/maintenance");
  } else if (node.action == "maintenance") {
    if (node.from.empty() || node.to.empty()) {
      return ReportError(
          InvalidArgument("maintenance: give --from and --to (the window), or --clear to remove it")
              .value());
    }
    const TimeMs now = SystemClock().Now();
    Result<TimeMs> from = ParseWhen("--from", node.from, now);
    if (!from) return ReportError(from.error());
    Result<TimeMs> to = ParseWhen("--to", node.to, now);
    if (!to) return ReportError(to.error());
    body["from"] = *from;
    body["to"] = *to;
    response = client.Put(path + "/maintenance", body.dump(), "application/json");
  }
  if (!response) return ReportError(response.error());
  if (flags.output == "json") {
    std::cout << response->json.dump(2) << "\n";
    return 0;
  }
  std::cout << fmt::format("node {}: {}\n", node.name,
                           NodeConditionsText(response->json, SystemClock().Now()));
  return 0;
}

}  // namespace drover::cli
