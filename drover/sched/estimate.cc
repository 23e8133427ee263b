#include "drover/sched/estimate.h"

#include <fmt/format.h>

#include <algorithm>
#include <map>
#include <memory>

#include "drover/sched/cluster_index.h"
#include "drover/sched/flavors.h"

namespace drover::sched {
namespace {

using internal::ClusterImpl;
using internal::ClusterStateAccess;
using internal::StaticFilter;

// The end of a running job's time limit, or nullopt when it has none.
std::optional<TimeMs> EndOf(const RunningJob& job) {
  if (!job.spec->timeout) return std::nullopt;
  return job.started_at + *job.spec->timeout;
}

std::optional<internal::PlannedGang> PlanOn(ClusterImpl& impl, const model::JobSpec& spec,
                                            const internal::PlanOptions& options) {
  const StaticFilter filter = StaticFilter::From(spec.requirements);
  internal::Index& index = impl.GetOrBuildIndex(filter);
  return internal::Plan(impl, filter, &index, spec, options);
}

std::vector<NodeId> NodesOf(const internal::PlannedGang& gang) {
  std::vector<NodeId> nodes;
  for (const WorkerAssignment& worker : gang.workers) {
    if (std::find(nodes.begin(), nodes.end(), worker.node) == nodes.end()) {
      nodes.push_back(worker.node);
    }
  }
  return nodes;
}

// Why the projection has not released the job yet, after the last instant tried.
enum class Holder { kNone, kQuota, kReservation, kCapacity };

// The projection of estimate.h on copies of the cluster (and of the queue tree, with quota).
// Used once: Run() walks the instants.
class Projector {
 public:
  Projector(const ClusterState& cluster, std::span<const RunningJob> running,
            const model::JobSpec& spec, TimeMs now, const internal::PlanOptions& options,
            const EstimateLayers& layers)
      : cluster_(cluster.Clone()),
        impl_(ClusterStateAccess::Get(cluster_)),
        running_(running),
        spec_(spec),
        now_(now),
        options_(options),
        layers_(layers) {
    if (layers_.queues) {
      queues_ = *layers_.queues;
      leaf_ = queues_->FindLeaf(spec.queue);
      const FlavorOrder order(*queues_, cluster.Capacity());
      for (const std::string& flavor : order.For(*queues_, spec)) {
        auto flavored = std::make_unique<model::JobSpec>(spec);
        if (!flavor.empty()) flavored->requirements.gpu_models = {flavor};
        flavors_.emplace_back(flavor, std::move(flavored));
      }
    } else {
      flavors_.emplace_back("", std::make_unique<model::JobSpec>(spec));
    }
  }

  // The first instant at which the job is admitted and fits, with its plan then; nullopt if
  // none (held_by() and refusal() then say what held it at the last instant). `ended` gets the
  // jobs whose limits end at that instant (the reservation's holder among them when it ends
  // then); empty when the job fits at once or as the reservation begins.
  std::optional<std::pair<TimeMs, internal::PlannedGang>> Run(std::vector<JobId>* ended) {
    // Instants, each with the jobs whose limits end then; the reservation's start as an instant
    // of its own (with no jobs) when later than now.
    std::map<TimeMs, std::vector<const RunningJob*>> instants;
    for (const RunningJob& job : running_) {
      if (auto end = EndOf(job)) instants[std::max(*end, now_)].push_back(&job);
    }
    const bool reserved = layers_.reservation && layers_.reservation_holder;
    // A window's end gives its node back.
    for (const NodeWindow& window : layers_.maintenance) {
      if (window.to > now_ && window.to != kNeverEnds) instants[window.to];
    }
    if (reserved) {
      instants[std::max(layers_.reservation->start, now_)];
      // The holder, once started, ends by its own limit (if it has one).
      if (layers_.reservation_holder->timeout) {
        holder_end_ =
            std::max(layers_.reservation->start, now_) + *layers_.reservation_holder->timeout;
        instants[*holder_end_];
      }
    }
    if (auto gang = TryAt(now_)) return std::pair{now_, std::move(*gang)};
    for (auto& [at, jobs] : instants) {
      for (const RunningJob* job : jobs) {
        cluster_.Release(*job->placement, job->spec->requirements);
        if (queues_ && job->charge) queues_->Remove(*job->charge);
      }
      if (reserved && !holder_ && at >= layers_.reservation->start) {
        // The holder starts: it takes its nodes as the engine would place it then.
        internal::PlanOptions options = options_;
        std::vector<char> windows;
        ExcludeWindows(*layers_.reservation_holder, at, options, windows);
        holder_ = PlanOn(impl_, *layers_.reservation_holder, options);
        if (holder_) internal::Commit(impl_, *holder_, *layers_.reservation_holder);
      }
      bool holder_ended = false;
      if (holder_ && holder_end_ && at >= *holder_end_) {
        cluster_.Release(Placement{layers_.reservation->job, holder_->workers},
                         layers_.reservation_holder->requirements);
        holder_end_.reset();
        holder_ended = true;
      }
      if (auto gang = TryAt(at)) {
        ended->clear();
        for (const RunningJob* job : jobs) ended->push_back(job->job);
        if (holder_ended) ended->push_back(layers_.reservation->job);
        return std::pair{at, std::move(*gang)};
      }
    }
    return std::nullopt;
  }

  Holder held_by() const { return held_by_; }
  const std::optional<AdmitVerdict>& refusal() const { return refusal_; }

 private:
  // Adds to `options.excluded` the nodes a job of `spec` started at `at` would run into a window
  // of (layers_.maintenance), keeping the mask in `scratch`.
  void ExcludeWindows(const model::JobSpec& spec, TimeMs at, internal::PlanOptions& options,
                      std::vector<char>& scratch) const {
    if (layers_.maintenance.empty()) return;
    auto mask =
        internal::WindowMask(impl_, layers_.maintenance, at, spec.timeout, options.excluded);
    if (!mask) return;
    scratch = std::move(*mask);
    options.excluded = &scratch;
  }

  // Whether the job is admitted and fits at `at`, with what has been released by then.
  std::optional<internal::PlannedGang> TryAt(TimeMs at) {
    const bool reserved = layers_.reservation && layers_.reservation_holder;
    const bool avoid_reserved =
        reserved && at < layers_.reservation->start &&
        !(spec_.timeout && at + *spec_.timeout <= layers_.reservation->start);
    internal::PlanOptions options = options_;
    if (avoid_reserved) {
      if (reserved_mask_.empty()) reserved_mask_ = impl_.MaskOf(layers_.reservation->nodes);
      options.excluded = &reserved_mask_;
    }
    internal::PlanOptions unreserved = options_;
    std::vector<char> windows;
    std::vector<char> unreserved_windows;
    ExcludeWindows(spec_, at, options, windows);
    ExcludeWindows(spec_, at, unreserved, unreserved_windows);
    held_by_ = Holder::kCapacity;
    for (const auto& [flavor, spec] : flavors_) {
      if (queues_) {
        if (!leaf_) {
          held_by_ = Holder::kQuota;
          return std::nullopt;
        }
        AdmitVerdict verdict = queues_->CheckAdmit(
            Charge{*leaf_, spec_.owner, spec_.pipeline, ChargeAmounts(spec_, flavor)});
        if (!verdict.ok()) {
          if (held_by_ != Holder::kReservation) {
            held_by_ = Holder::kQuota;
            refusal_ = std::move(verdict);
          }
          continue;
        }
      }
      if (auto gang = PlanOn(impl_, *spec, options)) return gang;
      if (avoid_reserved && PlanOn(impl_, *spec, unreserved)) held_by_ = Holder::kReservation;
    }
    return std::nullopt;
  }

  ClusterState cluster_;
  ClusterImpl& impl_;
  std::span<const RunningJob> running_;
  const model::JobSpec& spec_;
  TimeMs now_;
  const internal::PlanOptions& options_;
  const EstimateLayers& layers_;
  std::optional<QueueTree> queues_;  // with quota: the tree as jobs end
  std::optional<int> leaf_;
  std::vector<char> reserved_mask_;  // the reservation's nodes, built on first use
  std::vector<std::pair<std::string, std::unique_ptr<model::JobSpec>>> flavors_;
  // The reservation's holder once placed, and the end of its limit until released.
  std::optional<internal::PlannedGang> holder_;
  std::optional<TimeMs> holder_end_;
  Holder held_by_ = Holder::kNone;
  std::optional<AdmitVerdict> refusal_;
};

std::string JobList(const std::vector<JobId>& jobs) {
  std::vector<std::int64_t> ids;
  for (JobId job : jobs) ids.push_back(job.value());
  return fmt::format("job{} {}", ids.size() == 1 ? "" : "s", fmt::join(ids, ", "));
}

}  // namespace

StartEstimate EstimateStart(const ClusterState& cluster, std::span<const RunningJob> running,
                            JobId id, const model::JobSpec& spec, TimeMs now,
                            const EstimateLayers& layers) {
  EstimateLayers effective = layers;
  if (effective.reservation && effective.reservation->job == id) effective.reservation = nullptr;
  const internal::PlanOptions options;
  Projector projector(cluster, running, spec, now, options, effective);
  std::vector<JobId> ended;
  StartEstimate estimate;
  if (auto start = projector.Run(&ended)) {
    estimate.at = start->first;
    if (start->first <= now) {
      estimate.basis = "it is admitted and fits now";
    } else if (ended.empty() && effective.reservation &&
               start->first == std::max(effective.reservation->start, now)) {
      estimate.basis =
          fmt::format("when the reservation for job {} begins", effective.reservation->job.value());
    } else if (ended.empty()) {
      estimate.basis = "when a maintenance window on its nodes ends";
    } else {
      estimate.basis =
          fmt::format("as {} reach{} {} time limit", JobList(ended), ended.size() == 1 ? "es" : "",
                      ended.size() == 1 ? "its" : "their");
    }
    return estimate;
  }
  switch (projector.held_by()) {
    case Holder::kQuota:
      estimate.basis = projector.refusal()
                           ? fmt::format(
                                 "unknown: held by quota ({}) until jobs without a time "
                                 "limit end",
                                 projector.refusal()->Render())
                           : fmt::format("unknown: queue {} does not exist", spec.queue);
      break;
    case Holder::kReservation:
    case Holder::kCapacity:
    case Holder::kNone:
      estimate.basis =
          "unknown: it does not fit until jobs without a time limit end (or nodes are added)";
      break;
  }
  return estimate;
}

namespace internal {

std::optional<Projection> Project(const ClusterState& cluster, std::span<const RunningJob> running,
                                  const model::JobSpec& spec, TimeMs now,
                                  const PlanOptions& options,
                                  std::span<const NodeWindow> maintenance) {
  EstimateLayers capacity_only;
  capacity_only.maintenance = maintenance;
  Projector projector(cluster, running, spec, now, options, capacity_only);
  std::vector<JobId> ended;
  auto start = projector.Run(&ended);
  if (!start) return std::nullopt;
  return Projection{start->first, NodesOf(start->second)};
}

}  // namespace internal
}  // namespace drover::sched
