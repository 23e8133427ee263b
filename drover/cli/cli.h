#pragma once

namespace drover::cli {

// Runs the `drover` command line: parses argv, runs the subcommand, returns the exit status.
int Main(int argc, char** argv);

}  // namespace drover::cli
