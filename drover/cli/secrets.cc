// `drover secret set|ls|rm` (commands.h).

#include <fmt/format.h>

#include <iostream>
#include <iterator>

#include "drover/api/client.h"
#include "drover/cli/commands.h"
#include "drover/cli/table.h"
#include "drover/cli/text.h"
#include "drover/common/filesystem.h"

namespace drover::cli {
namespace {

using nlohmann::json;

// The value to set: the file at `path`, or standard input for "-".
Result<std::string> ReadValue(const std::string& path) {
  if (path != "-") return ReadWholeFile(path);
  std::string value(std::istreambuf_iterator<char>(std::cin), {});
  if (std::cin.bad()) return Internal("cannot read the secret from standard input");
  return value;
}

}  // namespace

int SecretCommand(const ClientFlags& flags, const SecretFlags& secret) {
  api::ApiClient client = ClientOf(flags);
  const std::string secrets = fmt::format("/v1/teams/{}/secrets", api::UrlEncode(secret.team));
  Result<api::ApiResponse> response = InvalidArgument("unknown action " + secret.action);
  if (secret.action == "set") {
    Result<std::string> value = ReadValue(secret.from_file);
    if (!value) return ReportError(value.error());
    response = client.Put(fmt::format("{}/{}", secrets, api::UrlEncode(secret.name)), *value,
                          "application/octet-stream");
  } else if (secret.action == "rm") {
    response = client.Delete(fmt::format("{}/{}", secrets, api::UrlEncode(secret.name)));
  } else if (secret.action == "ls") {
    response = client.Get(secrets);
  }
  if (!response) return ReportError(response.error());
  if (flags.output == "json") {
    std::cout << response->json.dump(2) << "\n";
    return 0;
  }
  if (secret.action == "set") {
    std::cout << fmt::format("secret {} of team {} set\n", secret.name, secret.team);
  } else if (secret.action == "rm") {
    std::cout << fmt::format("secret {} of team {} removed\n", secret.name, secret.team);
  } else {
    Table table({"NAME", "UPDATED"});
    for (const json& item : response->json["secrets"]) {
      table.AddRow(
          {item["name"].get<std::string>(), FormatTimestamp(item["updated_at"].get<TimeMs>())});
    }
    std::cout << table.Render();
  }
  return 0;
}

}  // namespace drover::cli
