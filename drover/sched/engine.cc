// RunPolicyCycle, RunCycle and the queue-order helpers (engine.h). One Cycle
// object per call holds the cycle's caches (prepared filters, derived specs, failed demands, the
// reservation and the nominated jobs' claims) that ordering, admission, placement, backfill,
// preemption, nomination and the verdicts all share, which is why this file is one class of
// ~1,000 lines; placement (placement.h), the choice of victims (victims.h) and the pending
// reasons (pending_reason.h) live in their own files.

#include "drover/sched/engine.h"

#include <fmt/compile.h>
#include <fmt/format.h>

#include <algorithm>
#include <iterator>
#include <map>
#include <memory>
#include <unordered_map>
#include <unordered_set>
#include <utility>

#include "drover/common/quantity.h"
#include "drover/sched/cluster_index.h"
#include "drover/sched/estimate.h"
#include "drover/sched/flavors.h"
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

struct AdmitVerdictHash {
  std::size_t operator()(const AdmitVerdict& v) const {
    std::size_t h = std::hash<std::string>{}(v.scope);
    for (std::int64_t x :
         {std::int64_t{static_cast<int>(v.code)}, v.used, v.requested, v.limit, v.nominal}) {
      h = h * 1'000'003 ^ std::hash<std::int64_t>{}(x);
    }
    return h ^ std::hash<std::string>{}(v.resource);
  }
};

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
  internal::PlanOptions keyed = options;
  keyed.demand_key = &prepared.demand_key;
  return internal::Plan(impl, prepared.filter, &index, spec, keyed);
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

  // Tries `entry` in its ordinary turn: admission, placement, and what follows when it does not
  // fit. Skips a nominated job already placed this cycle.
  void Process(const Entry& entry);
  // The nominated phase (engine.h, Nomination), over the nominated jobs in order: places those
  // whose victims have all exited or marks them lapsed, claims for the others. Then sets
  // claimed_mask_ for every later job.
  void ProcessNominated(const std::vector<Entry>& nominated);
  // A nominated job's first GPU flavor under which the queue tree admits it and it fits whole on
  // `impl` outside `excluded` (by position), reservation ignored.
  struct NominatedFit {
    Charge charge;
    const model::JobSpec* spec = nullptr;  // flavored
    internal::PlannedGang gang;
  };
  std::optional<NominatedFit> FitNominated(const Entry& entry, ClusterImpl& impl,
                                           const std::vector<char>& excluded);
  // Places a nominated job whose victims have all exited: reservation ignored, nodes in
  // `excluded` (by position) never used, the whole gang. Returns whether it was placed.
  bool PlaceNominated(const Entry& entry, const std::vector<char>& excluded);
  // Plans a nominated job on a copy of `trial` (the cluster with earlier claims committed) with
  // `victims` (those still stopping) released there and their charges out of the queue tree,
  // never on nodes in `excluded`; if it is admitted and fits, the copy with the plan committed
  // replaces `trial`, its charge enters the tree, the plan's nodes are marked in `claimed`, and
  // it returns true; otherwise the tree gets the victims' charges back and it returns false.
  bool Claim(const Entry& entry, const std::set<JobId>& victims, ClusterState& trial,
             const std::vector<char>& excluded, std::vector<char>& claimed);
  // Undoes every claim's change to the queue tree (Run, before it returns).
  void ReleaseClaims();
  // Adds the charge of an admitted external job (PendingJob::external) and records it placed
  // without nodes.
  void CommitExternal(const Entry& entry, Charge charge);
  const model::JobSpec& SpecFor(const model::JobSpec& spec, const std::string& flavor);
  const Prepared& PreparedFor(const model::JobSpec& spec);
  // Plans `spec` (a gang that does not fit whole shrinks down to min_workers); honours the
  // reservation unless the job ends before it. nullopt if it does not fit.
  std::optional<internal::PlannedGang> PlaceGang(const model::JobSpec& spec,
                                                 bool honour_reservation,
                                                 const model::JobSpec** placed_spec);
  void Commit(const Entry& entry, const model::JobSpec& spec, internal::PlannedGang gang,
              Charge charge);
  // The kPlaced record of a committed gang (CycleInput::placement_decisions).
  model::Decision PlacedDecision(const Entry& entry, const internal::PlannedGang& gang,
                                 const Charge& charge) const;
  bool EndsBeforeReservation(const model::JobSpec& spec) const;
  void Reserve(const Entry& entry, const model::JobSpec& spec);
  void AdoptReservation(Reservation reservation);
  bool TryPreempt(const Entry& entry, const model::JobSpec& spec, const Charge& charge);
  // refused.Render(), once per distinct verdict per cycle.
  const std::string& RenderRefusal(const AdmitVerdict& refused);
  // Pends a job that was admitted but did not fit: held by the reservation (decided now), or
  // by placement (explained at the end of the cycle, against what is left then).
  void PendUnplaced(const Entry& entry, const model::JobSpec& spec, std::string suffix = "",
                    std::optional<TimeMs> reserved_start = std::nullopt);
  void ExplainUnplaced();
  void Pend(const Entry& entry, Verdict verdict) {
    if (lapsed_.contains(entry.job->job)) {
      verdict.message +=
          "; it was nominated for the capacity of the jobs it preempted, but once they exited it "
          "still did not fit, so it takes its ordinary turn again and may preempt again";
    }
    out_.pending.emplace_back(entry.job->job, std::move(verdict));
  }
  // Claimed nodes are always excluded; the reserved ones when `honour_reservation`.
  internal::PlanOptions Options(bool honour_reservation) const {
    internal::PlanOptions options;
    options.scoring = policy_.scoring;
    options.mix = mix_.shapes.empty() ? nullptr : &mix_;
    if (honour_reservation && reservation_) {
      options.excluded = claimed_mask_.empty() ? &reserved_mask_ : &held_mask_;
    } else if (!claimed_mask_.empty()) {
      options.excluded = &claimed_mask_;
    }
    return options;
  }
  // held_mask_ = reserved_mask_ | claimed_mask_, after either changes (when anything is held).
  void UpdateHeldMask();
  // Adds to `options.excluded` the nodes `spec`, started now, would run into a window of
  // (CycleInput::maintenance), keeping the mask in `scratch` (which must outlive the options'
  // use). Returns the suffix that keeps failed_ keys apart for masks that differ by time
  // limit: empty when no window applies.
  // "; node-b is cordoned, node-c has a maintenance window from ... it would run into": the
  // nodes CycleInput::maintenance keeps `spec` off now; empty when none.
  std::string WindowsNote(const model::JobSpec& spec) const {
    std::vector<std::string> cordoned, windowed;
    for (const NodeWindow& window : input_.maintenance) {
      if (!RunsInto(window, input_.now, spec.timeout)) continue;
      (window.to == kNeverEnds ? cordoned : windowed).push_back(window.node.value());
    }
    std::string note;
    if (!cordoned.empty()) {
      note += fmt::format("; cordoned, taking no new jobs: {}", fmt::join(cordoned, ", "));
    }
    if (!windowed.empty()) {
      note += fmt::format(
          "; in a maintenance window, or one its time limit ({}) would run into: {}",
          spec.timeout ? FormatDuration(*spec.timeout) : "none", fmt::join(windowed, ", "));
    }
    return note;
  }
  std::string ExcludeWindows(const model::JobSpec& spec, internal::PlanOptions& options,
                             std::vector<char>& scratch) const {
    if (input_.maintenance.empty()) return "";
    auto mask =
        internal::WindowMask(impl_, input_.maintenance, input_.now, spec.timeout, options.excluded);
    if (!mask) return "";
    scratch = std::move(*mask);
    options.excluded = &scratch;
    return fmt::format("\x1dwindows {}", spec.timeout ? *spec.timeout : -1);
  }

  const model::Policy& policy_;
  QueueTree& queues_;
  ClusterState& cluster_;
  ClusterImpl& impl_;
  const CycleInput& input_;
  const std::optional<Reservation>& previous_;
  CycleOutput out_;

  internal::WorkloadMix mix_;
  std::optional<FlavorOrder> flavors_;  // set by Run()
  std::unordered_map<const model::JobSpec*, Prepared> prepared_;
  // Specs derived for this cycle (a flavor, a smaller gang); stable addresses.
  std::vector<std::unique_ptr<model::JobSpec>> derived_;
  std::map<std::pair<const model::JobSpec*, std::string>, const model::JobSpec*> flavored_;
  // Demand keys that did not fit, with or without the reservation's nodes excluded: free
  // capacity only shrinks during a cycle, so they stay unplaceable.
  std::unordered_set<std::string> failed_;
  // Refusals rendered this cycle: the refused jobs of a full queue mostly share one verdict
  // (tens of thousands of jobs, a handful of sentences).
  std::unordered_map<AdmitVerdict, std::string, AdmitVerdictHash> refusals_;
  std::optional<Reservation> reservation_;
  bool reservation_tried_ = false;
  std::vector<char> reserved_mask_;  // by node position
  std::set<JobId> victims_;
  int preemption_tries_ = 0;
  // Whether some running job, not stopping, passes the rules every victim obeys (MayBeVictim);
  // computed on the first preemption try of the cycle.
  std::optional<bool> any_victim_;
  // Nomination (engine.h). A claim: the charge added to the tree and the victims' charges taken
  // out of it, until ReleaseClaims.
  struct Claimed {
    JobId job;
    Charge charge;
    std::vector<const RunningJob*> victims;
  };
  std::vector<Claimed> claims_;
  // By node position, empty when nothing is held: nodes of claimed plans, and nodes freed by the
  // exited victims of nominated jobs still waiting. No job after the nominated phase uses them.
  std::vector<char> claimed_mask_;
  std::vector<char> held_mask_;       // by node position: reserved or claimed
  std::vector<JobId> waiting_;        // nominated jobs still waiting for victims, in order
  std::set<JobId> placed_nominated_;  // nominated jobs placed ahead of their ordinary turn
  std::set<JobId> lapsed_;            // nominated jobs whose victims all exited, still unplaced
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
  // Every pending job ends placed or with a verdict; growing the verdicts (a few hundred bytes
  // each) by doubling cost ~5% of a 50,000-job cycle in relocations.
  out_.pending.reserve(input_.pending.size());
  const model::ResourceAmounts& capacity = cluster_.Capacity();
  queues_.Advance(input_.now, capacity);
  flavors_.emplace(queues_, capacity);
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
    if (auto it = input_.nominated.find(job.job); it != input_.nominated.end()) {
      nominated.push_back(entry);
      // Victims still stopping: it waits in the nominated phase. All gone: it also gets its
      // ordinary turn, used if the nominated try does not place it.
      if (!it->second.stopping.empty()) continue;
    }
    if (fair_share) {
      buckets[*leaf].push_back(entry);
    } else {
      ordered.push_back(entry);
    }
  }
  auto before = [this](const Entry& a, const Entry& b) { return Before(a, b); };
  std::sort(nominated.begin(), nominated.end(), before);
  for (auto& [leaf, entries] : buckets) std::sort(entries.begin(), entries.end(), before);
  std::sort(ordered.begin(), ordered.end(), before);

  out_.order.reserve(input_.pending.size());
  for (const Entry& entry : nominated) out_.order.push_back(entry.job->job);
  // A nominated job's ordinary turn is not a second place in the order.
  auto consider = [this](const Entry& entry) {
    if (!input_.nominated.contains(entry.job->job)) out_.order.push_back(entry.job->job);
    Process(entry);
  };
  ProcessNominated(nominated);
  // Orders other than fair-share: one order across every queue (quotas and limits still hold
  // each job to its own queue's).
  for (const Entry& entry : ordered) consider(entry);

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
    consider(entries[next]);
    if (++next == entries.size()) cursors.erase(cursors.begin() + static_cast<long>(best));
  }
  ExplainUnplaced();
  ReleaseClaims();
  out_.reservation = reservation_;
  return std::move(out_);
}

void Cycle::UpdateHeldMask() {
  if (claimed_mask_.empty()) return;
  held_mask_ = claimed_mask_;
  if (!reservation_) return;
  for (std::size_t i = 0; i < held_mask_.size(); ++i) held_mask_[i] |= reserved_mask_[i];
}

void Cycle::ProcessNominated(const std::vector<Entry>& nominated) {
  if (nominated.empty()) return;
  const std::size_t n = impl_.nodes.size();
  // Positions of the nodes each job's exited victims freed; held for it while it waits.
  std::vector<std::vector<int>> freed(nominated.size());
  std::vector<char> waiting(nominated.size(), 0);
  for (std::size_t i = 0; i < nominated.size(); ++i) {
    const Nomination& nomination = input_.nominated.at(nominated[i].job->job);
    waiting[i] = !nomination.stopping.empty();
    for (const NodeId& node : nomination.freed) {
      const int pos = impl_.Find(node.value());
      if (pos >= 0) freed[i].push_back(pos);
    }
  }
  // Nodes held from job `self` (an index, or nominated.size() for any other job): what the
  // exited victims of other nominated jobs still waiting freed.
  auto held_from = [&](std::size_t self) {
    std::vector<char> mask(n, 0);
    for (std::size_t j = 0; j < nominated.size(); ++j) {
      if (j == self || !waiting[j]) continue;
      for (int pos : freed[j]) mask[pos] = 1;
    }
    return mask;
  };
  // First those whose victims have all exited: they start now, where nothing is held for others.
  for (std::size_t i = 0; i < nominated.size(); ++i) {
    if (waiting[i]) continue;
    const JobId job = nominated[i].job->job;
    if (PlaceNominated(nominated[i], held_from(i))) {
      placed_nominated_.insert(job);
    } else {
      lapsed_.insert(job);  // its ordinary turn comes later in this cycle
    }
  }
  // Then the claims, on one trial cluster taken after those placements.
  std::vector<char> claimed(n, 0);  // nodes of the claimed plans
  std::optional<ClusterState> trial;
  for (std::size_t i = 0; i < nominated.size(); ++i) {
    if (!waiting[i]) continue;
    const Entry& entry = nominated[i];
    const JobId job = entry.job->job;
    const std::set<JobId>& stopping = input_.nominated.at(job).stopping;
    if (!trial) trial = cluster_.Clone();
    const bool claimed_plan = Claim(entry, stopping, *trial, held_from(i), claimed);
    waiting_.push_back(job);
    std::vector<std::int64_t> ids;
    for (JobId victim : stopping) ids.push_back(victim.value());
    Pend(entry,
         Verdict{model::HoldLayer::kPreempting,
                 fmt::format("waiting for job{} {}, preempted for it, to exit{}",
                             ids.size() == 1 ? "" : "s", fmt::join(ids, ", "),
                             claimed_plan ? "; the capacity and quota they free are held for it"
                                          : " (it does not fit yet even without them)"),
                 std::nullopt, std::nullopt});
  }
  // Every later job: the claims' nodes and what was freed for jobs still waiting.
  std::vector<char> held = held_from(nominated.size());
  for (std::size_t pos = 0; pos < n; ++pos) held[pos] |= claimed[pos];
  if (std::find(held.begin(), held.end(), 1) == held.end()) return;
  claimed_mask_ = std::move(held);
  UpdateHeldMask();
}

std::optional<Cycle::NominatedFit> Cycle::FitNominated(const Entry& entry, ClusterImpl& impl,
                                                       const std::vector<char>& excluded) {
  const model::JobSpec& spec = *entry.job->spec;
  for (const std::string& flavor : flavors_->For(queues_, spec)) {
    Charge charge{entry.leaf, spec.owner, spec.pipeline, ChargeAmounts(spec, flavor)};
    if (!queues_.CheckAdmit(charge).ok()) continue;
    const model::JobSpec& flavored = SpecFor(spec, flavor);
    internal::PlanOptions options = Options(/*honour_reservation=*/false);
    options.excluded = &excluded;
    std::vector<char> windows;
    ExcludeWindows(flavored, options, windows);
    if (auto gang = PlanOn(impl, PreparedFor(flavored), flavored, options)) {
      return NominatedFit{std::move(charge), &flavored, std::move(*gang)};
    }
  }
  return std::nullopt;
}

bool Cycle::PlaceNominated(const Entry& entry, const std::vector<char>& excluded) {
  std::optional<NominatedFit> fit = FitNominated(entry, impl_, excluded);
  if (!fit) return false;
  Commit(entry, *fit->spec, std::move(fit->gang), std::move(fit->charge));
  return true;
}

bool Cycle::Claim(const Entry& entry, const std::set<JobId>& victims, ClusterState& trial,
                  const std::vector<char>& excluded, std::vector<char>& claimed) {
  std::vector<const RunningJob*> stopping;
  for (const RunningJob& running : input_.running) {
    if (victims.contains(running.job)) stopping.push_back(&running);
  }
  ClusterState attempt = trial.Clone();
  for (const RunningJob* victim : stopping) {
    queues_.Remove(*victim->charge);
    attempt.Release(*victim->placement, victim->spec->requirements);
  }
  ClusterImpl& trial_impl = ClusterStateAccess::Get(attempt);
  std::optional<NominatedFit> fit = FitNominated(entry, trial_impl, excluded);
  if (!fit) {
    for (const RunningJob* victim : stopping) queues_.Add(*victim->charge);
    return false;
  }
  internal::Commit(trial_impl, fit->gang, *fit->spec);
  queues_.Add(fit->charge);
  for (const std::string& node : NodesOf(fit->gang.workers)) {
    const int pos = impl_.Find(node);
    if (pos >= 0) claimed[pos] = 1;
  }
  claims_.push_back(Claimed{entry.job->job, std::move(fit->charge), std::move(stopping)});
  trial = std::move(attempt);
  return true;
}

void Cycle::ReleaseClaims() {
  for (auto claim = claims_.rbegin(); claim != claims_.rend(); ++claim) {
    queues_.Remove(claim->charge);
    for (const RunningJob* victim : claim->victims) queues_.Add(*victim->charge);
  }
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
  internal::PlanOptions options = Options(excluding);
  std::vector<char> windows;
  const std::string windowed = ExcludeWindows(spec, options, windows);
  auto attempt = [&](const model::JobSpec& candidate) -> std::optional<internal::PlannedGang> {
    const Prepared& prepared = PreparedFor(candidate);
    const std::string key = prepared.demand_key + (excluding ? "\x1dreserved" : "") + windowed;
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

  model::Decision decision;
  if (input_.placement_decisions) decision = PlacedDecision(entry, gang, charge);
  out_.placed.push_back(PlacedJob{Placement{entry.job->job, std::move(gang.workers)},
                                  std::move(charge), std::move(decision)});
}

model::Decision Cycle::PlacedDecision(const Entry& entry, const internal::PlannedGang& gang,
                                      const Charge& charge) const {
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
    if (resource == "gpu" && queues_.Borrowing(entry.leaf, resource)) borrowing = " (borrowing)";
  }
  const int workers = static_cast<int>(gang.workers.size());
  // Compiled: parsing the format at run time took half of this call, which runs per placement.
  // Written into a stack buffer: appending piece by piece to a std::string resized it a dozen
  // times.
  fmt::memory_buffer summary;
  fmt::format_to(
      std::back_inserter(summary),
      FMT_COMPILE("admitted to queue {}{}; {} worker{} placed on {} by {} (score {:.3f}) among {} "
                  "feasible node{}"),
      decision.queue, borrowing, workers, workers == 1 ? "" : "s", fmt::join(decision.nodes, ","),
      model::ScoringName(policy_.scoring), gang.score, gang.candidates,
      gang.candidates == 1 ? "" : "s");
  decision.summary.assign(summary.data(), summary.size());
  if (workers < std::max(job.spec->workers, 1)) {
    decision.summary += fmt::format(" (elastic start: {} of {} workers, min_workers {})", workers,
                                    job.spec->workers, job.spec->min_workers);
  }
  return decision;
}

void Cycle::Reserve(const Entry& entry, const model::JobSpec& spec) {
  auto projection = internal::Project(cluster_, input_.running, spec, input_.now, Options(false),
                                      input_.maintenance);
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
  reserved_mask_ = impl_.MaskOf(reservation.nodes);
  reservation_ = std::move(reservation);
  UpdateHeldMask();
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

void Cycle::Process(const Entry& entry) {
  const PendingJob& job = *entry.job;
  if (!placed_nominated_.empty() && placed_nominated_.contains(job.job)) return;
  const model::JobSpec& spec = *job.spec;
  std::optional<AdmitVerdict> refused;
  std::optional<Charge> admitted_charge;
  const model::JobSpec* admitted_spec = nullptr;
  for (const std::string& flavor : flavors_->For(queues_, spec)) {
    AdmitVerdict verdict = queues_.CheckAdmit(entry.leaf, spec, flavor);
    if (!verdict.ok()) {
      if (!refused) refused = std::move(verdict);
      continue;
    }
    Charge charge{entry.leaf, spec.owner, spec.pipeline, ChargeAmounts(spec, flavor)};
    if (job.external) {
      CommitExternal(entry, std::move(charge));
      return;
    }
    const model::JobSpec& flavored = SpecFor(spec, flavor);
    const model::JobSpec* placed_spec = nullptr;
    auto gang = PlaceGang(flavored, /*honour_reservation=*/true, &placed_spec);
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

  if (!admitted_charge) {
    // Refused by quota or a limit. A job within its own guaranteed quota, refused because its
    // cohort lent the rest, may reclaim what was lent (not an external one: Drover preempts
    // only for jobs it places).
    if (!job.external && refused->code == AdmitVerdict::Code::kCohort &&
        TryPreempt(entry, spec,
                   Charge{entry.leaf, spec.owner, spec.pipeline, ChargeAmounts(spec, "")})) {
      return;
    }
    const bool limit = refused->code == AdmitVerdict::Code::kLimit;
    Pend(entry, Verdict{limit ? model::HoldLayer::kConcurrencyLimit : model::HoldLayer::kQuota,
                        RenderRefusal(*refused), std::nullopt, std::nullopt});
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

const std::string& Cycle::RenderRefusal(const AdmitVerdict& refused) {
  auto it = refusals_.find(refused);
  if (it == refusals_.end()) it = refusals_.emplace(refused, refused.Render()).first;
  return it->second;
}

void Cycle::PendUnplaced(const Entry& entry, const model::JobSpec& spec, std::string suffix,
                         std::optional<TimeMs> reserved_start) {
  const Prepared& prepared = PreparedFor(spec);
  internal::PlanOptions unreserved = Options(false);
  std::vector<char> windows;
  const std::string key = prepared.demand_key + ExcludeWindows(spec, unreserved, windows);
  // Held only by the reservation: it would fit on the reserved nodes.
  if (reservation_ && reservation_->job != entry.job->job && !EndsBeforeReservation(spec) &&
      !failed_.contains(key)) {
    if (PlanOn(impl_, prepared, spec, unreserved)) {
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
    failed_.insert(key);
  }
  // Held only by a nominated job's claim: it would fit on the claimed nodes.
  if (!claimed_mask_.empty() && !reserved_start) {
    internal::PlanOptions unclaimed = Options(false);
    unclaimed.excluded = nullptr;
    std::vector<char> unclaimed_windows;
    ExcludeWindows(spec, unclaimed, unclaimed_windows);
    if (PlanOn(impl_, prepared, spec, unclaimed)) {
      std::vector<std::int64_t> holders;
      for (JobId holder : waiting_) holders.push_back(holder.value());
      Pend(entry, Verdict{model::HoldLayer::kReservation,
                          fmt::format("would fit now, but only on nodes held for job{} {}, which "
                                      "preempted jobs there and start{} once they exit",
                                      holders.size() == 1 ? "" : "s", fmt::join(holders, ", "),
                                      holders.size() == 1 ? "s" : ""),
                          std::nullopt, std::nullopt});
      return;
    }
  }
  // Fair-share: jobs of other queues placed before it; other orders: every job placed before it.
  int others = 0;
  for (const auto& [leaf, count] : placed_by_leaf_) {
    if (leaf != entry.leaf || policy_.order != model::QueueOrder::kFairShare) others += count;
  }
  suffix += WindowsNote(spec);
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
  // Most blocked jobs of a large queue meet no running job that may be a victim at all: say so
  // once per cycle instead of asking the rules of every running job for each of them.
  if (!any_victim_) {
    any_victim_ =
        std::any_of(input_.running.begin(), input_.running.end(), [&](const RunningJob& running) {
          return MayBeVictim(running, input_.now, policy_.min_run_time) &&
                 !input_.stopping.contains(running.job);
        });
  }
  if (!*any_victim_) return false;
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
  std::optional<Prepared> prepared;  // on the first call of frees_enough
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
    if (!trial_queues->CheckAdmit(charge).ok()) return false;
    if (!prepared) prepared = Prepare(spec);
    internal::PlanOptions options = Options(false);
    std::vector<char> windows;
    ExcludeWindows(spec, options, windows);
    return PlanOn(ClusterStateAccess::Get(*trial), *prepared, spec, options).has_value();
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
  // Nominated from now on: later jobs of this cycle do not take what its plan needs either.
  const std::set<JobId> stopping(preemption.victims.begin(), preemption.victims.end());
  out_.preemptions.push_back(std::move(preemption));
  ClusterState claim_trial = cluster_.Clone();
  std::vector<char> claimed(impl_.nodes.size(), 0);
  if (Claim(entry, stopping, claim_trial,
            claimed_mask_.empty() ? std::vector<char>(impl_.nodes.size(), 0) : claimed_mask_,
            claimed)) {
    if (claimed_mask_.empty()) claimed_mask_.assign(impl_.nodes.size(), 0);
    for (std::size_t pos = 0; pos < claimed.size(); ++pos) claimed_mask_[pos] |= claimed[pos];
    waiting_.push_back(job.job);
    UpdateHeldMask();
  }
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
