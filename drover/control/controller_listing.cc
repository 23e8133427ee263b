// Controller, the listing part: queue positions (`drover ls --pending`, Kueue's visibility API).
// A full scheduling pass hands its order (sched::CycleOutput::order) to RecordPositions, which
// numbers the jobs it left waiting per queue and overall; PositionOf answers from that index, so
// a listing of every pending job costs one lookup per job rather than an ordering per request.

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>

#include "drover/control/controller.h"

namespace drover::control {

std::string DescribePosition(const QueuePosition& position) {
  const int ahead = position.in_queue - 1;
  if (ahead == 0) return fmt::format("it is first in queue {}", position.queue);
  std::vector<std::int64_t> ids;
  for (JobId id : position.ahead) ids.push_back(id.value());
  const int unnamed = ahead - static_cast<int>(ids.size());
  return fmt::format("{} job{} ahead of it in queue {}: {}{}", ahead, ahead == 1 ? " is" : "s are",
                     position.queue, fmt::join(ids, ", "),
                     unnamed > 0 ? fmt::format(" and {} more", unnamed) : "");
}

void Controller::RecordPositions(const std::vector<JobId>& order) {
  queue_orders_.clear();
  positions_.clear();
  positions_.reserve(order.size());
  std::unordered_map<std::string, std::size_t> queue_index;
  int in_cluster = 0;
  for (JobId id : order) {
    const model::Job* job = jobs_.Find(id);
    if (job->state != model::JobState::kReady) continue;  // placed by this pass
    auto [it, inserted] = queue_index.try_emplace(job->spec.queue, queue_orders_.size());
    if (inserted) queue_orders_.emplace_back(job->spec.queue, std::vector<JobId>{});
    std::vector<JobId>& members = queue_orders_[it->second].second;
    members.push_back(id);
    positions_[id] = Position{it->second, static_cast<int>(members.size()), ++in_cluster};
  }
}

std::optional<QueuePosition> Controller::PositionOf(JobId id) const {
  auto it = positions_.find(id);
  if (it == positions_.end() || !jobs_.ready().contains(id)) return std::nullopt;
  const Position& at = it->second;
  const auto& [queue, members] = queue_orders_[at.queue];
  const int shown = std::min(at.in_queue - 1, QueuePosition::kAheadShown);
  return QueuePosition{queue, at.in_queue, at.in_cluster,
                       std::vector<JobId>(members.begin(), members.begin() + shown)};
}

}  // namespace drover::control
