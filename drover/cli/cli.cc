#include "drover/cli/cli.h"

#include <cstring>

#include <CLI/CLI.hpp>

#include "drover/agent/supervisor.h"

namespace drover::cli {

int Main(int argc, char** argv) {
  // The supervisor is an internal entry point, exec'd by agents; it parses its own arguments.
  if (argc >= 2 && std::strcmp(argv[1], "supervise") == 0) {
    return agent::SupervisorMain(argc - 1, argv + 1);
  }
  CLI::App app{"drover: GPU workload orchestrator"};
  app.require_subcommand(1);
  CLI11_PARSE(app, argc, argv);
  return 0;
}

}  // namespace drover::cli
