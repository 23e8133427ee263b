#include "drover/sched/feasibility.h"

#include <fmt/format.h>

#include "drover/sched/pending_reason.h"

namespace drover::sched {

std::optional<std::string> FindInfeasibility(const model::JobSpec& spec,
                                             const ClusterState& every_node,
                                             const QueueTree& idle_queues, bool local) {
  model::JobSpec smallest = spec;
  smallest.workers = std::max(spec.workers, 1);
  if (spec.min_workers > 0) smallest.workers = std::min(spec.min_workers, smallest.workers);
  smallest.min_workers = smallest.workers;
  if (std::optional<int> leaf = idle_queues.FindLeaf(spec.queue)) {
    Charge charge;
    charge.leaf = *leaf;
    charge.user = spec.owner;
    charge.pipeline = spec.pipeline;
    charge.amounts = ChargeAmounts(smallest, "");
    const AdmitVerdict verdict = idle_queues.CheckAdmit(charge);
    if (!verdict.ok()) {
      return fmt::format("no queue limit can ever admit it: {}, even with nothing else running",
                         verdict.Render());
    }
  }
  if (!local) return std::nullopt;
  const PendingReason reason = Explain(every_node, smallest);
  switch (reason.code) {
    case PendingReason::Code::kNoNodes:
      return std::nullopt;
    case PendingReason::Code::kUnschedulable:
      return "no current node can ever hold it: " + reason.Render();
    case PendingReason::Code::kInsufficientFree:
      if (reason.fitting_workers >= smallest.workers) return std::nullopt;
      return fmt::format("no current node can ever hold it: {}, even with every node idle",
                         reason.Render());
  }
  return std::nullopt;
}

}  // namespace drover::sched
