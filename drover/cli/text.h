#pragma once

// Helpers shared by the subcommands: reading spec files and rendering API JSON for people.

#include <nlohmann/json.hpp>
#include <string>

#include "drover/common/result.h"
#include "drover/spec/parse.h"

namespace drover::cli {

// The whole file; kInvalidArgument naming the file when it cannot be read ("-" reads stdin).
Result<std::string> ReadSpecFile(const std::string& path);
// Diagnostics name `path`; relative paths in the spec resolve against its directory.
spec::ParseOptions SpecOptionsFor(const std::string& path);
// Prints "drover: MESSAGE" and each detail line to stderr; returns the exit status for it:
// 2 for invalid input, 1 otherwise.
int ReportError(const Error& error);
// $USER, else the password database's name for the uid, else "uid<N>".
std::string CurrentUser();
// `text` cut to `width` characters with "..." when longer.
std::string Truncate(const std::string& text, std::size_t width);
// "key=value:Effect" for a taint in API JSON.
std::string TaintText(const nlohmann::json& taint);
// A multi-line description of a job (API JobDetail JSON) for `drover get`.
std::string DescribeJob(const nlohmann::json& job);

}  // namespace drover::cli
