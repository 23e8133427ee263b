// ControlPlane's part in GET /metrics (control_plane.h; ServerMetrics): the timed scheduling
// cycle and the scrape.

#include <algorithm>
#include <chrono>

#include "drover/server/control_plane.h"

namespace drover::server {

void ControlPlane::ScheduleCycle(control::Step& step) {
  const std::size_t before = step.transitions.size();
  const auto start = std::chrono::steady_clock::now();
  controller_.Schedule(clock_.Now(), step);
  const std::chrono::duration<double> took = std::chrono::steady_clock::now() - start;
  const bool admitted =
      std::any_of(step.transitions.begin() + static_cast<std::ptrdiff_t>(before),
                  step.transitions.end(), [](const model::Transition& transition) {
                    return transition.to == model::JobState::kAdmitted;
                  });
  metrics_.ObserveCycle(took.count(), admitted);
}

ServerMetrics::Snapshot ControlPlane::MetricsSnapshot() const {
  const std::vector<model::GpuActivity> latest = LatestGpuActivity();  // takes no mu_
  MutexLock lock(mu_);
  ServerMetrics::Snapshot snapshot = ServerMetrics::Gather(controller_, clock_.Now());
  snapshot.gpus = ServerMetrics::AttributeGpus(controller_, latest, clock_.Now());
  return snapshot;
}

std::string ControlPlane::MetricsText() const { return metrics_.Render(MetricsSnapshot()); }

}  // namespace drover::server
