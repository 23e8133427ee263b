#include "drover/sched/maintenance.h"

#include "drover/sched/cluster_index.h"

namespace drover::sched {

bool RunsInto(const NodeWindow& window, TimeMs start, std::optional<DurationMs> limit) {
  if (start >= window.to) return false;
  if (!limit) return true;
  // start + limit > from, without overflow for a window far in the future.
  return *limit > window.from - start;
}

namespace internal {

std::optional<std::vector<char>> WindowMask(const ClusterImpl& impl,
                                            std::span<const NodeWindow> windows, TimeMs start,
                                            std::optional<DurationMs> limit,
                                            const std::vector<char>* base) {
  std::optional<std::vector<char>> mask;
  for (const NodeWindow& window : windows) {
    if (!RunsInto(window, start, limit)) continue;
    const int pos = impl.Find(window.node.value());
    if (pos < 0) continue;
    if (!mask) {
      mask.emplace(impl.nodes.size(), 0);
      if (base != nullptr) {
        for (std::size_t i = 0; i < base->size() && i < mask->size(); ++i) (*mask)[i] = (*base)[i];
      }
    }
    (*mask)[pos] = 1;
  }
  return mask;
}

}  // namespace internal
}  // namespace drover::sched
