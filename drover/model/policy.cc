#include "drover/model/policy.h"

#include <algorithm>

namespace drover::model {

std::string_view ScoringName(Scoring scoring) { return kScoringNames.Name(scoring); }

std::optional<Scoring> ParseScoring(std::string_view name) { return kScoringNames.Parse(name); }

std::string_view QueueOrderName(QueueOrder order) { return kQueueOrderNames.Name(order); }

std::optional<QueueOrder> ParseQueueOrder(std::string_view name) {
  return kQueueOrderNames.Parse(name);
}

namespace {

// Depth-first search for the leaf `queue` below `nodes`, carrying the executor inherited so far:
// the leaf's own executor or the nearest one above it, or nullptr if `queue` is not below `nodes`.
const ExecutorConfig* FindExecutor(const std::vector<QueueConfig>& nodes, std::string_view queue,
                                   const ExecutorConfig& inherited) {
  for (const QueueConfig& node : nodes) {
    const ExecutorConfig& here = node.executor ? *node.executor : inherited;
    if (node.children.empty() && node.name == queue) return &here;
    if (const ExecutorConfig* found = FindExecutor(node.children, queue, here)) return found;
  }
  return nullptr;
}

}  // namespace

const ExecutorConfig& ExecutorOf(const Policy& policy, std::string_view queue) {
  static const ExecutorConfig kLocal{};  // a constant: the local executor's (empty) settings
  const ExecutorConfig* found = FindExecutor(policy.queues, queue, kLocal);
  return found != nullptr ? *found : kLocal;
}

std::string UnixAccountFor(const Policy& policy, std::string_view user) {
  auto mapped = policy.accounts.map.find(std::string(user));
  return mapped != policy.accounts.map.end() ? mapped->second : std::string(user);
}

bool MayRunAsRoot(const Policy& policy, std::string_view user) {
  const std::vector<std::string>& allowed = policy.accounts.allow_root;
  return !user.empty() && std::find(allowed.begin(), allowed.end(), user) != allowed.end();
}

}  // namespace drover::model
