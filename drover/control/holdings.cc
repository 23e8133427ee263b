#include "drover/control/holdings.h"

#include <algorithm>
#include <cctype>
#include <string>
#include <utility>

#include "drover/common/result.h"

namespace drover::control {

using model::Attempt;
using model::Job;
using model::Worker;

std::optional<sched::Charge> ChargeOf(const Job& job, const sched::QueueTree& queues,
                                      const std::map<NodeId, model::Node>& nodes) {
  std::optional<int> leaf = queues.FindLeaf(job.spec.queue);
  if (!leaf) return std::nullopt;
  const Attempt* attempt = job.current_attempt();
  model::JobSpec placed = job.spec;
  std::string flavor;
  if (attempt != nullptr && !attempt->workers.empty()) {
    placed.workers = static_cast<int>(attempt->workers.size());
    const Worker& first = attempt->workers.front();
    auto node = nodes.find(first.node);
    if (node != nodes.end() && !first.gpus.empty()) {
      for (const model::Gpu& gpu : node->second.gpus) {
        if (gpu.index != first.gpus.front()) continue;
        std::string lower = gpu.model;
        std::transform(lower.begin(), lower.end(), lower.begin(),
                       [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
        if (queues.Governs("gpu:" + lower)) flavor = lower;
      }
    }
  }
  return sched::Charge{*leaf, job.spec.owner, job.spec.pipeline,
                       sched::ChargeAmounts(placed, flavor)};
}

sched::Placement PlacementOf(const Job& job) {
  sched::Placement placement;
  placement.job = job.id;
  if (const Attempt* attempt = job.current_attempt(); attempt && !model::IsExternal(*attempt)) {
    for (const Worker& worker : attempt->workers) {
      placement.workers.push_back(sched::WorkerAssignment{worker.rank, worker.node, worker.gpus});
    }
  }
  return placement;
}

std::vector<JobId> Holdings::Held() const {
  std::vector<JobId> ids;
  ids.reserve(held_.size());
  for (const auto& [id, holding] : held_) ids.push_back(id);
  std::sort(ids.begin(), ids.end());
  return ids;
}

std::vector<Holdings::Holding*> Holdings::InIdOrder() {
  std::vector<Holding*> holdings = running_holdings_;
  std::sort(holdings.begin(), holdings.end(),
            [](const Holding* a, const Holding* b) { return a->job->id < b->job->id; });
  return holdings;
}

bool Holdings::IsAllocated(JobId id) const {
  auto it = held_.find(id);
  return it != held_.end() && it->second.allocated;
}

const sched::Charge* Holdings::ChargeOf(JobId id) const {
  auto it = held_.find(id);
  return it == held_.end() || !it->second.charge ? nullptr : &*it->second.charge;
}

sched::RunningJob Holdings::EntryOf(const Holding& holding) {
  const Job& job = *holding.job;
  const Attempt& attempt = *job.current_attempt();
  return sched::RunningJob{job.id,
                           &job.spec,
                           &holding.placement,
                           holding.charge ? &*holding.charge : nullptr,
                           model::PriorityClassValue(job.spec.priority_class).value_or(0),
                           attempt.placed_at,
                           attempt.last_checkpoint_at};
}

void Holdings::Record(Holding holding) {
  const JobId id = holding.job->id;
  holding.running_pos = running_.size();
  auto [it, inserted] = held_.emplace(id, std::move(holding));
  DROVER_CHECK(inserted);
  running_.push_back(EntryOf(it->second));
  running_holdings_.push_back(&it->second);
}

void Holdings::TryAllocate(Holding& holding) {
  holding.allocated =
      cluster_.Allocate(holding.placement, holding.job->spec.requirements).has_value();
}

void Holdings::Hold(const Job& job, std::optional<sched::Charge> charge) {
  DROVER_CHECK(!held_.contains(job.id));
  Holding holding{&job, PlacementOf(job), std::move(charge)};
  if (holding.charge) queues_.Add(*holding.charge);
  TryAllocate(holding);
  Record(std::move(holding));
}

bool Holdings::Unhold(JobId id) {
  auto it = held_.find(id);
  if (it == held_.end()) return false;
  Holding& holding = it->second;
  // An unallocated job's Allocate failed and changed nothing: there is nothing to give back.
  if (holding.allocated) cluster_.Release(holding.placement, holding.job->spec.requirements);
  if (holding.charge) queues_.Remove(*holding.charge);
  // Swap-remove: the last entry takes the job's place.
  const std::size_t pos = holding.running_pos;
  if (pos + 1 != running_.size()) {
    running_[pos] = running_.back();
    running_holdings_[pos] = running_holdings_.back();
    running_holdings_[pos]->running_pos = pos;
  }
  running_.pop_back();
  running_holdings_.pop_back();
  held_.erase(it);
  return true;
}

void Holdings::Track(JobId id) {
  auto it = held_.find(id);
  if (it == held_.end()) return;
  running_[it->second.running_pos] = EntryOf(it->second);
}

sched::CycleOutput Holdings::RunCycle(const model::Policy& policy, sched::CycleInput input,
                                      const std::optional<sched::Reservation>& reservation,
                                      const JobTable& jobs) {
  input.running = running_;
  sched::CycleOutput cycle = sched::RunPolicyCycle(policy, queues_, cluster_, input, reservation);
  for (sched::PlacedJob& placed : cycle.placed) {
    Record(Holding{&jobs.Get(placed.placement.job), placed.placement, std::move(placed.charge),
                   /*allocated=*/true});
  }
  return cycle;
}

void Holdings::UpsertNode(const model::Node& node) {
  cluster_.UpsertNode(node);
  const bool any_unallocated =
      std::any_of(running_holdings_.begin(), running_holdings_.end(),
                  [](const Holding* holding) { return !holding->allocated; });
  if (!any_unallocated) return;
  for (Holding* holding : InIdOrder()) {
    if (!holding->allocated) TryAllocate(*holding);
  }
}

void Holdings::RemoveNode(const NodeId& node) {
  cluster_.RemoveNode(node);
  for (auto& [id, holding] : held_) {
    std::erase_if(holding.placement.workers,
                  [&](const sched::WorkerAssignment& worker) { return worker.node == node; });
  }
}

std::vector<std::string> Holdings::SetQueues(sched::QueueTree queues,
                                             const std::map<NodeId, model::Node>& nodes) {
  std::vector<std::string> dropped = queues.RestoreHistory(queues_.History());
  queues_ = std::move(queues);
  for (Holding* holding : InIdOrder()) {
    holding->charge = control::ChargeOf(*holding->job, queues_, nodes);
    if (holding->charge) queues_.Add(*holding->charge);
    running_[holding->running_pos] = EntryOf(*holding);
  }
  return dropped;
}

void Holdings::Advance(TimeMs now) { queues_.Advance(now); }

sched::QueueTree Holdings::QueuesAt(TimeMs now) const {
  sched::QueueTree queues = queues_;
  queues.Advance(now, cluster_.Capacity());
  return queues;
}

std::vector<std::string> Holdings::RestoreHistory(const model::FairShareHistory& history,
                                                  TimeMs now) {
  std::vector<std::string> dropped = queues_.RestoreHistory(history);
  Advance(now);
  return dropped;
}

}  // namespace drover::control
