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

std::string UnixAccountFor(const Policy& policy, std::string_view user) {
  auto mapped = policy.accounts.map.find(std::string(user));
  return mapped != policy.accounts.map.end() ? mapped->second : std::string(user);
}

bool MayRunAsRoot(const Policy& policy, std::string_view user) {
  const std::vector<std::string>& allowed = policy.accounts.allow_root;
  return !user.empty() && std::find(allowed.begin(), allowed.end(), user) != allowed.end();
}

}  // namespace drover::model
