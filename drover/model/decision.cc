#include "drover/model/decision.h"

namespace drover::model {

std::string_view DecisionKindName(Decision::Kind kind) {
  switch (kind) {
    case Decision::Kind::kPlaced:
      return "placed";
    case Decision::Kind::kReserved:
      return "reserved";
    case Decision::Kind::kPreempted:
      return "preempted";
    case Decision::Kind::kEvicted:
      return "evicted";
  }
  return "placed";
}

std::optional<Decision::Kind> ParseDecisionKind(std::string_view name) {
  for (auto kind : {Decision::Kind::kPlaced, Decision::Kind::kReserved, Decision::Kind::kPreempted,
                    Decision::Kind::kEvicted}) {
    if (DecisionKindName(kind) == name) return kind;
  }
  return std::nullopt;
}

}  // namespace drover::model
