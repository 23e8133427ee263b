#pragma once

// `drover gateway`: the inference gateway (drover/gateway/gateway.h; docs/inference.md,
// "The gateway").

#include <CLI/CLI.hpp>
#include <functional>

#include "drover/cli/commands.h"

namespace drover::daemons {

// Adds `drover gateway --listen HOST:PORT --config FILE [--token-file F] [--ready-file F]` to
// `app`. With the global --server (or DROVER_SERVER) set, the gateway polls that server's
// services with the token of --token-file, else $DROVER_TOKEN, else --token; without it, it
// routes to the config's static endpoints only. The chosen command sets `run`; `app`, `client`
// and `run` must outlive the parse and the run.
void AddGatewayCommand(CLI::App& app, const cli::ClientFlags& client, std::function<int()>& run);

}  // namespace drover::daemons
