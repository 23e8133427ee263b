#pragma once

// Reading one job mapping (a `kind: Job` document, a pipeline stage, a cron job's `job:`) into a
// model::JobSpec: ParseJob reads the fields common to every job (kind, name, owner, team, queue,
// priority, image, command or script, working_dir, env, workers) and hands each other field
// group to its reader: job_resources.h (resources, placement), job_sweep.h (a stage's matrix
// and objective), job_graph.h (depends_on, if, inputs, outputs), job_retry.h (timeout, retry,
// checkpoint_dir, resume), with the templates of every field checked by job_templates.h.
// parse.cc drives it per document, then checks each group (CheckGroup, job_graph.h) and expands
// its sweeps (ExpandGroup, job_sweep.h). Internal to drover/spec.

#include <yaml-cpp/yaml.h>

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "drover/model/job_spec.h"
#include "drover/model/names.h"
#include "drover/spec/diagnostic.h"
#include "drover/spec/yaml_reader.h"
#include "drover/workflow/matrix.h"

namespace drover::spec::internal {

// Which mapping is read; each admits its own fields.
enum class JobForm {
  kJob,      // a `kind: Job` document: kind and name required
  kStage,    // a pipeline stage: no kind or pipeline; matrix, concurrency, objective, ...
  kCronJob,  // a cron job's `job:`: no kind; the name defaults to the cron job's
};

// A dependency as written (or implied by an input `from`), with where.
struct DependencyUse {
  model::Dependency dependency;
  std::string path;  // "depends_on[1]", "stages[2].inputs[0].from"
  Pos pos;
  bool implied = false;  // from an input, not depends_on
};

// A use of an upstream's output: a `${{ stages.S.outputs.N }}` template or an input `from`.
struct OutputUse {
  std::string stage;
  std::string output;
  std::string path;
  Pos pos;
};

struct ParsedJob {
  // The job; for a sweep stage, before its `${{ matrix.* }}` and `${{ trial }}` templates are
  // replaced per trial.
  model::JobSpec spec;
  std::string prefix;           // the field path of the mapping: "" or "stages[1]"
  Pos pos;                      // the mapping
  std::optional<Pos> name_pos;  // set when the name is valid
  std::vector<DependencyUse> dependencies;
  std::vector<OutputUse> output_uses;
  std::optional<workflow::Matrix> matrix;  // a sweep stage
};

// Reads `map` (a mapping) at field path `prefix` ("" or "stages[1]"). Fields absent from `map`
// keep their value in `base` (a pipeline's owner, team, queue and priority; a cron job's name)
// or the contract's defaults. Reports every problem to `sink`.
ParsedJob ParseJob(const YAML::Node& map, const std::string& prefix, JobForm form,
                   const model::JobSpec& base, const ParseOptions& options, Sink& sink);

// owner, team, queue and priority of `f` into `spec` (a job's, or a pipeline's defaults).
void ReadJobDefaults(const Fields& f, model::JobSpec& spec, Sink& sink);

// The kinds of document a spec file holds, each in its `kind:` spelling.
enum class DocumentKind { kJob, kPipeline, kCronJob, kService };
inline constexpr model::NameTable kDocumentKindNames{std::array{
    model::NameEntry{DocumentKind::kJob, "Job"},
    model::NameEntry{DocumentKind::kPipeline, "Pipeline"},
    model::NameEntry{DocumentKind::kCronJob, "CronJob"},
    model::NameEntry{DocumentKind::kService, "Service"},
}};
static_assert(kDocumentKindNames.size() == static_cast<std::size_t>(DocumentKind::kService) + 1);

// "unsupported kind 'Jb' (did you mean 'Job'?); expected Job, Pipeline, CronJob or Service".
std::string UnsupportedKindMessage(std::string_view kind);

// base_dir / path, lexically normalized, without a trailing slash; `path` as written when
// base_dir is empty. The file system is not read.
std::string ResolvePath(const std::string& base_dir, const std::string& path);

}  // namespace drover::spec::internal
