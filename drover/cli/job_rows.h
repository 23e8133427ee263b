#pragma once

// The jobs of a GET /v1/jobs answer as `drover ls` prints them, read without building the
// answer's JSON tree: a page is up to api::kMaxJobPage summaries (megabytes), and a tree of them
// costs the CLI more to build and free than to read.

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "drover/common/result.h"

namespace drover::cli {

// The fields of a job summary (api::WriteJobSummary) that `drover ls` shows; a field the answer
// lacks keeps its default.
struct JobRow {
  std::int64_t id = 0;
  std::string name;
  std::string owner;
  std::string queue;
  std::string priority;
  std::string state;
  std::string message;
  int attempt = 0;
  std::int64_t gpus = 0;
  std::int64_t queue_wait_ms = 0;  // metrics
  std::int64_t run_time_ms = 0;
  // position, for a ready job the scheduler left waiting: in its queue and in the cluster.
  std::optional<int> in_queue;
  std::optional<int> in_cluster;
};

struct JobRowPage {
  std::vector<JobRow> jobs;
  std::optional<std::int64_t> next;  // the answer's cursor when it is an integer
};

// Reads one GET /v1/jobs answer ({"jobs": [...], "next": ...}); other keys are skipped.
// kInvalidArgument naming the byte when `body` is not JSON, "jobs" when it is missing or not an
// array, and the job's index and field when a field has the wrong type (e.g. "jobs[3].name:
// expected a string").
Result<JobRowPage> ParseJobRows(std::string_view body);

}  // namespace drover::cli
