#pragma once

// The `${{ }}` templates in a job's fields: each is checked where it is written (a matrix
// parameter the stage has, a trial only in a sweep, an upstream output only where it is
// replaced at launch) and each use of an upstream output is recorded for the group's checks;
// the confinement of a path field to the job's base directory, templates rendered. Also the
// context the readers of one job's field groups share. Internal to drover/spec.

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

// True when `path` is relative and its ".." components climb above the directory it starts
// from ("../x", "a/../../x"; not "a/../b" nor any absolute path). Lexical: links are not read.
bool ClimbsOut(const std::string& path);

// Whether `written`, the text of path field `v` (working_dir, checkpoint_dir, an input or
// output path), stays in the job's base directory (ctx.options.base_dir; "" for the submitter's
// directory): a relative path that climbs out of it (ClimbsOut), as written or, in a sweep
// stage, with some trial's parameters in place, is reported to ctx.sink and false is returned.
// Absolute paths are allowed: on an agent running as root the job's own account confines them
// (docs/security.md).
bool CheckConfined(const Value& v, const std::string& written, const JobContext& ctx,
                   const ParsedJob& job);

}  // namespace drover::spec::internal
