#include "drover/control/service_reconciler.h"

#include <fmt/format.h>

#include <algorithm>

namespace drover::control {
namespace {

// The replica to stop first among `pool`: not ready, then interruptible, then the newest.
JobId LeastUseful(std::vector<ReplicaView> pool) {
  std::sort(pool.begin(), pool.end(), [](const ReplicaView& a, const ReplicaView& b) {
    if (a.ready != b.ready) return !a.ready;
    if (a.is_protected != b.is_protected) return !a.is_protected;
    return a.id.value() > b.id.value();
  });
  return pool.front().id;
}

}  // namespace

ReconcilePlan Reconcile(const ReconcileInput& input) {
  ReconcilePlan plan;
  std::vector<ReplicaView> current, old;
  int protected_count = 0;
  for (const ReplicaView& r : input.replicas) {
    const bool is_current = r.generation >= input.generation;
    (is_current ? current : old).push_back(r);
    if (is_current && r.is_protected) ++protected_count;
  }
  std::set<int> ports = input.ports_in_use;
  auto start = [&]() {
    int port = input.port_from;
    while (port <= input.port_to && ports.contains(port)) ++port;
    if (port > input.port_to) {
      plan.blocked = fmt::format("no free replica port in {}-{}", input.port_from, input.port_to);
      return false;
    }
    ports.insert(port);
    const bool is_protected = protected_count < input.min;
    if (is_protected) ++protected_count;
    plan.start.push_back(ReplicaStart{is_protected, port});
    return true;
  };
  const int total = static_cast<int>(current.size() + old.size());
  if (!old.empty()) {
    const bool rolling =
        std::any_of(current.begin(), current.end(), [](const ReplicaView& r) { return !r.ready; });
    if (rolling) return plan;
    if (total > input.desired || static_cast<int>(current.size()) >= input.desired) {
      plan.stop.push_back(LeastUseful(old));
    } else {
      start();
    }
    return plan;
  }
  for (int i = total; i < input.desired; ++i) {
    if (!start()) break;
  }
  for (int i = input.desired; i < total; ++i) {
    const JobId victim = LeastUseful(current);
    plan.stop.push_back(victim);
    std::erase_if(current, [&](const ReplicaView& r) { return r.id == victim; });
  }
  return plan;
}

}  // namespace drover::control
