#pragma once

// Dependencies across submissions (docs/workflows.md): besides a job of the same submission or a
// stage of the same pipeline, a Dependency (job_spec.h) may name a job of an earlier submission
// by id, written `job:123`. Job and stage names cannot hold ':', so the two kinds of name never
// meet. Pure functions of the name.

#include <optional>
#include <string>
#include <string_view>

#include "drover/common/ids.h"

namespace drover::model {

// How a dependency on a job of an earlier submission is written: `job:123`.
inline constexpr std::string_view kJobIdPrefix = "job:";

// The job a `job:ID` name stands for (ID a positive decimal integer without sign or leading
// zero, at most 18 digits); nullopt for a name of the same submission or a malformed id.
std::optional<JobId> DependencyJobId(std::string_view name);

// "job 123" for `job:123`, "'prep'" for a name of the same submission: how messages name an
// upstream.
std::string DescribeDependency(std::string_view name);

}  // namespace drover::model
