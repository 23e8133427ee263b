#include "drover/sim/trace/trace.h"

#include <algorithm>
#include <set>

namespace drover::sim {

TraceJobStream::TraceJobStream(const std::vector<TraceJob>& jobs) : jobs_(jobs) {
  order_.resize(jobs_.size());
  for (std::size_t i = 0; i < order_.size(); ++i) order_[i] = i;
  std::stable_sort(order_.begin(), order_.end(),
                   [&](std::size_t a, std::size_t b) { return jobs_[a].submit < jobs_[b].submit; });
  std::set<std::string> queues;
  for (const TraceJob& job : jobs_) queues.insert(job.spec.queue);
  queues_.assign(queues.begin(), queues.end());
}

std::optional<TraceJob> TraceJobStream::Next() {
  if (next_ == order_.size()) return std::nullopt;
  return jobs_[order_[next_++]];
}

}  // namespace drover::sim
