#pragma once

// How a job's attempts end and start again: `timeout`, `retry` (max_attempts, backoff, the
// failure kinds retried), `checkpoint_dir` and `resume`. Internal to drover/spec; ParseJob
// (job_parser.h) calls them per job mapping.

#include <optional>

#include "drover/model/job_spec.h"
#include "drover/spec/job_parser.h"
#include "drover/spec/job_templates.h"
#include "drover/spec/yaml_reader.h"

namespace drover::spec::internal {

// timeout: a duration greater than zero, into spec.timeout. Reports problems to `sink`.
void ReadTimeout(const Value& v, model::JobSpec& spec, Sink& sink);

// retry (absent: nullopt): {max_attempts, backoff, on}, into `retry`; what is absent or invalid
// keeps its value. Reports problems to `sink`.
void ReadRetry(const std::optional<Value>& v, model::RetryPolicy& retry, Sink& sink);

// checkpoint_dir (resolved against ctx.options.base_dir, templates checked) and resume (which
// needs checkpoint_dir) of `f`, the job mapping, into job.spec. Reports problems to ctx.sink.
void ReadCheckpoint(const Fields& f, const JobContext& ctx, ParsedJob& job);

}  // namespace drover::spec::internal
