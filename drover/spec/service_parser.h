#pragma once

// Reading one `kind: Service` document (docs/inference.md, "The Service spec") into a
// model::ServiceSpec, with the same FILE:LINE:COL diagnostics as jobs. The replica template
// (`template:`) is read by ParseJob (job_parser.h) as a cron job's `job:` is, then the fields a
// long-running replica cannot have (timeout, retry, depends_on, workers, ...) are refused at
// their position. Internal to drover/spec; parse.cc calls it per document.

#include <yaml-cpp/yaml.h>

#include "drover/model/service.h"
#include "drover/spec/diagnostic.h"
#include "drover/spec/yaml_reader.h"

namespace drover::spec::internal {

// Reads `map` (a mapping with kind: Service). Reports every problem to `sink`; the returned
// value is meaningful only when nothing was reported.
model::ServiceSpec ParseService(const YAML::Node& map, const ParseOptions& options, Sink& sink);

}  // namespace drover::spec::internal
