#pragma once

// The `${{ }}` templates in a job's fields: each is checked where it is written (a matrix
// parameter the stage has, a trial only in a sweep, an upstream output only where it is
// replaced at launch) and each use of an upstream output is recorded for the group's checks.
// Also the context the readers of one job's field groups share. Internal to drover/spec.

#include "drover/spec/diagnostic.h"
#include "drover/spec/job_parser.h"
#include "drover/spec/job_sweep.h"
#include "drover/spec/yaml_reader.h"

namespace drover::spec::internal {

// What the readers of one job mapping's fields share while ParseJob reads it.
struct JobContext {
  const ParseOptions& options;
  Sink& sink;
  SweepFields sweep;  // set once the stage's sweep fields are read
};

// Where a field's templates are replaced: parse-time ones only (paths), or also stage outputs
// at launch (command, script, env, if).
enum class TemplateScope { kParse, kLaunch };

// The templates in the scalars of `v` (a string, list or mapping of strings): malformed ones,
// matrix parameters the stage lacks, and stage outputs where they are not replaced are
// reported to ctx.sink; stage output uses are recorded in job.output_uses for CheckGroup.
void ScanTemplates(const Value& v, TemplateScope scope, const JobContext& ctx, ParsedJob& job);

}  // namespace drover::spec::internal
