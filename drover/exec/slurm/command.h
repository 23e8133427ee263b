#pragma once

// Runs a command and collects its output: the Slurm executor's way of talking to Slurm.

#include <optional>
#include <string>
#include <vector>

namespace drover::exec::slurm {

struct CommandResult {
  int exit_code = -1;  // -1: it could not be started, or was killed by a signal
  std::string out;
  std::string err;  // or why it could not be started

  bool ok() const { return exit_code == 0; }
};

// Runs argv (argv[0] looked up in PATH) with `input` on its stdin, waits for it and returns
// what it wrote. The child gets `environment` (NAME=VALUE each) or, without one, inherits this
// process's (SLURM_CONF...).
CommandResult RunCommand(const std::vector<std::string>& argv, const std::string& input = "",
                         const std::optional<std::vector<std::string>>& environment = {});

// This process's environment, NAME=VALUE each.
std::vector<std::string> ProcessEnvironment();

}  // namespace drover::exec::slurm
