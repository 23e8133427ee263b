#include "drover/model/decision.h"

namespace drover::model {

std::string_view DecisionKindName(Decision::Kind kind) { return kDecisionKindNames.Name(kind); }

std::optional<Decision::Kind> ParseDecisionKind(std::string_view name) {
  return kDecisionKindNames.Parse(name);
}

}  // namespace drover::model
