#pragma once

// The job graph: reading a job's depends_on, if, inputs and outputs, and the checks across the
// jobs of one file or the stages of one pipeline (names, dependencies, cycles, uses of upstream
// outputs). Internal to drover/spec; ParseJob (job_parser.h) reads the fields, parse.cc checks
// the groups.

#include <vector>

#include "drover/spec/job_parser.h"
#include "drover/spec/job_templates.h"
#include "drover/spec/yaml_reader.h"

namespace drover::spec::internal {

// Each reader below reads one field `v` of the job being read into job.spec, records the
// dependencies and output uses it implies in `job` for CheckGroup, and reports every problem to
// ctx.sink.

// depends_on: each item a name (condition succeeded) or a one-key mapping {name: condition}.
void ReadDependencies(const Value& v, const JobContext& ctx, ParsedJob& job);

// The dependencies of ParseOptions::after, added to job.spec.depends_on after those the job
// names itself; one the job already names with another condition is reported to `sink`.
void AddAfterDependencies(const ParseOptions& options, ParsedJob& job, Sink& sink);

// if: a condition (workflow::ParseCondition) whose templates are replaced at launch.
void ReadIf(const Value& v, const JobContext& ctx, ParsedJob& job);

// inputs: each {path: P} or {from: STAGE.OUTPUT}; `from` implies a dependency on STAGE (with
// `succeeded`), so read depends_on first.
void ReadInputs(const Value& v, const JobContext& ctx, ParsedJob& job);

// outputs: each {name: N, path: P} (a published file or directory) or {name: N} (a value).
void ReadOutputs(const Value& v, const JobContext& ctx, ParsedJob& job);

// The jobs of one file (`pipeline` false) or the stages of one pipeline: checks names,
// dependencies (adding those inputs imply), cycles and output uses, reporting to `sink`.
void CheckGroup(std::vector<ParsedJob>& jobs, bool pipeline, Sink& sink);

}  // namespace drover::spec::internal
