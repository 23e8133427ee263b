// Controller, the explain part: why a job is where it is (Explain: the layer that holds it,
// one sentence, an estimated start) and the queue tree with its pending counts (Queues).

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <map>

#include "drover/common/quantity.h"
#include "drover/control/controller.h"
#include "drover/sched/estimate.h"

namespace drover::control {

using model::Attempt;
using model::Job;
using model::JobState;
using model::Worker;

std::optional<std::string> Controller::LostHosts(
    const model::JobSpec& spec, const std::optional<sched::PendingReason>& placement) const {
  using Code = sched::PendingReason::Code;
  if (lost_.empty() || !placement ||
      (placement->code != Code::kUnschedulable && placement->code != Code::kNoNodes)) {
    return std::nullopt;
  }
  std::vector<std::string> able;
  for (const NodeId& name : lost_) {
    sched::ClusterState alone;
    alone.UpsertNode(nodes_.at(name));
    if (sched::Explain(alone, spec).eligible_nodes > 0) able.push_back(name.value());
  }
  if (able.empty()) return std::nullopt;
  if (able.size() == 1) {
    return fmt::format("the only node able to run it, {}, is lost (it waits for it to return)",
                       able[0]);
  }
  return fmt::format("every node able to run it is lost ({}); it waits for one to return",
                     fmt::join(able, ", "));
}

Result<Explanation> Controller::Explain(JobId id, TimeMs now) const {
  const Job* job = Find(id);
  if (!job) return NotFound(fmt::format("job {} does not exist", id.value()));
  Explanation out;
  out.state = job->state;
  if (job->hold && !model::IsTerminal(job->state)) {  // before whatever else would hold it
    out.layer = model::HoldLayer::kHeld;
    out.message =
        fmt::format("held by {} for {}{}; drover release {} lets it be scheduled", job->hold->by,
                    FormatDuration(std::max<TimeMs>(now - job->hold->since, 0)),
                    job->hold->reason.empty() ? "" : ": " + job->hold->reason, id.value());
    return out;
  }
  switch (job->state) {
    case JobState::kPending: {
      const workflow::DependencyVerdict verdict = JudgeDependencies(*job);
      if (verdict.kind == workflow::DependencyVerdict::Kind::kWait) {
        out.layer = model::HoldLayer::kDependency;
        out.message = DescribeWait(*job, verdict.reason);
      } else if (verdict.kind == workflow::DependencyVerdict::Kind::kRelease &&
                 !job->status_message.empty()) {
        // Dependencies met: a sweep's concurrency or whole admission holds it.
        out.layer = model::HoldLayer::kPipeline;
        out.message = job->status_message;
      } else {
        out.layer = model::HoldLayer::kDependency;
        out.message = verdict.kind == workflow::DependencyVerdict::Kind::kSkip
                          ? verdict.reason + "; it is skipped at the next scheduling pass"
                          : "its dependencies are met; it is released at the next scheduling pass";
      }
      break;
    }
    case JobState::kWaiting:
      out.layer = model::HoldLayer::kInputs;
      out.message = job->status_message;
      break;
    case JobState::kReady:
      if (job->not_before > now) {
        out.layer = model::HoldLayer::kBackoff;
        out.message =
            fmt::format("retry backoff: attempt {} may start in {}", job->current_attempt()->number,
                        FormatDuration(job->not_before - now));
      } else if (auto verdict = verdicts_.find(id); verdict != verdicts_.end()) {
        out.layer = verdict->second.layer;
        out.message = verdict->second.message;
        out.placement = verdict->second.placement;
      } else {
        out.layer = model::HoldLayer::kNodeFit;
        out.placement = sched::Explain(holdings_.cluster(), job->spec);
        out.message = "not tried by a scheduling cycle yet; now: " + out.placement->Render();
      }
      // A job accepted with hold_infeasible (or before any node was known) says that it waits
      // for the cluster to change, unless the placement verdict already says so.
      if (!out.placement || out.placement->code != sched::PendingReason::Code::kUnschedulable) {
        if (std::optional<std::string> why = FindInfeasibility(job->spec)) {
          out.message += "; " + *why;
        }
      }
      if (job->not_before <= now) {
        out.position = PositionOf(id);
        if (out.position) out.message += "; " + DescribePosition(*out.position);
      }
      if (std::optional<std::string> lost = LostHosts(job->spec, out.placement)) {
        out.message += "; " + *lost;
      }
      if (reservation_ && reservation_->job == id) {
        out.estimated_start = reservation_->start;
        out.estimate_basis = "the start of the reservation made for it";
      } else if (awaiting_.contains(id)) {
        out.estimated_start = now + policy_.preemption_grace;  // victims are gone by then
        out.estimate_basis = "its victims' workers are stopped by the end of the grace period";
      } else {
        sched::EstimateLayers layers;
        layers.queues = &holdings_.queues();
        const std::vector<sched::NodeWindow> windows = NodeWindows(now);
        layers.maintenance = windows;
        if (reservation_ && jobs_.Find(reservation_->job)) {
          layers.reservation = &*reservation_;
          layers.reservation_holder = &jobs_.Get(reservation_->job).spec;
        }
        sched::StartEstimate estimate =
            sched::EstimateStart(holdings_.cluster(), holdings_.running(), id, job->spec,
                                 std::max(now, job->not_before), layers);
        out.estimated_start = estimate.at;
        out.estimate_basis = std::move(estimate.basis);
      }
      break;
    case JobState::kAdmitted:
      if (model::IsExternal(*job->current_attempt())) {
        // Admitted by Drover, queued in its executor: the engine's reason (e.g. Slurm's).
        out.layer = model::HoldLayer::kExecutor;
        out.message = job->status_message;
        break;
      }
      [[fallthrough]];
    case JobState::kPlaced:
    case JobState::kStarting:
    case JobState::kRunning: {
      out.layer = model::HoldLayer::kRunning;
      const Attempt& attempt = *job->current_attempt();
      std::string where;
      for (const Worker& worker : attempt.workers) {
        std::string gpus;
        for (int gpu : worker.gpus) gpus += (gpus.empty() ? "" : ",") + std::to_string(gpu);
        where += fmt::format("{}worker {} on {}{}", where.empty() ? "" : "; ", worker.rank,
                             worker.node.value(), gpus.empty() ? "" : " GPUs " + gpus);
      }
      out.message = fmt::format("attempt {} is {}: {}", attempt.number,
                                model::JobStateName(job->state), where);
      if (!job->status_message.empty()) out.message += " (" + job->status_message + ")";
      break;
    }
    default:
      out.layer = model::HoldLayer::kFinished;
      out.message = fmt::format("{}{}", model::JobStateName(job->state),
                                job->status_message.empty() ? "" : ": " + job->status_message);
      break;
  }
  return out;
}

std::vector<QueueReport> Controller::Queues(TimeMs now) const {
  std::map<std::string, int> pending_by_leaf;
  for (JobId id : jobs_.ready()) ++pending_by_leaf[jobs_.Get(id).spec.queue];
  std::vector<QueueReport> reports;
  for (sched::QueueStatus& status : holdings_.QueuesAt(now).Status()) {
    QueueReport report;
    report.status = std::move(status);
    reports.push_back(std::move(report));
  }
  // A row counts the pending jobs of every leaf in its subtree (paths nest by "/").
  for (const QueueReport& leaf : reports) {
    if (!leaf.status.leaf) continue;
    auto count = pending_by_leaf.find(leaf.status.name);
    if (count == pending_by_leaf.end()) continue;
    for (QueueReport& row : reports) {
      const std::string& path = row.status.path;
      if (leaf.status.path == path || leaf.status.path.rfind(path + "/", 0) == 0) {
        row.pending_jobs += count->second;
      }
    }
  }
  return reports;
}

}  // namespace drover::control
