#pragma once

// Workload contract v1 (docs/spec.md): YAML or JSON text -> validated model::JobSpec values.
//
// Pure: no file I/O, no clock, no globals. The caller reads the file and passes its text, its
// name (for diagnostics) and its directory (to resolve relative paths).
//
// Validation reports every error it finds, never only the first: each unknown field (with a
// did-you-mean suggestion), wrong type, bad quantity, rule violation and cross-job problem
// (duplicate names, unknown dependencies, dependency cycles) becomes one Diagnostic with the
// 1-based line and column of the offending value (or of the key, for unknown fields).
//
// Thread-safety: the functions are reentrant; they share no state.

#include <string>
#include <string_view>
#include <vector>

#include "drover/common/result.h"
#include "drover/model/job_spec.h"

namespace drover::spec {

struct ParseOptions {
  // Names the input in diagnostics ("FILE:LINE:COL: ...").
  std::string file_name = "<input>";
  // An absolute directory against which relative working_dir and checkpoint_dir are resolved
  // (a string join followed by lexical normalization; the file system is never consulted).
  // Empty: the paths are kept as written.
  std::string base_dir;
};

// One problem found in the input.
struct Diagnostic {
  std::string file;
  int line = 1;    // 1-based
  int column = 1;  // 1-based
  // Where in the job the problem is, e.g. "resources.gpus", "placement.tolerations[1].effect",
  // "depends_on[0]"; empty for problems with the document itself (syntax, not a mapping).
  std::string field;
  std::string message;

  // "FILE:LINE:COL: error: FIELD: message", or "FILE:LINE:COL: error: message" without a field.
  std::string ToString() const;

  friend bool operator==(const Diagnostic&, const Diagnostic&) = default;
};

struct ParseOutput {
  // The jobs in source order. Empty whenever `diagnostics` is not: a half-valid job is never
  // handed out.
  std::vector<model::JobSpec> jobs;
  // Every problem found, sorted by position (source order).
  std::vector<Diagnostic> diagnostics;
};

// Parses one or more jobs from `text`.
//   YAML: one job per document (documents separated by ---); a document may also be a
//         sequence of jobs. Empty documents are skipped.
//   JSON: one job object, or an array of job objects (JSON is read as YAML, with positions).
// Never throws, whatever the input.
ParseOutput ParseJobsWithDiagnostics(std::string_view text, const ParseOptions& options);

// As ParseJobsWithDiagnostics. On any diagnostic returns kInvalidArgument with message
// "N errors in FILE" ("1 error in FILE") and details holding every diagnostic's ToString() in
// source order. Input without any job is an error too ("no job found").
Result<std::vector<model::JobSpec>> ParseJobs(std::string_view text, const ParseOptions& options);

}  // namespace drover::spec
