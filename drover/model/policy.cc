#include "drover/model/policy.h"

namespace drover::model {

const std::vector<Scoring>& AllScorings() {
  static const std::vector<Scoring> all = {
      Scoring::kBinpack, Scoring::kSpread,     Scoring::kFragmentation, Scoring::kRandom,
      Scoring::kBestFit, Scoring::kDotProduct, Scoring::kGpuPacking,    Scoring::kGpuClustering};
  return all;
}

std::optional<Scoring> ParseScoring(std::string_view name) {
  for (Scoring scoring : AllScorings()) {
    if (ScoringName(scoring) == name) return scoring;
  }
  return std::nullopt;
}

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

const std::vector<QueueOrder>& AllQueueOrders() {
  static const std::vector<QueueOrder> all = {QueueOrder::kFairShare, QueueOrder::kFifo,
                                              QueueOrder::kSjf, QueueOrder::kLas};
  return all;
}

std::optional<QueueOrder> ParseQueueOrder(std::string_view name) {
  for (QueueOrder order : AllQueueOrders()) {
    if (QueueOrderName(order) == name) return order;
  }
  return std::nullopt;
}

namespace {

// Depth-first search for `queue` below `nodes`, carrying the executor inherited so far.
std::optional<ExecutorConfig> FindExecutor(const std::vector<QueueConfig>& nodes,
                                           std::string_view queue,
                                           const ExecutorConfig& inherited) {
  for (const QueueConfig& node : nodes) {
    const ExecutorConfig& here = node.executor ? *node.executor : inherited;
    if (node.children.empty() && node.name == queue) return here;
    if (auto found = FindExecutor(node.children, queue, here)) return found;
  }
  return std::nullopt;
}

}  // namespace

ExecutorConfig ExecutorOf(const Policy& policy, std::string_view queue) {
  return FindExecutor(policy.queues, queue, ExecutorConfig{}).value_or(ExecutorConfig{});
}

}  // namespace drover::model
