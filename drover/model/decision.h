#pragma once

// The decision log: every admission, placement, reservation and preemption the scheduler makes,
// with what it weighed. Appended by the controller, kept in the store, served by
// GET /v1/jobs/{id}/decisions (`drover why ID`).

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "drover/common/clock.h"
#include "drover/common/ids.h"
#include "drover/model/names.h"

namespace drover::model {

// A job chosen to make room, and the work it loses.
struct Victim {
  JobId job;
  std::string queue;
  int gpus = 0;                   // GPUs it held
  double lost_gpu_seconds = 0.0;  // GPU-seconds since its last checkpoint (or start)
  bool has_checkpoint = false;    // it resumes from a checkpoint

  friend bool operator==(const Victim&, const Victim&) = default;
};

struct Decision {
  enum class Kind {
    kPlaced,     // admitted and placed
    kReserved,   // the top blocked job: resources reserved for its estimated start
    kPreempted,  // victims chosen to make room for this job
    kEvicted,    // this job was chosen as a victim
    // A service's autoscaler changed its replica count (docs/inference.md, "Autoscaling"); the
    // decision is about the replica started or stopped for it, and its summary names the
    // service, the counts and the load signal that caused it.
    kScaled,
  };
  JobId job;
  int attempt = 0;
  TimeMs at = 0;
  Kind kind = Kind::kPlaced;
  std::string queue;
  std::string summary;             // one sentence
  int candidates = 0;              // nodes considered (feasible for the job)
  std::vector<std::string> nodes;  // chosen nodes, rank order, without repeats
  double score = 0.0;              // of the chosen placement under the scoring policy
  std::string reason;              // kPreempted/kEvicted: "reclaim" or "priority"
  std::vector<Victim> victims;     // kPreempted
  JobId preemptor;                 // kEvicted
  TimeMs reserved_start = 0;       // kReserved: estimated start

  friend bool operator==(const Decision&, const Decision&) = default;
};

inline constexpr NameTable kDecisionKindNames{std::array{
    NameEntry{Decision::Kind::kPlaced, "placed"},
    NameEntry{Decision::Kind::kReserved, "reserved"},
    NameEntry{Decision::Kind::kPreempted, "preempted"},
    NameEntry{Decision::Kind::kEvicted, "evicted"},
    NameEntry{Decision::Kind::kScaled, "scaled"},
}};
static_assert(kDecisionKindNames.size() == static_cast<std::size_t>(Decision::Kind::kScaled) + 1);
// kDecisionKindNames.Name / Parse.
std::string_view DecisionKindName(Decision::Kind kind);
std::optional<Decision::Kind> ParseDecisionKind(std::string_view name);

}  // namespace drover::model
