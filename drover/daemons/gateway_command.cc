#include "drover/daemons/gateway_command.h"

#include <fmt/format.h>

#include <cstdlib>
#include <memory>
#include <string>

#include "drover/cli/cli.h"
#include "drover/daemons/daemons.h"
#include "drover/gateway/gateway.h"
#include "drover/os/files.h"

namespace drover::daemons {
namespace {

struct GatewayFlags {
  std::string listen = "127.0.0.1:8430";
  std::string config;
  std::string token_file;
  std::string ready_file;  // written with the base URL once listening
};

int GatewayCommand(const GatewayFlags& flags, const std::string& server, const std::string& token) {
  auto fail = [](const Error& error) {
    fmt::print(stderr, "drover gateway: {}\n", error.message);
    return 2;
  };
  auto address = SplitHostPort(flags.listen);
  if (!address) return fail(address.error());
  auto config = gateway::LoadConfig(flags.config);
  if (!config) return fail(config.error());
  gateway::GatewayOptions options;
  std::tie(options.host, options.port) = *address;
  options.config = std::move(*config);
  options.server_url = server;
  if (!flags.token_file.empty()) {
    auto read = ReadTokenFile(flags.token_file, "--token-file");
    if (!read) return fail(read.error());
    options.token = *read;
  } else if (const char* env = std::getenv("DROVER_TOKEN"); env != nullptr && *env != '\0') {
    options.token = env;
  } else {
    options.token = token;
  }
  options.seed = static_cast<std::uint64_t>(std::random_device{}());
  auto gateway = gateway::Gateway::Create(std::move(options));
  if (!gateway) return fail(gateway.error());
  const std::string url = fmt::format("http://{}:{}", address->first, (*gateway)->port());
  if (!flags.ready_file.empty()) {
    if (Status written =
            os::WriteFileAtomically(flags.ready_file, url + "\n", os::Durability::kVisible);
        !written) {
      fmt::print(stderr, "drover gateway: {}\n", written.error().message);
    }
  }
  fmt::print(stderr, "drover gateway: serving on {}{}\n", url,
             server.empty() ? "" : fmt::format(" (services from {})", server));
  (*gateway)->Run();
  return 0;
}

}  // namespace

void AddGatewayCommand(CLI::App& app, const cli::ClientFlags& client, std::function<int()>& run) {
  auto flags = std::make_shared<GatewayFlags>();
  auto* command = app.add_subcommand("gateway", std::string(cli::FullVerbHelp("gateway")));
  command->add_option("--listen", flags->listen, "HOST:PORT to serve on (port 0: any)");
  command->add_option("--config", flags->config, "the gateway's YAML configuration")->required();
  command->add_option("--token-file", flags->token_file,
                      "file holding the API token used with --server (default: $DROVER_TOKEN, "
                      "then --token)");
  command->add_option("--ready-file", flags->ready_file,
                      "written with the gateway's base URL once it listens");
  command->callback([&app, &client, &run, flags] {
    // The global --server (or DROVER_SERVER) names the server to poll; its default does not.
    const bool has_server = app.get_option("--server")->count() > 0 ||
                            (std::getenv("DROVER_SERVER") && *std::getenv("DROVER_SERVER"));
    const std::string server = has_server ? client.server : "";
    run = [flags, server, &client] { return GatewayCommand(*flags, server, client.token); };
  });
}

}  // namespace drover::daemons
