#pragma once

// What the spec parsers (jobs: parse.h, the scheduling policy: policy.h) take and report: the
// options naming the input, and one Diagnostic per problem found.

#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "drover/common/result.h"
#include "drover/model/job_spec.h"
#include "drover/spec/limits.h"

namespace drover::spec {

struct ParseOptions {
  // Names the input in diagnostics ("FILE:LINE:COL: ...").
  std::string file_name = "<input>";
  // An absolute directory against which relative working_dir and checkpoint_dir are resolved
  // (a string join followed by lexical normalization; the file system is never consulted).
  // Empty: the paths are kept as written. Job specs only.
  std::string base_dir;
  // The bounds the input must keep (limits.h); the expansion bound applies to every parser.
  SpecLimits limits;
  // The value of hold_infeasible for jobs whose spec does not set it (`drover submit
  // --hold-infeasible`). Job specs only.
  bool hold_infeasible = false;
  // Dependencies on jobs of earlier submissions (each named `job:ID`) that every job of the
  // input gets besides its own depends_on (`drover submit --after`, the X-Drover-After header;
  // ParseAfter reads them). Job specs only: a cron job's runs take none.
  std::vector<model::Dependency> after;
  // Whether a cron job's time_zone names a zone of the tz database the caller trusts (the CLI
  // passes one that reads the OS's zoneinfo files); a name it refuses is an error at the value's
  // position. Empty: time_zone is not checked here (the server checks it at submission, with its
  // date library). The parser stays pure: the caller's function is the only look-up.
  std::function<bool(std::string_view)> known_time_zone;
};

// One problem found in the input.
struct Diagnostic {
  std::string file;
  int line = 1;    // 1-based
  int column = 1;  // 1-based
  // Where in the document the problem is, e.g. "resources.gpus",
  // "placement.tolerations[1].effect", "queues[0].children[1].quota.gpu"; empty for problems
  // with the document itself (syntax, not a mapping).
  std::string field;
  std::string message;

  // "FILE:LINE:COL: error: FIELD: message", or "FILE:LINE:COL: error: message" without a field.
  std::string ToString() const;

  friend bool operator==(const Diagnostic&, const Diagnostic&) = default;
};

// kInvalidArgument with message "N errors in FILE" ("1 error in FILE") and one detail line per
// diagnostic (its ToString(), in the order given). Requires a non-empty `diagnostics`.
tl::unexpected<Error> DiagnosticsError(const std::vector<Diagnostic>& diagnostics,
                                       const std::string& file_name);

}  // namespace drover::spec
