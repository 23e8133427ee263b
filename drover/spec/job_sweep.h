#pragma once

// Sweeps: reading a pipeline stage's matrix (grid, list or random draws), concurrency,
// objective and early_stopping, and expanding each sweep stage into its trials once the group
// is checked. Internal to drover/spec; ParseJob (job_parser.h) reads the fields, parse.cc
// expands the groups.

#include <optional>
#include <string>
#include <vector>

#include "drover/model/job_spec.h"
#include "drover/spec/job_parser.h"
#include "drover/spec/yaml_reader.h"

namespace drover::spec::internal {

// What a stage's sweep fields declare, for the reading of its other fields (templates, outputs,
// the objective). Empty for a job or a cron job's job.
struct SweepFields {
  // `matrix` is written, even when its value is invalid: the stage has trials, so its templates
  // may name ${{ trial }} and its output paths must differ per trial.
  bool matrix_written = false;
  // The names of the matrix's parameters (meaningful when ParsedJob::matrix is set).
  std::vector<std::string> params;
  // objective.metric, when read: checked against the outputs by CheckObjective.
  std::optional<Value> metric;
};

// The sweep fields of a stage (`f`, the stage mapping at job.prefix) into job.matrix and
// job.spec.trial; also reports a stage name too long for its trials' names (job.spec.name and
// job.name_pos are read before). Reports every problem to `sink`.
SweepFields ReadSweep(const Fields& f, ParsedJob& job, Sink& sink);

// The objective's metric (sweep.metric) names a value output of the stage; call after the
// stage's outputs are read.
void CheckObjective(const SweepFields& sweep, const ParsedJob& job, Sink& sink);

// `text` with a trial's parameters and index (1-based) in place of its `${{ matrix.* }}` and
// `${{ trial }}` templates; stage outputs stay for the launch. `text` as written when a template
// does not render (parsing reports those).
std::string RenderTrial(const std::string& text, const workflow::ParamSet& params, int index);

// The job specs of a checked group, in order: one per job or stage, one per trial of a sweep
// (named STAGE.N, templates of its parameters replaced). Moves the specs out of `jobs`.
std::vector<model::JobSpec> ExpandGroup(std::vector<ParsedJob>& jobs, const std::string& base_dir);

}  // namespace drover::spec::internal
