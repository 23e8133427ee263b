// RunPolicyCycle, RunCycle, EstimateStart and the queue-order helpers (engine.h). One Cycle
// object per call holds the cycle's caches (prepared filters, derived specs, failed demands, the
// reservation) that ordering, admission, placement, backfill, preemption and the verdicts all
// share, which is why this file is one class of ~850 lines; placement (placement.h), the choice
// of victims (victims.h) and the pending reasons (pending_reason.h) live in their own files.

#include "drover/sched/engine.h"

#include <fmt/format.h>

#include <algorithm>
#include <map>
#include <memory>
#include <unordered_map>
#include <unordered_set>
#include <utility>

#include "drover/common/quantity.h"
#include "drover/sched/cluster_index.h"
#include "drover/sched/placement.h"
#include "drover/sched/victims.h"

namespace drover::sched {
namespace {

using internal::ClusterImpl;
using internal::ClusterStateAccess;
using internal::StaticFilter;

// Preemption is tried for at most this many blocked jobs per cycle: each try clones the cluster.
constexpr int kMaxPreemptionTriesPerCycle = 4;

std::string JobLabel(const model::JobSpec& spec, JobId id) {
  return spec.name.empty() ? fmt::format("job {}", id.value())
                           : fmt::format("job {} ({})", id.value(), spec.name);
}

// "in 3m" (or "now"): times in sentences are relative; absolute ones travel as fields.
std::string In(TimeMs at, TimeMs now) {
  return at <= now ? "now" : "in " + FormatDuration(at - now);
}

// Nodes of a placement without repeats, in rank order.
std::vector<std::string> NodesOf(const std::vector<WorkerAssignment>& workers) {
  std::vector<std::string> nodes;
  for (const WorkerAssignment& worker : workers) {
    if (std::find(nodes.begin(), nodes.end(), worker.node.value()) == nodes.end()) {
      nodes.push_back(worker.node.value());
    }
  }
  return nodes;
}

// The end of a running job's time limit, or nullopt when it has none.
std::optional<TimeMs> EndOf(const RunningJob& job) {
  if (!job.spec->timeout) return std::nullopt;
  return job.started_at + *job.spec->timeout;
}

// Everything Plan needs for one spec against one ClusterImpl.
struct Prepared {
  StaticFilter filter;
  std::string demand_key;
};

Prepared Prepare(const model::JobSpec& spec) {
  Prepared prepared{StaticFilter::From(spec.requirements), std::string()};
  prepared.demand_key = internal::DemandKey(prepared.filter, spec);
  return prepared;
}

std::optional<internal::PlannedGang> PlanOn(ClusterImpl& impl, const Prepared& prepared,
                                            const model::JobSpec& spec,
                                            const internal::PlanOptions& options) {
  internal::Index& index = impl.GetOrBuildIndex(prepared.filter);
  return internal::Plan(impl, prepared.filter, &index, spec, options);
}

// Running jobs with a time limit, by the end of it (ties: id).
std::vector<const RunningJob*> ByEnd(std::span<const RunningJob> running) {
  std::vector<const RunningJob*> bounded;
  for (const RunningJob& job : running) {
    if (EndOf(job)) bounded.push_back(&job);
  }
  std::sort(bounded.begin(), bounded.end(), [](const RunningJob* a, const RunningJob* b) {
    if (*EndOf(*a) != *EndOf(*b)) return *EndOf(*a) < *EndOf(*b);
    return a->job < b->job;
  });
  return bounded;
}

// Where and when `spec` could start as bounded running jobs end: releases them in order of
// their ends on a copy of the cluster until the job fits. nullopt if it never does.
struct Projection {
  TimeMs start = 0;
  std::vector<NodeId> nodes;
};
std::optional<Projection> Project(const ClusterState& cluster, std::span<const RunningJob> running,
                                  const model::JobSpec& spec, TimeMs now,
                                  const internal::PlanOptions& options) {
  const Prepared prepared = Prepare(spec);
  ClusterState trial = cluster.Clone();
  ClusterImpl& impl = ClusterStateAccess::Get(trial);
  if (auto gang = PlanOn(impl, prepared, spec, options)) {
    Projection projection{now, {}};
    for (const std::string& node : NodesOf(gang->workers)) projection.nodes.emplace_back(node);
    return projection;
  }
  const std::vector<const RunningJob*> bounded = ByEnd(running);
  for (std::size_t i = 0; i < bounded.size();) {
    const TimeMs end = *EndOf(*bounded[i]);
    // Release every job ending at this instant, then try once.
    for (; i < bounded.size() && *EndOf(*bounded[i]) == end; ++i) {
      trial.Release(*bounded[i]->placement, bounded[i]->spec->requirements);
    }
    if (auto gang = PlanOn(impl, prepared, spec, options)) {
      Projection projection{std::max(end, now), {}};
      for (const std::string& node : NodesOf(gang->workers)) projection.nodes.emplace_back(node);
      return projection;
    }
  }
  return std::nullopt;
}

// The layer a placement reason belongs to.
model::HoldLayer PlacementLayer(const PendingReason& reason) {
  if (!reason.topology_level.empty() && reason.code == PendingReason::Code::kInsufficientFree) {
    return model::HoldLayer::kTopology;
  }
  if (reason.code == PendingReason::Code::kUnschedulable && !reason.excluded.empty() &&
      reason.excluded.front().first.rfind("taint ", 0) == 0) {
    return model::HoldLayer::kTaint;
  }
  if (reason.code == PendingReason::Code::kInsufficientFree && reason.workers > 1 &&
      reason.fitting_workers > 0 && reason.fitting_workers < reason.workers) {
    return model::HoldLayer::kGangSize;
  }
  return model::HoldLayer::kNodeFit;
}

// One scheduling cycle (see engine.h). Holds the cycle's caches; used once.
class Cycle {
 public:
  Cycle(const model::Policy& policy, QueueTree& queues, ClusterState& cluster,
        const CycleInput& input, const std::optional<Reservation>& previous)
      : policy_(policy),
        queues_(queues),
        cluster_(cluster),
        impl_(ClusterStateAccess::Get(cluster)),
        input_(input),
        previous_(previous) {}

  CycleOutput Run();

 private:
  struct Entry {
    const PendingJob* job = nullptr;
    int leaf = 0;
    int priority = 0;  // effective
    double user_share = 0.0;
    TimeMs submitted_at = 0;  // orders other than fair-share
    int las_queue = 0;        // order las
  };

  // True if `a` goes before `b` under policy.order; fair-share: within one leaf queue.
  bool Before(const Entry& a, const Entry& b) const;
  // True if pending `entry` may preempt `running` of its own leaf queue for priority: a lower
  // priority class (fair-share), a later LAS queue (las); never under fifo and sjf.
  bool Outranks(const Entry& entry, const RunningJob& running) const;
  const JobHistory* HistoryOf(JobId job) const {
    auto it = input_.history.find(job);
    return it == input_.history.end() ? nullptr : &it->second;
  }

  void Process(const Entry& entry, bool nominated);
  // Adds the charge of an admitted external job (PendingJob::external) and records it placed
  // without nodes.
  void CommitExternal(const Entry& entry, Charge charge);
  // The GPU models to try in turn, lower-case; {""} when the tree governs no model quota or
  // the job needs no GPU.
  std::vector<std::string> Flavors(const model::JobSpec& spec) const;
  const model::JobSpec& SpecFor(const model::JobSpec& spec, const std::string& flavor);
  const Prepared& PreparedFor(const model::JobSpec& spec);
  // Plans `spec` (a gang that does not fit whole shrinks down to min_workers); honours the
  // reservation unless the job ends before it. nullopt if it does not fit.
  std::optional<internal::PlannedGang> PlaceGang(const model::JobSpec& spec,
                                                 bool honour_reservation,
                                                 const model::JobSpec** placed_spec);
  void Commit(const Entry& entry, const model::JobSpec& spec, internal::PlannedGang gang,
              Charge charge);
  bool EndsBeforeReservation(const model::JobSpec& spec) const;
  void Reserve(const Entry& entry, const model::JobSpec& spec);
  void AdoptReservation(Reservation reservation);
  bool TryPreempt(const Entry& entry, const model::JobSpec& spec, const Charge& charge);
  // Pends a job that was admitted but did not fit: held by the reservation (decided now), or
  // by placement (explained at the end of the cycle, against what is left then).
  void PendUnplaced(const Entry& entry, const model::JobSpec& spec, std::string suffix = "",
                    std::optional<TimeMs> reserved_start = std::nullopt);
  void ExplainUnplaced();
  void Pend(const Entry& entry, Verdict verdict) {
    out_.pending.emplace_back(entry.job->job, std::move(verdict));
  }
  internal::PlanOptions Options(bool honour_reservation) const {
    internal::PlanOptions options;
    options.scoring = policy_.scoring;
    options.mix = mix_.shapes.empty() ? nullptr : &mix_;
    if (honour_reservation && reservation_) options.excluded = &reserved_mask_;
    return options;
  }

  const model::Policy& policy_;
  QueueTree& queues_;
  ClusterState& cluster_;
  ClusterImpl& impl_;
  const CycleInput& input_;
  const std::optional<Reservation>& previous_;
  CycleOutput out_;

  internal::WorkloadMix mix_;
  // See Run(): flavors for jobs that accept any GPU model, and whether any flavor is governed.
  std::vector<std::string> any_model_flavors_;
  bool any_flavor_governed_ = false;
  std::unordered_map<const model::JobSpec*, Prepared> prepared_;
  // Specs derived for this cycle (a flavor, a smaller gang); stable addresses.
  std::vector<std::unique_ptr<model::JobSpec>> derived_;
  std::map<std::pair<const model::JobSpec*, std::string>, const model::JobSpec*> flavored_;
  // Demand keys that did not fit, with or without the reservation's nodes excluded: free
  // capacity only shrinks during a cycle, so they stay unplaceable.
  std::unordered_set<std::string> failed_;
  std::optional<Reservation> reservation_;
  bool reservation_tried_ = false;
  std::vector<char> reserved_mask_;  // by node position
  std::set<JobId> victims_;
  int preemption_tries_ = 0;
  // Jobs placed this cycle, by leaf: a job that then does not fit may have lost to them.
  std::map<int, int> placed_by_leaf_;
  // Jobs left pending by placement, explained after the last placement of the cycle.
  struct Unplaced {
    Entry entry;
    const model::JobSpec* spec = nullptr;
    // Jobs placed before it this cycle: of other queues (fair-share), of any queue (otherwise).
    int placed_from_other_queues = 0;
    std::string suffix;  // appended to the message
    std::optional<TimeMs> reserved_start;
  };
  std::vector<Unplaced> unplaced_;
};

CycleOutput Cycle::Run() {
  const model::ResourceAmounts capacity = cluster_.Capacity();
  queues_.Advance(input_.now, capacity);
  // GPU flavors for jobs that accept any model: the governed models of the cluster first (in
  // name order), then its other models; none when the tree governs no model of the cluster.
  std::vector<std::string> others;
  for (const auto& [resource, amount] : capacity) {
    if (resource.rfind("gpu:", 0) != 0) continue;
    std::string model = resource.substr(4);
    if (queues_.Governs(resource)) {
      any_model_flavors_.push_back(std::move(model));
    } else {
      others.push_back(std::move(model));
    }
  }
  any_flavor_governed_ = !any_model_flavors_.empty() || queues_.GovernsAnyModel();
  if (any_model_flavors_.empty()) {
    any_model_flavors_ = {""};
  } else {
    any_model_flavors_.insert(any_model_flavors_.end(), others.begin(), others.end());
  }
  if (input_.keep_reservation) {
    reservation_tried_ = true;  // jobs tried before still block; a newcomer does not reserve
    if (previous_) AdoptReservation(*previous_);
  }

  // The workload mix FGD weighs fragmentation against: the shapes of the pending jobs.
  if (policy_.scoring == model::Scoring::kFragmentation) {
    std::vector<const model::JobSpec*> specs;
    specs.reserve(input_.pending.size());
    for (const PendingJob& job : input_.pending) specs.push_back(job.spec);
    mix_ = internal::MixOf(specs);
  }

  // Fair-share: bucket the pending jobs by leaf queue, each bucket in its within-queue order.
  // Other orders: one list.
  const bool fair_share = policy_.order == model::QueueOrder::kFairShare;
  std::map<int, std::vector<Entry>> buckets;
  std::vector<Entry> ordered;
  std::vector<Entry> nominated;
  for (const PendingJob& job : input_.pending) {
    DROVER_CHECK(job.spec != nullptr);
    std::optional<int> leaf = queues_.FindLeaf(job.spec->queue);
    if (!leaf) {
      std::vector<std::string> names = queues_.LeafNames();
      out_.pending.emplace_back(
          job.job, Verdict{model::HoldLayer::kQueue,
                           fmt::format("queue {} does not exist; the policy's queues are {}",
                                       job.spec->queue, fmt::join(names, ", ")),
                           std::nullopt, std::nullopt});
      continue;
    }
    Entry entry{&job,
                *leaf,
                EffectivePriority(policy_, job.priority, job.enqueued_at, input_.now),
                queues_.UserShare(*leaf, job.spec->owner),
                job.enqueued_at,
                0};
    if (!fair_share) {
      if (const JobHistory* history = HistoryOf(job.job)) {
        entry.submitted_at = history->submitted_at;
        entry.las_queue = LasQueue(policy_, history->attained_gpu_ms);
      }
    }
    if (input_.awaiting_victims.contains(job.job)) {
      nominated.push_back(entry);
    } else if (fair_share) {
      buckets[*leaf].push_back(entry);
    } else {
      ordered.push_back(entry);
    }
  }
  auto before = [this](const Entry& a, const Entry& b) { return Before(a, b); };
  std::sort(nominated.begin(), nominated.end(), before);
  for (auto& [leaf, entries] : buckets) std::sort(entries.begin(), entries.end(), before);
  std::sort(ordered.begin(), ordered.end(), before);

  for (const Entry& entry : nominated) Process(entry, /*nominated=*/true);
  // Orders other than fair-share: one order across every queue (quotas and limits still hold
  // each job to its own queue's).
  for (const Entry& entry : ordered) Process(entry, /*nominated=*/false);

  // Take jobs leaf by leaf in hierarchical fair-share order, re-evaluated after each job.
  std::vector<std::pair<int, std::size_t>> cursors;  // (leaf, next entry)
  for (const auto& [leaf, entries] : buckets) cursors.emplace_back(leaf, 0);
  while (!cursors.empty()) {
    std::size_t best = 0;
    for (std::size_t i = 1; i < cursors.size(); ++i) {
      if (queues_.Before(cursors[i].first, cursors[best].first)) best = i;
    }
    auto& [leaf, next] = cursors[best];
    const std::vector<Entry>& entries = buckets[leaf];
    Process(entries[next], /*nominated=*/false);
    if (++next == entries.size()) cursors.erase(cursors.begin() + static_cast<long>(best));
  }
  ExplainUnplaced();
  out_.reservation = reservation_;
  return std::move(out_);
}

bool Cycle::Before(const Entry& a, const Entry& b) const {
  switch (policy_.order) {
    case model::QueueOrder::kFairShare:
      if (a.priority != b.priority) return a.priority > b.priority;
      if (a.user_share != b.user_share) return a.user_share < b.user_share;
      if (a.job->enqueued_at != b.job->enqueued_at) {
        return a.job->enqueued_at < b.job->enqueued_at;
      }
      return a.job->job < b.job->job;
    case model::QueueOrder::kFifo:
      break;
    case model::QueueOrder::kSjf: {
      const std::optional<DurationMs>& limit_a = a.job->spec->timeout;
      const std::optional<DurationMs>& limit_b = b.job->spec->timeout;
      if (limit_a.has_value() != limit_b.has_value()) return limit_a.has_value();
      if (limit_a && *limit_a != *limit_b) return *limit_a < *limit_b;
      break;
    }
    case model::QueueOrder::kLas:
      if (a.las_queue != b.las_queue) return a.las_queue < b.las_queue;
      break;
  }
  if (a.submitted_at != b.submitted_at) return a.submitted_at < b.submitted_at;
  return a.job->job < b.job->job;
}

bool Cycle::Outranks(const Entry& entry, const RunningJob& running) const {
  switch (policy_.order) {
    case model::QueueOrder::kFairShare:
      return running.priority < entry.job->priority;
    case model::QueueOrder::kLas: {
      const JobHistory* history = HistoryOf(running.job);
      return LasQueue(policy_, history ? history->attained_gpu_ms : 0) > entry.las_queue;
    }
    case model::QueueOrder::kFifo:
    case model::QueueOrder::kSjf:
      return false;
  }
  return false;
}

std::vector<std::string> Cycle::Flavors(const model::JobSpec& spec) const {
  const model::Requirements& r = spec.requirements;
  const bool wants_gpu = r.per_worker.gpus > 0 || r.gpu_share_millis > 0 || !r.mig_profile.empty();
  if (!wants_gpu || !any_flavor_governed_) return {""};
  if (r.gpu_models.empty()) return any_model_flavors_;
  std::vector<std::string> flavors;
  bool governed = false;
  for (const std::string& model : r.gpu_models) {
    std::string lower = internal::Lower(model);
    if (std::find(flavors.begin(), flavors.end(), lower) != flavors.end()) continue;
    governed = governed || queues_.Governs("gpu:" + lower);
    flavors.push_back(std::move(lower));
  }
  if (!governed) return {""};
  return flavors;
}

const model::JobSpec& Cycle::SpecFor(const model::JobSpec& spec, const std::string& flavor) {
  if (flavor.empty()) return spec;
  auto [it, inserted] = flavored_.try_emplace({&spec, flavor}, nullptr);
  if (inserted) {
    auto copy = std::make_unique<model::JobSpec>(spec);
    copy->requirements.gpu_models = {flavor};
    it->second = copy.get();
    derived_.push_back(std::move(copy));
  }
  return *it->second;
}

const Prepared& Cycle::PreparedFor(const model::JobSpec& spec) {
  auto it = prepared_.find(&spec);
  if (it == prepared_.end()) it = prepared_.emplace(&spec, Prepare(spec)).first;
  return it->second;
}

bool Cycle::EndsBeforeReservation(const model::JobSpec& spec) const {
  return reservation_ && spec.timeout && input_.now + *spec.timeout <= reservation_->start;
}

std::optional<internal::PlannedGang> Cycle::PlaceGang(const model::JobSpec& spec,
                                                      bool honour_reservation,
                                                      const model::JobSpec** placed_spec) {
  const bool excluding = honour_reservation && reservation_ && !EndsBeforeReservation(spec);
  const internal::PlanOptions options = Options(excluding);
  auto attempt = [&](const model::JobSpec& candidate) -> std::optional<internal::PlannedGang> {
    const Prepared& prepared = PreparedFor(candidate);
    const std::string key = prepared.demand_key + (excluding ? "\x1dreserved" : "");
    if (failed_.contains(key)) return std::nullopt;
    auto gang = PlanOn(impl_, prepared, candidate, options);
    if (!gang) failed_.insert(key);
    return gang;
  };
  *placed_spec = &spec;
  if (auto gang = attempt(spec)) return gang;
  const int workers = std::max(spec.workers, 1);
  // 0 (the model's default) keeps the gang rigid.
  const int min_workers = spec.min_workers <= 0 ? workers : std::min(spec.min_workers, workers);
  if (min_workers == workers) return std::nullopt;
  // Elastic start: the largest gang in [min_workers, workers) that fits (fit is monotone in
  // the gang size, so a binary search finds it).
  int low = min_workers;
  int high = workers - 1;
  std::optional<internal::PlannedGang> best;
  while (low <= high) {
    const int size = low + (high - low) / 2;
    auto smaller = std::make_unique<model::JobSpec>(spec);
    smaller->workers = size;
    smaller->min_workers = size;
    const model::JobSpec& candidate = *smaller;
    derived_.push_back(std::move(smaller));
    if (auto gang = attempt(candidate)) {
      best = std::move(gang);
      *placed_spec = &candidate;
      low = size + 1;
    } else {
      high = size - 1;
    }
  }
  return best;
}

void Cycle::Commit(const Entry& entry, const model::JobSpec& spec, internal::PlannedGang gang,
                   Charge charge) {
  internal::Commit(impl_, gang, spec);
  queues_.Add(charge);
  ++placed_by_leaf_[entry.leaf];

  const PendingJob& job = *entry.job;
  model::Decision decision;
  decision.job = job.job;
  decision.at = input_.now;
  decision.kind = model::Decision::Kind::kPlaced;
  decision.queue = queues_.Name(entry.leaf);
  decision.candidates = gang.candidates;
  decision.nodes = NodesOf(gang.workers);
  decision.score = gang.score;
  std::string borrowing;
  for (const auto& [resource, amount] : charge.amounts) {
    if (queues_.Borrowing(entry.leaf, resource) && resource == "gpu") borrowing = " (borrowing)";
  }
  const int workers = static_cast<int>(gang.workers.size());
  decision.summary = fmt::format(
      "admitted to queue {}{}; {} worker{} placed on {} by {} (score {:.3f}) among {} feasible "
      "node{}",
      decision.queue, borrowing, workers, workers == 1 ? "" : "s", fmt::join(decision.nodes, ","),
      model::ScoringName(policy_.scoring), gang.score, gang.candidates,
      gang.candidates == 1 ? "" : "s");
  if (workers < std::max(job.spec->workers, 1)) {
    decision.summary += fmt::format(" (elastic start: {} of {} workers, min_workers {})", workers,
                                    job.spec->workers, job.spec->min_workers);
  }
  out_.placed.push_back(PlacedJob{Placement{job.job, std::move(gang.workers)}, std::move(charge),
                                  std::move(decision)});
}

void Cycle::Reserve(const Entry& entry, const model::JobSpec& spec) {
  auto projection = Project(cluster_, input_.running, spec, input_.now, Options(false));
  if (!projection || projection->start <= input_.now) return;
  AdoptReservation(Reservation{entry.job->job, projection->start, projection->nodes});
  if (!previous_ || previous_->job != reservation_->job) {
    model::Decision decision;
    decision.job = entry.job->job;
    decision.at = input_.now;
    decision.kind = model::Decision::Kind::kReserved;
    decision.queue = queues_.Name(entry.leaf);
    for (const NodeId& node : reservation_->nodes) decision.nodes.push_back(node.value());
    decision.reserved_start = reservation_->start;
    decision.summary = fmt::format(
        "top blocked job: reserved {} for it, expected to start {}; later jobs start ahead only "
        "if they end by then or avoid these nodes",
        fmt::join(decision.nodes, ","), In(reservation_->start, input_.now));
    out_.reservation_decision = std::move(decision);
  }
}

void Cycle::AdoptReservation(Reservation reservation) {
  reserved_mask_.assign(impl_.nodes.size(), 0);
  for (const NodeId& node : reservation.nodes) {
    int pos = impl_.Find(node.value());
    if (pos >= 0) reserved_mask_[pos] = 1;
  }
  reservation_ = std::move(reservation);
}

void Cycle::CommitExternal(const Entry& entry, Charge charge) {
  queues_.Add(charge);
  ++placed_by_leaf_[entry.leaf];
  model::Decision decision;
  decision.job = entry.job->job;
  decision.at = input_.now;
  decision.kind = model::Decision::Kind::kPlaced;
  decision.queue = queues_.Name(entry.leaf);
  decision.summary = fmt::format("admitted to queue {}; placement is left to the queue's executor",
                                 decision.queue);
  out_.placed.push_back(
      PlacedJob{Placement{entry.job->job, {}}, std::move(charge), std::move(decision)});
}

void Cycle::Process(const Entry& entry, bool nominated) {
  const PendingJob& job = *entry.job;
  const model::JobSpec& spec = *job.spec;
  std::optional<AdmitVerdict> refused;
  std::optional<Charge> admitted_charge;
  const model::JobSpec* admitted_spec = nullptr;
  for (const std::string& flavor : Flavors(spec)) {
    Charge charge{entry.leaf, spec.owner, spec.pipeline, ChargeAmounts(spec, flavor)};
    AdmitVerdict verdict = queues_.CheckAdmit(charge);
    if (!verdict.ok()) {
      if (!refused) refused = std::move(verdict);
      continue;
    }
    if (job.external) {
      CommitExternal(entry, std::move(charge));
      return;
    }
    const model::JobSpec& flavored = SpecFor(spec, flavor);
    const model::JobSpec* placed_spec = nullptr;
    auto gang = PlaceGang(flavored, /*honour_reservation=*/!nominated, &placed_spec);
    if (gang) {
      if (placed_spec->workers != flavored.workers) {
        charge.amounts = ChargeAmounts(*placed_spec, flavor);
      }
      Commit(entry, *placed_spec, std::move(*gang), std::move(charge));
      return;
    }
    if (!admitted_charge) {
      admitted_charge = std::move(charge);
      admitted_spec = &flavored;
    }
  }

  if (nominated) {
    Pend(entry, Verdict{model::HoldLayer::kPreempting,
                        "waiting for the jobs preempted for it to stop and free their resources",
                        std::nullopt, std::nullopt});
    return;
  }

  if (!admitted_charge) {
    // Refused by quota or a limit. A job within its own guaranteed quota, refused because its
    // cohort lent the rest, may reclaim what was lent (not an external one: Drover preempts
    // only for jobs it places).
    const Charge charge{entry.leaf, spec.owner, spec.pipeline, ChargeAmounts(spec, "")};
    if (!job.external && refused->code == AdmitVerdict::Code::kCohort &&
        TryPreempt(entry, spec, charge)) {
      return;
    }
    const bool limit = refused->code == AdmitVerdict::Code::kLimit;
    Pend(entry, Verdict{limit ? model::HoldLayer::kConcurrencyLimit : model::HoldLayer::kQuota,
                        refused->Render(), std::nullopt, std::nullopt});
    return;
  }

  // Admitted but does not fit.
  const model::JobSpec& flavored = *admitted_spec;
  if (!reservation_tried_ && policy_.backfill) {
    // EASY: only the first blocked job reserves (one projection per cycle); if nothing bounds
    // its start, no reservation holds anyone back this cycle.
    reservation_tried_ = true;
    Reserve(entry, flavored);
    if (reservation_ && reservation_->job == job.job) {
      if (!TryPreempt(entry, flavored, *admitted_charge)) {
        PendUnplaced(entry, flavored,
                     fmt::format("; resources are reserved for it, expected to start {}",
                                 In(reservation_->start, input_.now)),
                     reservation_->start);
      }
      return;
    }
  }
  if (TryPreempt(entry, flavored, *admitted_charge)) return;
  PendUnplaced(entry, flavored);
}

void Cycle::PendUnplaced(const Entry& entry, const model::JobSpec& spec, std::string suffix,
                         std::optional<TimeMs> reserved_start) {
  const Prepared& prepared = PreparedFor(spec);
  // Held only by the reservation: it would fit on the reserved nodes.
  if (reservation_ && reservation_->job != entry.job->job && !EndsBeforeReservation(spec) &&
      !failed_.contains(prepared.demand_key)) {
    if (PlanOn(impl_, prepared, spec, Options(false))) {
      Pend(entry,
           Verdict{model::HoldLayer::kReservation,
                   fmt::format(
                       "would fit now, but only on nodes reserved for job {}, which starts {}; a "
                       "job starts ahead of it only with a time limit that ends by then{}",
                       reservation_->job.value(), In(reservation_->start, input_.now),
                       spec.timeout ? fmt::format(" (its limit {} ends later)",
                                                  FormatDuration(*spec.timeout))
                                    : " (it has none)"),
                   std::nullopt, std::nullopt});
      return;
    }
    failed_.insert(prepared.demand_key);
  }
  // Fair-share: jobs of other queues placed before it; other orders: every job placed before it.
  int others = 0;
  for (const auto& [leaf, count] : placed_by_leaf_) {
    if (leaf != entry.leaf || policy_.order != model::QueueOrder::kFairShare) others += count;
  }
  unplaced_.push_back(Unplaced{entry, &spec, others, std::move(suffix), reserved_start});
}

void Cycle::ExplainUnplaced() {
  std::unordered_map<std::string, PendingReason> reasons;  // by demand key
  for (Unplaced& unplaced : unplaced_) {
    const model::JobSpec& spec = *unplaced.spec;
    const std::string& key = PreparedFor(spec).demand_key;
    auto it = reasons.find(key);
    if (it == reasons.end()) it = reasons.emplace(key, Explain(cluster_, spec)).first;
    const PendingReason& reason = it->second;
    Verdict verdict{PlacementLayer(reason), reason.Render() + unplaced.suffix, reason,
                    unplaced.reserved_start};
    // Lost to queues ahead of it by fair share this cycle?
    const int others = unplaced.placed_from_other_queues;
    if (others > 0 && verdict.layer == model::HoldLayer::kNodeFit &&
        reason.code == PendingReason::Code::kInsufficientFree &&
        policy_.order != model::QueueOrder::kFairShare) {
      verdict.message = fmt::format(
          "{} job{} ahead of it in {} order took free capacity this cycle; {}", others,
          others == 1 ? "" : "s", model::QueueOrderName(policy_.order), verdict.message);
    } else if (others > 0 && verdict.layer == model::HoldLayer::kNodeFit &&
               reason.code == PendingReason::Code::kInsufficientFree) {
      verdict.layer = model::HoldLayer::kFairShare;
      verdict.message = fmt::format(
          "{} job{} of queues ahead of {} by fair share took free capacity this cycle; {}", others,
          others == 1 ? "" : "s", queues_.Name(unplaced.entry.leaf), verdict.message);
    }
    Pend(unplaced.entry, std::move(verdict));
  }
}

bool Cycle::TryPreempt(const Entry& entry, const model::JobSpec& spec, const Charge& charge) {
  if (!policy_.preemption || preemption_tries_ >= kMaxPreemptionTriesPerCycle) return false;
  const PendingJob& job = *entry.job;
  const bool reclaim = queues_.WithinNominal(entry.leaf, charge.amounts);
  VictimRules rules;
  rules.now = input_.now;
  rules.min_run_time = policy_.min_run_time;
  rules.reason = [&](const RunningJob& running) -> std::optional<VictimReason> {
    if (input_.stopping.contains(running.job) || victims_.contains(running.job)) {
      return std::nullopt;
    }
    const int leaf = running.charge->leaf;
    if (leaf == entry.leaf) {
      if (Outranks(entry, running)) return VictimReason::kPriority;
      return std::nullopt;
    }
    if (!reclaim) return std::nullopt;
    for (const auto& [resource, amount] : running.charge->amounts) {
      if (amount > 0 && charge.amounts.contains(resource) && queues_.Borrowing(leaf, resource)) {
        return VictimReason::kReclaim;
      }
    }
    return std::nullopt;
  };
  // Trial copies of the queue tree and the cluster with `released` gone. A set of victims that
  // extends the last one releases only the new ones (SelectVictims grows its set one victim at
  // a time); any other starts from fresh copies.
  const Prepared prepared = Prepare(spec);
  std::optional<QueueTree> trial_queues;
  std::optional<ClusterState> trial;
  std::vector<const RunningJob*> released;
  rules.frees_enough = [&](std::span<const RunningJob* const> victims) {
    if (!trial || victims.size() < released.size() ||
        !std::equal(released.begin(), released.end(), victims.begin())) {
      trial_queues = queues_;
      trial = cluster_.Clone();
      released.clear();
    }
    for (std::size_t i = released.size(); i < victims.size(); ++i) {
      trial_queues->Remove(*victims[i]->charge);
      trial->Release(*victims[i]->placement, victims[i]->spec->requirements);
      released.push_back(victims[i]);
    }
    return trial_queues->CheckAdmit(charge).ok() &&
           PlanOn(ClusterStateAccess::Get(*trial), prepared, spec, Options(false)).has_value();
  };
  const VictimSelection selection = SelectVictims(input_.running, rules);
  if (selection.candidates > 0) ++preemption_tries_;
  if (selection.victims.empty()) return false;

  Preemption preemption;
  preemption.preemptor = job.job;
  model::Decision& decision = preemption.decision;
  decision.job = job.job;
  decision.at = input_.now;
  decision.kind = model::Decision::Kind::kPreempted;
  decision.queue = queues_.Name(entry.leaf);
  bool any_reclaim = false;
  double total_lost = 0.0;
  std::vector<std::string> names;
  for (const Victim& chosen : selection.victims) {
    const RunningJob& victim = *chosen.job;
    any_reclaim = any_reclaim || chosen.reason == VictimReason::kReclaim;
    total_lost += chosen.lost_gpu_seconds;
    victims_.insert(victim.job);
    preemption.victims.push_back(victim.job);
    model::Victim record;
    record.job = victim.job;
    record.queue = queues_.Name(victim.charge->leaf);
    auto gpu = victim.charge->amounts.find("gpu");
    record.gpus = gpu == victim.charge->amounts.end()
                      ? 0
                      : static_cast<int>(gpu->second / internal::kShareMillisPerGpu);
    record.lost_gpu_seconds = chosen.lost_gpu_seconds;
    record.has_checkpoint = victim.last_checkpoint_at > 0;
    decision.victims.push_back(record);
    names.push_back(fmt::format("{} of queue {} (loses {:.0f} GPU-s{})", victim.job.value(),
                                record.queue, record.lost_gpu_seconds,
                                record.has_checkpoint ? ", resumes from checkpoint" : ""));
  }
  decision.reason = any_reclaim ? "reclaim" : "priority";
  std::string why;
  if (any_reclaim) {
    why = "reclaiming quota lent by queue " + decision.queue;
  } else if (policy_.order == model::QueueOrder::kLas) {
    why = fmt::format("least attained service within queue {} (LAS queue {})", decision.queue,
                      entry.las_queue);
  } else {
    why = "priority within queue " + decision.queue;
  }
  decision.summary = fmt::format(
      "{}: preempting {} job{} to make room ({:.0f} GPU-seconds of work lost in all): {}", why,
      names.size(), names.size() == 1 ? "" : "s", total_lost, fmt::join(names, "; "));
  for (const model::Victim& victim : decision.victims) {
    model::Decision evicted;
    evicted.job = victim.job;
    evicted.at = input_.now;
    evicted.kind = model::Decision::Kind::kEvicted;
    evicted.queue = victim.queue;
    evicted.reason = decision.reason;
    evicted.preemptor = job.job;
    evicted.victims = {victim};
    evicted.summary = fmt::format(
        "preempted for {} of queue {} ({}): loses {:.0f} GPU-seconds since its {}",
        JobLabel(spec, job.job), decision.queue, decision.reason, victim.lost_gpu_seconds,
        victim.has_checkpoint ? "last checkpoint" : "start (no checkpoint)");
    preemption.evicted.push_back(std::move(evicted));
  }
  Pend(entry, Verdict{model::HoldLayer::kPreempting, decision.summary, std::nullopt, std::nullopt});
  out_.preemptions.push_back(std::move(preemption));
  return true;
}

}  // namespace

int LasQueue(const model::Policy& policy, std::int64_t attained_gpu_ms) {
  // s >= t in GPU-seconds is floor(ms / 1000) >= t for a whole t (and no overflow for large t).
  const std::int64_t attained_gpu_seconds =
      std::max<std::int64_t>(attained_gpu_ms, 0) / kMillisPerSecond;
  int queue = 0;
  for (std::int64_t threshold : policy.las_thresholds) {
    if (attained_gpu_seconds >= threshold) ++queue;
  }
  return queue;
}

int EffectivePriority(const model::Policy& policy, int priority, TimeMs enqueued_at, TimeMs now) {
  if (policy.aging_interval <= 0 || now <= enqueued_at) return priority;
  const std::int64_t steps = (now - enqueued_at) / policy.aging_interval;
  const std::int64_t bonus =
      std::min<std::int64_t>(steps * policy.aging_step, std::max(policy.aging_max, 0));
  return static_cast<int>(priority + bonus);
}

std::optional<TimeMs> EstimateStart(const ClusterState& cluster,
                                    std::span<const RunningJob> running, const model::JobSpec& spec,
                                    TimeMs now) {
  auto projection = Project(cluster, running, spec, now, internal::PlanOptions{});
  if (!projection) return std::nullopt;
  return projection->start;
}

CycleResult RunCycle(ClusterState& cluster, std::vector<PendingJob> pending) {
  model::Policy policy;
  policy.scoring = model::Scoring::kBinpack;
  QueueTree queues;
  CycleInput input;
  input.pending = std::move(pending);
  CycleOutput out = RunPolicyCycle(policy, queues, cluster, input, std::nullopt);
  CycleResult result;
  result.placements.reserve(out.placed.size());
  for (PlacedJob& placed : out.placed) result.placements.push_back(std::move(placed.placement));
  std::map<JobId, const model::JobSpec*> specs;
  for (const PendingJob& job : input.pending) specs.emplace(job.job, job.spec);
  for (auto& [job, verdict] : out.pending) {
    // Under the empty policy only the placement layers hold a job, except a job naming a queue
    // other than "default": it is explained by placement alone.
    result.pending.emplace_back(
        job, verdict.placement ? std::move(*verdict.placement) : Explain(cluster, *specs.at(job)));
  }
  return result;
}

CycleOutput RunPolicyCycle(const model::Policy& policy, QueueTree& queues, ClusterState& cluster,
                           const CycleInput& input,
                           const std::optional<Reservation>& previous_reservation) {
  return Cycle(policy, queues, cluster, input, previous_reservation).Run();
}

}  // namespace drover::sched
