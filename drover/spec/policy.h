#pragma once

// The scheduling policy file (docs/scheduling-policy-file.md): YAML or JSON text -> a validated
// model::Policy (the queue tree with quotas, borrowing and lending limits, concurrency limits,
// fair share, aging, scoring, queue order, preemption and backfill settings).
//
//   kind: Policy
//   queues:
//     - name: org
//       limits: {max_running_jobs: 100, gpu: 64}
//       children:
//         - name: team-a
//           weight: 2
//           quota: {gpu: 4, cpu: 64, memory: 512Gi, gpu_models: {H100: 4}}
//           borrowing_limit: {gpu: 4}
//           lending_limit: {gpu: 2}
//           user_limits: {max_running_jobs: 4, gpu: 2}
//   pipeline_limits: {max_running_jobs: 2}
//   fair_share: {half_life: 1h}
//   aging: {interval: 10m, step: 100, max: 1000}
//   scoring: binpack
//   order: fair-share                  # or fifo, sjf, las (model::QueueOrderName)
//   las: {thresholds: [3250, 7200]}    # GPU-seconds, ascending, each >= 1; for order: las
//   preemption: {enabled: true, min_run_time: 5m, grace_period: 30s}
//   backfill: {enabled: true}
//
// Resource amounts map to model::ResourceAmounts: "cpu" in millicores (ParseCpuMillis), "memory"
// in bytes (ParseBytes), "gpu" in milli-GPUs ("4" is 4000, "2500m" 2500, "0.5" 500), and each
// gpu_models entry to "gpu:<model lower-cased>" in milli-GPUs. las.thresholds are whole
// GPU-seconds into model::Policy::las_thresholds; a list written replaces the default whole.
//
// Pure, as parse.h: no file I/O (the caller reads the file and passes its text and name), no
// clock, no globals; reentrant. Every problem is reported, each as one Diagnostic
// ("FILE:LINE:COL: error: FIELD: message"), and no policy is returned from text with any.

#include <optional>
#include <string_view>
#include <vector>

#include "drover/common/result.h"
#include "drover/model/policy.h"
#include "drover/spec/diagnostic.h"

namespace drover::spec {

struct PolicyParseOutput {
  // Set exactly when `diagnostics` is empty: a half-valid policy is never handed out.
  std::optional<model::Policy> policy;
  // Every problem found, sorted by position.
  std::vector<Diagnostic> diagnostics;
};

// Parses one policy: a single YAML document (or JSON object) with kind: Policy. Empty documents
// around it are skipped; a second policy document, or none, is an error. `options.base_dir` is
// not used. Never throws, whatever the input.
PolicyParseOutput ParsePolicyWithDiagnostics(std::string_view text, const ParseOptions& options);

// As ParsePolicyWithDiagnostics. On any diagnostic returns kInvalidArgument with message
// "N errors in FILE" ("1 error in FILE") and details holding every diagnostic's ToString() in
// source order.
Result<model::Policy> ParsePolicy(std::string_view text, const ParseOptions& options);

}  // namespace drover::spec
