#pragma once

// Workload contract v1 (docs/spec.md, docs/workflows.md): YAML or JSON text -> validated
// model::JobSpec values (kind: Job, kind: Pipeline) and model::CronSpec values (kind: CronJob).
//
// Pure: no file I/O, no clock, no globals. The caller reads the file and passes its text, its
// name (for diagnostics) and its directory (to resolve relative paths).
//
// Validation reports every error it finds, never only the first: each unknown field (with a
// did-you-mean suggestion), wrong type, bad quantity, rule violation and cross-job problem
// (duplicate names, unknown dependencies, dependency cycles, references to outputs that no
// upstream declares) becomes one Diagnostic with the 1-based line and column of the offending
// value (or of the key, for unknown fields).
//
// A file holds jobs (kind: Job documents), or one pipeline (kind: Pipeline), or cron jobs (kind:
// CronJob documents); mixing them is an error.
//
// Thread-safety: the functions are reentrant; they share no state.

#include <string>
#include <string_view>
#include <vector>

#include "drover/common/result.h"
#include "drover/model/cron.h"
#include "drover/model/job_spec.h"
#include "drover/model/service.h"
#include "drover/spec/diagnostic.h"

namespace drover::spec {

struct ParseOutput {
  // The jobs in source order; a pipeline's in stage order, each sweep stage as its trials
  // (STAGE.1 .. STAGE.N). Empty whenever `diagnostics` is not: a half-valid job is never handed
  // out.
  std::vector<model::JobSpec> jobs;
  // The cron jobs in source order (ParseDocumentsWithDiagnostics only); empty on any diagnostic.
  std::vector<model::CronSpec> crons;
  // The services (kind: Service, docs/inference.md) in source order (ParseDocumentsWithDiagnostics
  // only); empty on any diagnostic.
  std::vector<model::ServiceSpec> services;
  // Every problem found, sorted by position (source order).
  std::vector<Diagnostic> diagnostics;
};

// Parses the jobs of `text`: jobs or one pipeline (a CronJob document is an error at its kind).
//   YAML: one job per document (documents separated by ---); a document may also be a
//         sequence of jobs. Empty documents are skipped.
//   JSON: one job object, or an array of job objects (JSON is read as YAML, with positions).
// Never throws, whatever the input.
ParseOutput ParseJobsWithDiagnostics(std::string_view text, const ParseOptions& options);

// As ParseJobsWithDiagnostics. On any diagnostic returns kInvalidArgument with message
// "N errors in FILE" ("1 error in FILE") and details holding every diagnostic's ToString() in
// source order. Input without any job is an error too ("no job found").
Result<std::vector<model::JobSpec>> ParseJobs(std::string_view text, const ParseOptions& options);

// As ParseJobsWithDiagnostics, and cron jobs and services too: a file of jobs, one pipeline,
// cron jobs, or services.
ParseOutput ParseDocumentsWithDiagnostics(std::string_view text, const ParseOptions& options);

struct Documents {
  std::vector<model::JobSpec> jobs;
  std::vector<model::CronSpec> crons;
  std::vector<model::ServiceSpec> services;
};

// As ParseDocumentsWithDiagnostics, failing as ParseJobs does.
Result<Documents> ParseDocuments(std::string_view text, const ParseOptions& options);

// One `drover submit --after` item (docs/workflows.md, "Dependencies across submissions"):
// `ID` or `ID:CONDITION`, ID a job id, CONDITION `ok` (succeeded, the default), `any` (done),
// `failed`, or a condition name (model::kDependencyConditionNames). Returns the dependency
// `job:ID`. kInvalidArgument saying what is wrong with `item` (as written, escaped).
Result<model::Dependency> ParseAfter(std::string_view item);

// At most this many `--after` items in one submission (X-Drover-After): a submission waits on
// a few earlier jobs, and each item is checked against the job table under the API's lock.
inline constexpr int kMaxAfterItems = 64;

// A comma-separated list of ParseAfter items (X-Drover-After), blanks around items ignored.
// kInvalidArgument naming the 1-based position of the first bad item, or saying that there
// are more than kMaxAfterItems.
Result<std::vector<model::Dependency>> ParseAfterList(std::string_view text);

// A digest of a submission's text, for binding an idempotency key to the request body it came
// with (a retry sends the same body; the headers may differ, e.g. a different X-Drover-Base-Dir
// from another directory is still the same request). "fnv1a64:" and 16 hex digits: stable
// across builds and platforms (it is persisted), not cryptographic: it tells a client's
// mistaken reuse of a key, not a forgery. `after` (X-Drover-After, `drover submit --after`)
// changes what the request asks for, so it is digested too when there is any; without it the
// digest is the text's alone, as stored before it existed.
std::string SubmissionDigest(std::string_view text,
                             const std::vector<model::Dependency>& after = {});

}  // namespace drover::spec
