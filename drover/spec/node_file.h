#pragma once

// Node inventories: the YAML node file an operator writes for a cluster of agents (or for the
// simulator). (The machine Drover itself runs on is described by agent/local_node.h.)

#include <string_view>
#include <vector>

#include "drover/common/result.h"
#include "drover/model/node.h"

namespace drover::spec {

// Parses a node file:
//
//   nodes:
//     - name: gpu-a                 # required, unique
//       address: 10.0.0.7           # optional, default 127.0.0.1
//       labels: {zone: a, rack: "3"}
//       taints: ["dedicated=infer:NoSchedule", {key: k, value: v, effect: NoExecute}]
//       cpu: "64"                   # ParseCpuMillis
//       memory: 512Gi               # ParseBytes
//       gpus: 8xH100-80GB           # ParseGpuDeclaration, or a list of entries:
//       # gpus:
//       #   - {count: 4, model: H100, memory: 80Gi, topology_group: nvl0}
//       #   - {count: 2, model: H100, memory: 80Gi, sharing: timeslice}
//       #   - {count: 2, model: A100, memory: 40Gi, sharing: mig, mig: {3g.20gb: 2, 1g.5gb: 1}}
//       #   - {model: RTX4090, memory: 24GB, uuid: GPU-...}
//
// cpu and memory are required. In a GPU list, model is required, memory defaults as in
// ParseGpuDeclaration, count defaults to 1 and uuid is allowed only with count 1. `sharing`
// (model::GpuSharing) is exclusive (the default: whole GPUs only), timeslice (shared by jobs
// asking gpu_share) or mig (cut into the MIG instances of `mig`, a map of profile to count in
// the order written, checked by CheckMigLayout; `mig` is required with sharing: mig and allowed
// only with it). Every GPU of an entry gets the entry's settings. Topology levels such as racks
// and NVLink domains are node labels (labels: {rack: r1, nvlink-domain: nvl-a}); topology_group
// groups GPUs within a node. Declared GPUs get the uuid "GPU-declared-<node>-<index>" unless one
// is given, so uuids are unique across a cluster. Unknown keys are errors (they are usually
// typos).
//
// Errors: kInvalidArgument as the spec parsers report (DiagnosticsError, diagnostic.h):
// `message` is "N errors in FILE" and `details` holds every problem in position order, each as
// "FILE:LINE:COL: error: FIELD: message" with `file_name` as FILE and FIELD the path of the
// value ("nodes[1].gpus[0].count"; empty for the document itself).
Result<std::vector<model::Node>> ParseNodeFile(std::string_view text, std::string_view file_name);

}  // namespace drover::spec
