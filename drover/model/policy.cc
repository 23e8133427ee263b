#include "drover/model/policy.h"

namespace drover::model {

std::string_view ScoringName(Scoring scoring) {
  switch (scoring) {
    case Scoring::kBinpack:
      return "binpack";
    case Scoring::kSpread:
      return "spread";
    case Scoring::kFragmentation:
      return "fragmentation";
  }
  return "binpack";
}

}  // namespace drover::model
