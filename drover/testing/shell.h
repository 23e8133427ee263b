#pragma once

// Running a shell command line from a test.

#include <string>

namespace drover::testing {

// Runs `command` with /bin/sh (popen); returns what it wrote to stdout, and its exit code in
// *code when `code` is given (-1 when it did not exit normally or could not be started).
std::string Shell(const std::string& command, int* code = nullptr);

}  // namespace drover::testing
