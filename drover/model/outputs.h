#pragma once

// Where an attempt stages its declared outputs before they are published (docs/workflows.md,
// "Inputs and outputs"). Pure: paths are computed, never touched.

#include <cstddef>
#include <string>
#include <vector>

#include "drover/common/ids.h"
#include "drover/model/job_spec.h"

namespace drover::model {

// One output of one attempt: where the attempt writes it and where it is published.
struct StagedOutput {
  std::string name;
  std::string staging;      // $DROVER_OUTPUT_<NAME> of the attempt
  std::string destination;  // the declared path; empty: a value output (read, not moved)

  friend bool operator==(const StagedOutput&, const StagedOutput&) = default;
};

// The staging location of a path output `destination` for (job, attempt): next to it, on the
// same file system, so that publishing is a rename:
//   dirname(destination)/.drover-staging/job-ID.attempt-N/basename(destination)
std::string StagingPathFor(const std::string& destination, JobId job, int attempt);

// The longest value a value output may have, in bytes (its first line, without the newline).
inline constexpr std::size_t kMaxOutputValueBytes = 4096;
// The longest output name (a spec's names are 1 to 63 lowercase letters, digits and '_').
inline constexpr std::size_t kMaxOutputNameBytes = 63;

// Where a worker run by an agent writes its value outputs: in the worker's own directory on its
// node, `worker_dir`/outputs. The node reads each value after the worker exited 0 and reports it
// with the exit (ExitStatus::output_values), so a value reaches the server from any node, with
// or without a file system the two share.
std::string NodeValueOutputDir(const std::string& worker_dir);
// NodeValueOutputDir(worker_dir)/NAME: where the worker writes value output `name`.
std::string NodeValueOutputPath(const std::string& worker_dir, const std::string& name);

// Every output of `spec` staged for (job, attempt). A value output stages at
// value_root/job-ID/attempt-N/NAME: where an external executor's job writes it (the server reads
// it there); a worker run by an agent writes it at NodeValueOutputPath instead.
std::vector<StagedOutput> StagedOutputs(const JobSpec& spec, JobId job, int attempt,
                                        const std::string& value_root);

// "DROVER_OUTPUT_" + the output name in upper case.
std::string OutputVariable(const std::string& name);

// The directory part of `path` ("." when it has none).
std::string DirectoryOf(const std::string& path);

}  // namespace drover::model
