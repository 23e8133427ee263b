#pragma once

// The verbs drover-full adds to the client's (cli.h): server, agent, run, gateway, render and
// simulate, in the order of cli::kFullVerbs, each with its help line from there.

#include <functional>

#include "drover/cli/cli.h"

namespace drover::daemons {

// A cli::AddFullVerbs.
void AddFullCommands(CLI::App& app, const cli::ClientFlags& client, std::function<int()>& run,
                     char** argv);

}  // namespace drover::daemons
