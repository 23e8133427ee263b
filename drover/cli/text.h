#pragma once

// Helpers shared by the subcommands: reading spec files and rendering API JSON for people.

#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>

#include "drover/common/clock.h"
#include "drover/common/result.h"
#include "drover/spec/parse.h"

namespace drover::cli {

// The whole file ("-" reads stdin); kInvalidArgument naming the file when it cannot be read, is
// a directory, or holds more than spec::kMaxSpecFileBytes (read no further than that).
Result<std::string> ReadSpecFile(const std::string& path);
// Diagnostics name `path`; relative paths in the spec resolve against its directory; a cron
// job's time_zone must be a zone of this machine's zoneinfo (ZoneinfoHas).
spec::ParseOptions SpecOptionsFor(const std::string& path);
// Whether `zoneinfo_dir` (the OS tz database, /usr/share/zoneinfo, which the server's date
// library reads too) has a zone file (TZif) named `name`: a relative name without "..". True for
// every name when the directory does not exist (no tz database here: the server decides at
// submission, as it does for names this machine knows and the server's does not).
bool ZoneinfoHas(std::string_view name, const std::string& zoneinfo_dir = "/usr/share/zoneinfo");
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
// A duration in milliseconds (a JSON number) for a table cell: "1.5s", or "-" when 0 or absent.
std::string FormatMs(const nlohmann::json& ms);
// The same for a number of milliseconds: "-" when not positive.
std::string FormatMs(std::int64_t ms);
// A lifecycle split (api::SplitView) on one line, its phases that took time in order:
// "queue 5ms, startup 40ms, run 1.2s" ("-" when none did).
std::string DescribeSplit(const nlohmann::json& split);

// "throughput: 1250 samples/s (2.25e+06 samples per GPU-hour, 4.2 samples per joule)" from
// GET /v1/jobs/{id}/usage's "work" (an object; a null rate is left out).
std::string DescribeWorkRates(const nlohmann::json& work);
// A pipeline run (GET /v1/pipelines/{id}) as a tree: its state, each stage with its state,
// times, dependencies and outputs and, under a sweep, each trial with its parameters; then the
// run's lifecycle split.
std::string DescribePipeline(const nlohmann::json& run);
// `drover cancel --pipeline`: the run's state after the cancel (a summary of POST
// /v1/pipelines/{id}/cancel) in one line: "pipeline run 20 (etl) cancelled", "... is being
// cancelled: 2 jobs stopping" while stopped jobs exit, or "...: its unfinished jobs were
// cancelled; it is now failed" when the roll-up reads otherwise (a stage had failed).
std::string DescribeCancelledPipeline(const nlohmann::json& run);
// What a listing prints for an empty team, owner or queue: "(none)", never a blank.
inline constexpr std::string_view kNone = "(none)";
// `text`, or kNone when it is empty.
std::string OrNone(const std::string& text);
// `drover goodput`: the groups of GET /v1/goodput and their total as a table.
std::string DescribeGoodput(const nlohmann::json& report);
// `at` (ms since the epoch) as local time, "2026-11-30 14:05:09".
std::string FormatTimestamp(TimeMs at);
// A --since flag's value: an ISO/RFC 3339 time (ParseIsoTime: "2026-12-01T08:00:00Z"; without
// a zone, local time) or a duration ago from `now` ("24h", "30m"). kInvalidArgument naming
// --since and quoting the text otherwise.
Result<TimeMs> ParseSince(const std::string& text, TimeMs now);
// How far `at` is from `now`: "in 3m", "2m ago", "now" (within a second).
std::string FormatRelative(TimeMs at, TimeMs now);
// A number of GPUs: "8", "2.5", "0.25" (at most 3 decimals, no trailing zeros).
std::string FormatGpuCount(double gpus);
// `drover queues`: the table of GET /v1/queues.
std::string DescribeQueues(const nlohmann::json& queues);
// `drover why`: the decision log of GET /v1/jobs/{id}/decisions, one entry per decision.
std::string DescribeDecisions(const nlohmann::json& decisions);
// What users did to a job (GET /v1/jobs/{id}): its transitions whose actor is not "system",
// one line each with the time, the actor and the cause; "" when there are none.
std::string DescribeUserActions(const nlohmann::json& job);

}  // namespace drover::cli
