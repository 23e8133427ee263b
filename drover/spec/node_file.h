#pragma once

// Node inventories: the YAML node file an operator writes for a cluster of agents (or for the
// simulator). (The machine Drover itself runs on is described by agent/local_node.h.)

#include <cstdint>
#include <string>
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

// Node names: 1 to 253 letters, digits, '.', '_' or '-', starting with a letter or digit (a host
// name's characters: no '/', space or control character, so a name is safe in a URL path, a
// file name and a terminal). Node files and agents' registrations alike.
bool IsValidNodeName(std::string_view name);
// "invalid node name 'X': use 1 to 253 letters, ...". Non-printable bytes of X as \xNN.
std::string InvalidNodeNameMessage(std::string_view name);

// The rules every node keeps, for one that did not come from a node file: an agent's
// registration, in codec::ToJson(model::Node)'s form, whose field names the paths use. The name
// as IsValidNodeName; address 1 to 253 printable characters without spaces; cpu_millis and
// memory_bytes from 0 to kMaxNodeCpuMillis and kMaxNodeMemoryBytes; label and taint keys not
// empty, labels and taints without control characters; at most 4096 GPUs, each with a distinct
// index from 0, a model, positive memory_bytes, a distinct uuid (when given), and a MIG layout
// exactly when sharing is mig, which CheckMigLayout accepts.
//
// Errors: kInvalidArgument with message "N errors in <what>" ("1 error in ...") and one detail
// per problem, "<what>: FIELD: message" with FIELD the value's path ("gpus[1].memory_bytes").
Status CheckNode(const model::Node& node, std::string_view what);

inline constexpr std::int64_t kMaxNodeCpuMillis = 1'000'000'000;            // a million CPUs
inline constexpr std::int64_t kMaxNodeMemoryBytes = std::int64_t{1} << 60;  // 1 EiB

}  // namespace drover::spec
