#pragma once

// JobUpdate: what `drover update` (POST /v1/jobs/{id}/update) asks to change in a job's spec, a
// plain value shared by the controller and the API.

#include <optional>
#include <string>

#include "drover/common/clock.h"

namespace drover::control {

// Unset fields stay as they are. Validated by Controller::UpdateJob as a submission would be.
struct JobUpdate {
  std::optional<std::string> priority_class;  // a name of model::PriorityClassNames()
  std::optional<DurationMs> timeout;          // per attempt, > 0
  std::optional<std::string> queue;           // a leaf queue of the policy

  bool empty() const { return !priority_class && !timeout && !queue; }
  friend bool operator==(const JobUpdate&, const JobUpdate&) = default;
};

}  // namespace drover::control
