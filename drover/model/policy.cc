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
    case Scoring::kRandom:
      return "random";
    case Scoring::kBestFit:
      return "best-fit";
    case Scoring::kDotProduct:
      return "dot-product";
    case Scoring::kGpuPacking:
      return "gpu-packing";
    case Scoring::kGpuClustering:
      return "gpu-clustering";
  }
  return "binpack";
}

std::string_view QueueOrderName(QueueOrder order) {
  switch (order) {
    case QueueOrder::kFairShare:
      return "fair-share";
    case QueueOrder::kFifo:
      return "fifo";
    case QueueOrder::kSjf:
      return "sjf";
    case QueueOrder::kLas:
      return "las";
  }
  return "fair-share";
}

}  // namespace drover::model
