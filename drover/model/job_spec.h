#pragma once

// The workload contract (docs/spec.md): what a user asks Drover to run. A JobSpec is a
// validated value; drover/spec turns text into it.

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "drover/common/clock.h"
#include "drover/model/resources.h"

namespace drover::model {

// Constraints a placement must satisfy; a node that violates one is not a candidate.
struct Requirements {
  Resources per_worker;                              // cpu, memory and whole GPUs for each worker
  std::int64_t gpu_memory_bytes = 0;                 // minimum memory of each assigned GPU; 0 = any
  std::vector<std::string> gpu_models;               // acceptable models (any of); empty = any
  std::map<std::string, std::string> node_selector;  // labels a node must carry exactly
  std::vector<Toleration> tolerations;
  bool same_node = false;  // all workers on one node
  // Fractional GPU through a real sharing mechanism; at most one of the two, and only with
  // per_worker.gpus == 0. Each worker then gets a part of one GPU:
  //   gpu_share_millis (1..999): a time-sliced share of a GPU in `timeslice` mode, with
  //     gpu_memory_bytes of that GPU's memory set aside for it (0 = none accounted);
  //   mig_profile (e.g. "1g.18gb"): one MIG instance of that profile on a GPU in `mig` mode.
  std::int32_t gpu_share_millis = 0;
  std::string mig_profile;
  // Non-empty: every worker runs on nodes that carry the same value of this node label (one
  // domain of a topology level, e.g. "rack" or "nvlink-domain"). Nodes without it are excluded.
  std::string topology_level;

  friend bool operator==(const Requirements&, const Requirements&) = default;
};

// Raises the score of nodes carrying label key=value by `weight` (1..100).
struct LabelPreference {
  std::string key;
  std::string value;
  int weight = 1;

  friend bool operator==(const LabelPreference&, const LabelPreference&) = default;
};

// Soft wishes that rank feasible nodes but never exclude one; kept apart from Requirements so
// that adding a preference never changes what is feasible.
struct Preferences {
  std::vector<LabelPreference> node_labels;
  // Non-empty: place every worker within one domain of this label when one has room, else
  // anywhere feasible.
  std::string topology_level;

  friend bool operator==(const Preferences&, const Preferences&) = default;
};

struct RetryPolicy {
  int max_attempts = 1;       // total attempts including the first; 1 = no retry
  DurationMs backoff_ms = 0;  // wait before attempt n+1 is backoff_ms * 2^(n-1)

  friend bool operator==(const RetryPolicy&, const RetryPolicy&) = default;
};

struct JobSpec {
  std::string name;  // unique within one submission; [a-z0-9][a-z0-9._-]{0,62}
  std::string owner;
  std::string team;
  std::string queue = "default";
  std::string priority_class = "normal";  // see PriorityClassValue()
  std::string pipeline;  // groups jobs for per-pipeline concurrency limits; empty = none

  // Exactly one of command (argv, run without a shell) or script (run with /bin/sh -c).
  std::vector<std::string> command;
  std::string script;
  std::string working_dir;  // absolute after parsing with a base dir; empty: the worker directory
  std::map<std::string, std::string> env;

  Requirements requirements;
  Preferences preferences;
  int workers = 1;  // gang size
  // The gang may start with as few as this many workers when `workers` do not fit (the engine
  // then places the most that fit). 0 (the default here) or `workers` (the parser's default):
  // all-or-nothing of `workers`.
  int min_workers = 0;

  std::vector<std::string> depends_on;  // names of jobs that must succeed first
  // Per attempt, from start; also the time limit backfill and start-time estimates rely on.
  std::optional<DurationMs> timeout;
  RetryPolicy retry;
  std::string checkpoint_dir;  // exported as DROVER_CHECKPOINT_DIR; empty = none
  bool interruptible = false;  // may be preempted (docs/scheduling.md)

  friend bool operator==(const JobSpec&, const JobSpec&) = default;
};

// The built-in priority classes of contract v1, highest first: critical (1000), high (100),
// normal (0), low (-100). Returns nullopt for an unknown name.
std::optional<int> PriorityClassValue(std::string_view name);
// The names above, highest first.
const std::vector<std::string>& PriorityClassNames();

}  // namespace drover::model
