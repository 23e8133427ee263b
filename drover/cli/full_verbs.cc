// The lean `drover`'s hand-over to drover-full (cli.h).

#include <unistd.h>

#include <CLI/CLI.hpp>
#include <cerrno>
#include <cstring>
#include <iostream>
#include <string>

#include "drover/agent/executables.h"
#include "drover/cli/cli.h"

namespace drover::cli {

std::string_view FullVerbHelp(std::string_view name) {
  for (const FullVerb& verb : kFullVerbs) {
    if (verb.name == name) return verb.help;
  }
  return {};
}

int RunFull(char** argv, std::string_view why) {
  const std::string full = agent::BesideSelf("drover-full");
  if (full.empty()) {
    std::cerr << "drover: " << why << ", which is not beside " << agent::SelfExecutable()
              << " (build it: cmake --build build --target drover-full; install both)\n";
    return 1;
  }
  ::execv(full.c_str(), argv);
  std::cerr << "drover: cannot run " << full << ": " << std::strerror(errno) << "\n";
  return 1;
}

void ForwardToFull(CLI::App& app, const ClientFlags& /*client*/, std::function<int()>& run,
                   char** argv) {
  for (const FullVerb& verb : kFullVerbs) {
    CLI::App* command = app.add_subcommand(std::string(verb.name), std::string(verb.help));
    // Every argument after the verb, --help included, is drover-full's to parse.
    command->prefix_command()->allow_extras()->fallthrough(false)->set_help_flag();
    command->callback([&run, argv, name = verb.name] {
      run = [argv, name] {
        return RunFull(argv, "'" + std::string(name) + "' is a verb of drover-full");
      };
    });
  }
}

}  // namespace drover::cli
