#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "drover/common/clock.h"
#include "drover/common/ids.h"
#include "drover/model/names.h"
#include "drover/model/resources.h"

namespace drover::model {

// How a GPU is handed out (docs/scheduling.md, "Fractional GPUs"). Only a real mechanism
// makes a fraction: an exclusive GPU goes whole to one worker; a timeslice GPU is shared by
// workers asking gpu_share (1000 milli-shares of compute and its memory_bytes of memory in all);
// a MIG GPU is cut into the instances listed in Gpu::mig.
enum class GpuSharing { kExclusive, kTimeslice, kMig };

inline constexpr NameTable kGpuSharingNames{std::array{
    NameEntry{GpuSharing::kExclusive, "exclusive"},
    NameEntry{GpuSharing::kTimeslice, "timeslice"},
    NameEntry{GpuSharing::kMig, "mig"},
}};
static_assert(kGpuSharingNames.size() == static_cast<std::size_t>(GpuSharing::kMig) + 1);
// kGpuSharingNames.Name / Parse.
std::string_view GpuSharingName(GpuSharing sharing);
std::optional<GpuSharing> ParseGpuSharing(std::string_view name);

// `count` MIG instances of `profile` (e.g. "3g.71gb") on one GPU.
struct MigSlots {
  std::string profile;
  int count = 0;

  friend bool operator==(const MigSlots&, const MigSlots&) = default;
};

// One physical GPU of a node as discovered (NVML) or declared.
struct Gpu {
  int index = 0;      // device index on the node; what CUDA_VISIBLE_DEVICES names
  std::string uuid;   // NVML UUID, or a synthetic "GPU-declared-<node>-<index>"
  std::string model;  // normalized short name, e.g. "H100", "A100", "H200"
  std::int64_t memory_bytes = 0;
  // GPUs in one group talk over a fast link (NVLink domain / NUMA island). Empty: ungrouped.
  std::string topology_group;
  GpuSharing sharing = GpuSharing::kExclusive;
  std::vector<MigSlots> mig;  // with kMig: the instances it is cut into

  friend bool operator==(const Gpu&, const Gpu&) = default;
};

// A machine that runs workers: its fixed capacity, labels and taints.
struct Node {
  NodeId name;
  std::map<std::string, std::string> labels;
  std::vector<Taint> taints;
  std::int64_t cpu_millis = 0;
  std::int64_t memory_bytes = 0;
  std::vector<Gpu> gpus;
  // Host name or IP other nodes reach this one at; gang rank 0's node gives
  // DROVER_MASTER_ADDR. "127.0.0.1" for the embedded agent.
  std::string address = "127.0.0.1";

  friend bool operator==(const Node&, const Node&) = default;
};

// A maintenance window an operator set on a node (drover node maintenance): nothing is placed
// there during [from, to), nor any job whose time limit would carry it past `from` (a job without
// one is never placed there before the window). Running jobs are not touched.
struct MaintenanceWindow {
  TimeMs from = 0;
  TimeMs to = 0;   // > from
  std::string by;  // model::Describe of whoever set it
  TimeMs set_at = 0;
  std::string reason;  // free text, may be empty

  friend bool operator==(const MaintenanceWindow&, const MaintenanceWindow&) = default;
};

// What operators did to a node (docs/operations.md, "Node lifecycle"), kept in the store so
// that it survives a restart. A node never touched has the default value.
struct NodeAdmin {
  // Cordoned (drover node cordon, or drain): no new placements; running jobs keep running.
  bool cordoned = false;
  TimeMs cordoned_at = 0;
  std::string cordoned_by;
  std::string reason;
  // Draining (drover node drain; implies cordoned): checkpointing jobs were preempted with
  // notice; the others run to their end or until drain_deadline (0: no grace, they run to their
  // end), then are stopped with cause node_drain. drained_at: when it was first seen empty.
  bool draining = false;
  TimeMs draining_at = 0;
  TimeMs drain_deadline = 0;
  TimeMs drained_at = 0;
  std::optional<MaintenanceWindow> maintenance;

  friend bool operator==(const NodeAdmin&, const NodeAdmin&) = default;
};

}  // namespace drover::model
