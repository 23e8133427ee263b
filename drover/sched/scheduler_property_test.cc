// Randomized properties of the scheduler over many seeded scenarios with exclusive, timeslice
// and MIG GPUs, racks (topology), label preferences and all three scoring policies:
//   - capacity is never over-committed: CPU, memory, whole GPUs (never shared), milli-shares
//     and share memory of timeslice GPUs, MIG instances per profile;
//   - a gang is placed whole (every worker, right shape) or not at all;
//   - every placement satisfies the job's requirements (checked by an independent oracle),
//     topology-required gangs sit in one domain, excluded nodes are never used;
//   - a job left pending really does not fit in what is free, whatever the scoring;
//   - the indexed path (RunCycle) and the scanning path (TryPlace without an index) agree, for
//     binpack, spread and fragmentation;
//   - ClusterState's free view agrees with the oracle, and releasing everything restores it.

#include <gtest/gtest.h>

#include <algorithm>
#include <cctype>
#include <map>
#include <random>
#include <set>
#include <string>
#include <vector>

#include "drover/sched/cluster_state.h"
#include "drover/sched/engine.h"
#include "drover/sched/pending_reason.h"
#include "drover/sched/placement.h"
#include "drover/sched/sched_test_util.h"
#include "drover/sched/scheduler.h"

namespace drover::sched {
namespace {

using testing::kGi;

int Uniform(std::mt19937& rng, int lo, int hi) {
  return std::uniform_int_distribution<int>(lo, hi)(rng);
}

template <typename T>
const T& Pick(std::mt19937& rng, const std::vector<T>& values) {
  return values[Uniform(rng, 0, static_cast<int>(values.size()) - 1)];
}

const std::vector<std::string> kModels = {"H100", "A100", "h100", "L4"};
const std::vector<std::vector<model::MigSlots>> kMigLayouts = {
    {{"1g.10gb", 7}}, {{"1g.10gb", 3}, {"3g.40gb", 1}}, {{"3g.40gb", 2}}};

model::Node RandomNode(std::mt19937& rng, int i) {
  model::Node node;
  node.name = NodeId("node-" + std::to_string(i));
  node.cpu_millis = 1000 * Uniform(rng, 1, 32);
  node.memory_bytes = kGi * Uniform(rng, 4, 256);
  int gpus = Uniform(rng, 0, 3) == 0 ? 0 : Uniform(rng, 1, 8);
  std::string model = Pick(rng, kModels);
  // 0-3: exclusive, 4-5: timeslice, 6: MIG, 7: mixed per GPU.
  const int kind = Uniform(rng, 0, 7);
  const std::vector<model::MigSlots>& layout = Pick(rng, kMigLayouts);
  for (int g = 0; g < gpus; ++g) {
    model::Gpu gpu;
    gpu.index = g;
    gpu.model = Uniform(rng, 0, 5) == 0 ? Pick(rng, kModels) : model;
    gpu.memory_bytes = kGi * Pick(rng, std::vector<std::int64_t>{24, 40, 80});
    gpu.topology_group = Pick(rng, std::vector<std::string>{"", "nvl0", "nvl1"});
    int mode = kind <= 3 ? 0 : kind <= 5 ? 1 : kind == 6 ? 2 : Uniform(rng, 0, 2);
    if (mode == 1) gpu.sharing = model::GpuSharing::kTimeslice;
    if (mode == 2) {
      gpu.sharing = model::GpuSharing::kMig;
      gpu.mig = layout;
    }
    node.gpus.push_back(gpu);
  }
  std::shuffle(node.gpus.begin(), node.gpus.end(), rng);  // indices need not be in order
  if (Uniform(rng, 0, 2) == 0) node.labels["pool"] = Pick(rng, std::vector<std::string>{"a", "b"});
  if (Uniform(rng, 0, 3) != 0) {
    node.labels["rack"] = Pick(rng, std::vector<std::string>{"r0", "r1", "r2"});
  }
  if (Uniform(rng, 0, 1) == 0) node.labels["zone"] = Pick(rng, std::vector<std::string>{"x", "y"});
  if (Uniform(rng, 0, 3) == 0) {
    node.taints.push_back(
        {"gpu", Pick(rng, std::vector<std::string>{"reserved", "other"}),
         Pick(rng, std::vector<model::TaintEffect>{model::TaintEffect::kNoSchedule,
                                                   model::TaintEffect::kPreferNoSchedule,
                                                   model::TaintEffect::kNoExecute})});
  }
  return node;
}

model::JobSpec RandomJob(std::mt19937& rng) {
  model::JobSpec spec;
  spec.name = "job";
  spec.workers = Uniform(rng, 1, 4);
  spec.min_workers = spec.workers;  // rigid gangs; elastic starts are the engine's tests
  model::Requirements& req = spec.requirements;
  req.per_worker.cpu_millis = 500 * Uniform(rng, 0, 16);
  req.per_worker.memory_bytes = kGi * Uniform(rng, 0, 64);
  req.same_node = Uniform(rng, 0, 2) == 0;
  // 0-3: whole GPUs or CPU only, 4-5: a timeslice share, 6: a MIG instance.
  const int kind = Uniform(rng, 0, 6);
  if (kind <= 3) {
    req.per_worker.gpus = Uniform(rng, 0, 4);
    if (Uniform(rng, 0, 3) == 0) req.gpu_memory_bytes = 40 * kGi;
  } else if (kind <= 5) {
    req.gpu_share_millis = Pick(rng, std::vector<int>{100, 250, 300, 500, 700, 1000});
    req.gpu_memory_bytes = kGi * Pick(rng, std::vector<std::int64_t>{0, 0, 10, 20, 40});
  } else {
    req.mig_profile =
        Pick(rng, std::vector<std::string>{"1g.10gb", "1G.10GB", "3g.40gb", "2g.20gb"});
  }
  if (Uniform(rng, 0, 3) == 0) req.gpu_models = {Pick(rng, kModels)};
  if (Uniform(rng, 0, 4) == 0)
    req.node_selector["pool"] = Pick(rng, std::vector<std::string>{"a", "b"});
  if (Uniform(rng, 0, 2) == 0) {
    model::Toleration t;
    t.key = "gpu";
    t.op = Uniform(rng, 0, 1) ? model::Toleration::Operator::kExists
                              : model::Toleration::Operator::kEqual;
    t.value = "reserved";
    if (Uniform(rng, 0, 1)) t.effect = model::TaintEffect::kNoSchedule;
    req.tolerations.push_back(t);
  }
  if (Uniform(rng, 0, 3) == 0) req.topology_level = "rack";
  if (Uniform(rng, 0, 3) == 0) spec.preferences.topology_level = "rack";
  if (Uniform(rng, 0, 3) == 0) {
    spec.preferences.node_labels.push_back(
        {"zone", Pick(rng, std::vector<std::string>{"x", "y"}), Uniform(rng, 1, 100)});
  }
  return spec;
}

// ---- An oracle written independently of the scheduler's code. ----

std::string LowerCase(std::string s) {
  for (char& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

enum class Kind { kWhole, kShare, kMig };

Kind KindOf(const model::Requirements& req) {
  if (req.per_worker.gpus > 0) return Kind::kWhole;
  if (req.gpu_share_millis > 0) return Kind::kShare;
  if (!req.mig_profile.empty()) return Kind::kMig;
  return Kind::kWhole;  // CPU only: no GPU
}

bool NodeAllowed(const model::Node& node, const model::Requirements& req) {
  for (const auto& [k, v] : req.node_selector) {
    if (!node.labels.contains(k) || node.labels.at(k) != v) return false;
  }
  for (const model::Taint& taint : node.taints) {
    if (taint.effect == model::TaintEffect::kPreferNoSchedule) continue;
    bool ok = false;
    for (const model::Toleration& t : req.tolerations) ok = ok || model::Tolerates(t, taint);
    if (!ok) return false;
  }
  if (!req.topology_level.empty() && !node.labels.contains(req.topology_level)) return false;
  return true;
}

int MigCount(const model::Gpu& gpu, const std::string& profile) {
  if (gpu.sharing != model::GpuSharing::kMig) return 0;
  int n = 0;
  for (const model::MigSlots& s : gpu.mig) {
    if (LowerCase(s.profile) == LowerCase(profile)) n += s.count;
  }
  return n;
}

// The GPU may serve a worker of `req` (mode, model, memory).
bool GpuAllowed(const model::Gpu& gpu, const model::Requirements& req) {
  switch (KindOf(req)) {
    case Kind::kWhole:  // exclusive, or timeslice while it serves no share
      if (gpu.sharing == model::GpuSharing::kMig) return false;
      break;
    case Kind::kShare:
      if (gpu.sharing != model::GpuSharing::kTimeslice) return false;
      break;
    case Kind::kMig:
      if (MigCount(gpu, req.mig_profile) == 0) return false;
      break;
  }
  if (gpu.memory_bytes < req.gpu_memory_bytes) return false;
  if (req.gpu_models.empty()) return true;
  for (const std::string& m : req.gpu_models) {
    if (LowerCase(m) == LowerCase(gpu.model)) return true;
  }
  return false;
}

struct GpuUsage {
  int whole = 0;  // whole-GPU allocations (at most 1)
  int millis = 0;
  std::int64_t memory = 0;
  std::map<std::string, int> mig;  // lower-case profile -> instances
  bool shared() const { return millis > 0 || memory > 0 || !mig.empty(); }
};

struct Usage {
  std::int64_t cpu = 0;
  std::int64_t memory = 0;
  std::map<int, GpuUsage> gpus;  // by GPU index
};

using UsageMap = std::map<std::string, Usage>;

void Charge(UsageMap& usage, const Placement& p, const model::Requirements& req) {
  for (const WorkerAssignment& w : p.workers) {
    Usage& u = usage[w.node.value()];
    u.cpu += req.per_worker.cpu_millis;
    u.memory += req.per_worker.memory_bytes;
    for (int g : w.gpus) {
      GpuUsage& gu = u.gpus[g];
      switch (KindOf(req)) {
        case Kind::kWhole:
          ++gu.whole;
          break;
        case Kind::kShare:
          gu.millis += std::min(req.gpu_share_millis, 1000);
          gu.memory += req.gpu_memory_bytes;
          break;
        case Kind::kMig:
          ++gu.mig[LowerCase(req.mig_profile)];
          break;
      }
    }
  }
}

// Workers of `spec` that fit on `node` given `usage` (at most `limit`).
std::int64_t WorkersThatFit(const model::Node& node, const Usage& usage, const model::JobSpec& spec,
                            std::int64_t limit) {
  const model::Requirements& req = spec.requirements;
  if (!NodeAllowed(node, req)) return 0;
  std::int64_t n = limit;
  const model::Resources& r = req.per_worker;
  std::int64_t slots = 0;
  for (const model::Gpu& gpu : node.gpus) {
    if (!GpuAllowed(gpu, req)) continue;
    auto it = usage.gpus.find(gpu.index);
    const GpuUsage none;
    const GpuUsage& gu = it == usage.gpus.end() ? none : it->second;
    switch (KindOf(req)) {
      case Kind::kWhole:
        if (gu.whole == 0 && !gu.shared()) ++slots;
        break;
      case Kind::kShare: {
        if (gu.whole > 0) break;
        std::int64_t k = (1000 - gu.millis) / std::min(req.gpu_share_millis, 1000);
        if (req.gpu_memory_bytes > 0) {
          k = std::min(k, (gpu.memory_bytes - gu.memory) / req.gpu_memory_bytes);
        }
        slots += std::max<std::int64_t>(k, 0);
        break;
      }
      case Kind::kMig: {
        if (gu.whole > 0) break;
        auto m = gu.mig.find(LowerCase(req.mig_profile));
        slots += MigCount(gpu, req.mig_profile) - (m == gu.mig.end() ? 0 : m->second);
        break;
      }
    }
  }
  if (r.gpus > 0) n = std::min<std::int64_t>(n, slots / r.gpus);
  if (KindOf(req) != Kind::kWhole) n = std::min(n, slots);
  if (r.cpu_millis > 0) n = std::min(n, (node.cpu_millis - usage.cpu) / r.cpu_millis);
  if (r.memory_bytes > 0) n = std::min(n, (node.memory_bytes - usage.memory) / r.memory_bytes);
  return std::max<std::int64_t>(n, 0);
}

bool GangFits(const std::vector<model::Node>& nodes, const UsageMap& usage,
              const model::JobSpec& spec, const std::vector<char>& excluded = {}) {
  const std::int64_t workers = spec.workers;
  const std::string& level = spec.requirements.topology_level;
  std::map<std::string, std::int64_t> domains;  // "" without topology
  for (std::size_t pos = 0; pos < nodes.size(); ++pos) {
    if (pos < excluded.size() && excluded[pos]) continue;
    const model::Node& node = nodes[pos];
    auto it = usage.find(node.name.value());
    Usage none;
    std::int64_t n = WorkersThatFit(node, it == usage.end() ? none : it->second, spec, workers);
    if (spec.requirements.same_node) {
      if (n >= workers) return true;
      continue;
    }
    if (n == 0) continue;
    std::int64_t& total = domains[level.empty() ? std::string() : node.labels.at(level)];
    if ((total += n) >= workers) return true;
  }
  return false;
}

// Checks `p` against the requirements of `spec`; `excluded` nodes must not be used.
void CheckPlacement(const Placement& p, const model::JobSpec& spec,
                    const std::map<std::string, const model::Node*>& by_name,
                    const std::set<std::string>& excluded) {
  const model::Requirements& req = spec.requirements;
  ASSERT_EQ(static_cast<int>(p.workers.size()), spec.workers);
  std::set<std::string> used_nodes;
  std::set<std::string> domains;
  for (int rank = 0; rank < static_cast<int>(p.workers.size()); ++rank) {
    const WorkerAssignment& w = p.workers[rank];
    EXPECT_EQ(w.rank, rank);
    used_nodes.insert(w.node.value());
    EXPECT_FALSE(excluded.contains(w.node.value())) << "excluded node used";
    ASSERT_TRUE(by_name.contains(w.node.value()));
    const model::Node& node = *by_name.at(w.node.value());
    EXPECT_TRUE(NodeAllowed(node, req));
    if (!req.topology_level.empty()) {
      auto label = node.labels.find(req.topology_level);
      domains.insert(label == node.labels.end() ? std::string("(none)") : label->second);
    }
    const std::size_t gpus = KindOf(req) == Kind::kWhole ? req.per_worker.gpus : 1;
    EXPECT_EQ(w.gpus.size(), gpus);
    EXPECT_TRUE(std::is_sorted(w.gpus.begin(), w.gpus.end()));
    for (int index : w.gpus) {
      auto gpu = std::find_if(node.gpus.begin(), node.gpus.end(),
                              [&](const model::Gpu& g) { return g.index == index; });
      ASSERT_NE(gpu, node.gpus.end());
      EXPECT_TRUE(GpuAllowed(*gpu, req));
    }
  }
  if (req.same_node) {
    EXPECT_EQ(used_nodes.size(), 1u);
  }
  if (!req.topology_level.empty()) {
    EXPECT_EQ(domains.size(), 1u) << "topology domain split";
  }
}

// Nothing is over-committed, and `cluster`'s free view agrees with `usage`.
void CheckUsage(const std::vector<model::Node>& nodes, const UsageMap& usage,
                const ClusterState& cluster) {
  for (const model::Node& node : nodes) {
    auto it = usage.find(node.name.value());
    const Usage none;
    const Usage& u = it == usage.end() ? none : it->second;
    EXPECT_LE(u.cpu, node.cpu_millis);
    EXPECT_LE(u.memory, node.memory_bytes);
    int free_whole = 0;
    std::vector<GpuFree> expected;
    for (const model::Gpu& gpu : node.gpus) {
      auto g = u.gpus.find(gpu.index);
      const GpuUsage unused;
      const GpuUsage& gu = g == u.gpus.end() ? unused : g->second;
      EXPECT_LE(gu.whole, 1) << "GPU shared";
      EXPECT_FALSE(gu.whole > 0 && gu.shared()) << "whole GPU also shared";
      EXPECT_LE(gu.millis, 1000) << "milli-shares over-committed";
      EXPECT_LE(gu.memory, gpu.memory_bytes) << "share memory over-committed";
      for (const auto& [profile, used] : gu.mig) {
        EXPECT_LE(used, MigCount(gpu, profile)) << "MIG instances over-committed";
      }
      GpuFree free;
      free.index = gpu.index;
      free.sharing = gpu.sharing;
      switch (gpu.sharing) {
        case model::GpuSharing::kExclusive:
          free.whole = gu.whole == 0 && !gu.shared();
          free_whole += free.whole ? 1 : 0;
          break;
        case model::GpuSharing::kTimeslice:  // idle: may be given whole; given whole: no share
          free.whole = gu.whole == 0 && !gu.shared();
          free_whole += free.whole ? 1 : 0;
          free.share_millis = gu.whole > 0 ? 0 : 1000 - gu.millis;
          free.share_memory_bytes = gpu.memory_bytes - gu.memory;
          break;
        case model::GpuSharing::kMig: {
          std::map<std::string, int> left = gu.mig;
          for (const model::MigSlots& slots : gpu.mig) {
            int& l = left[LowerCase(slots.profile)];
            int taken = std::min(l, slots.count);
            l -= taken;
            free.mig.push_back({slots.profile, slots.count - taken});
          }
          break;
        }
      }
      expected.push_back(free);
    }
    std::sort(expected.begin(), expected.end(),
              [](const GpuFree& a, const GpuFree& b) { return a.index < b.index; });
    EXPECT_EQ(
        cluster.Free(node.name),
        (model::Resources{node.cpu_millis - u.cpu, node.memory_bytes - u.memory, free_whole}));
    EXPECT_EQ(cluster.FreeByGpu(node.name), expected);
  }
}

// ---- The property test. ----

class SchedulerProperty : public ::testing::TestWithParam<int> {};

TEST_P(SchedulerProperty, HoldsOverSeededScenarios) {
  std::mt19937 rng(static_cast<unsigned>(GetParam()));
  ClusterState indexed;  // scheduled by RunCycle (indexes)
  ClusterState scanned;  // replayed with TryPlace + Allocate (no index: full scans)
  ClusterState scored;   // replayed with TryPlace under another scoring, some nodes excluded
  std::vector<model::Node> nodes;
  const int node_count = Uniform(rng, 1, 12);
  for (int i = 0; i < node_count; ++i) {
    nodes.push_back(RandomNode(rng, i));
    indexed.UpsertNode(nodes.back());
    scanned.UpsertNode(nodes.back());
    scored.UpsertNode(nodes.back());
  }
  std::map<std::string, const model::Node*> by_name;
  for (const model::Node& node : nodes) by_name[node.name.value()] = &node;

  internal::PlanOptions options;
  options.scoring = std::vector<model::Scoring>{model::Scoring::kBinpack, model::Scoring::kSpread,
                                                model::Scoring::kFragmentation}[GetParam() % 3];
  std::vector<char> excluded(nodes.size(), 0);
  std::set<std::string> excluded_names;
  if (GetParam() % 2 == 1) {
    for (std::size_t pos = 0; pos < nodes.size(); ++pos) {
      if (Uniform(rng, 0, 3) == 0) {
        excluded[pos] = 1;
        excluded_names.insert(nodes[pos].name.value());
      }
    }
    options.excluded = &excluded;
  }
  internal::WorkloadMix mix;
  if (Uniform(rng, 0, 1) == 0) {
    mix.shapes = {{1, 0, 1000, {}, 0.5}, {4, 0, 4000, {}, 0.3}, {0, 250, 500, {}, 0.2}};
    options.mix = &mix;
  }

  std::vector<model::JobSpec> specs;
  const int job_count = Uniform(rng, 1, 40);
  for (int i = 0; i < job_count; ++i) specs.push_back(RandomJob(rng));
  std::map<JobId, const model::JobSpec*> spec_of;
  std::vector<Placement> live;         // every allocation in `indexed` (and `scanned`)
  std::vector<Placement> scored_live;  // every allocation in `scored`

  for (int cycle = 0; cycle < 2; ++cycle) {
    std::vector<PendingJob> pending;
    for (int i = 0; i < job_count; ++i) {
      JobId id(cycle * 1000 + i + 1);
      pending.push_back(PendingJob{id, Uniform(rng, 0, 2) * 100, Uniform(rng, 0, 5), &specs[i]});
      spec_of[id] = &specs[i];
    }
    CycleResult result = RunCycle(indexed, pending);
    SCOPED_TRACE("seed " + std::to_string(GetParam()) + " cycle " + std::to_string(cycle));

    // Every job is decided exactly once.
    std::set<JobId> seen;
    for (const Placement& p : result.placements) EXPECT_TRUE(seen.insert(p.job).second);
    for (const auto& [job, reason] : result.pending) EXPECT_TRUE(seen.insert(job).second);
    EXPECT_EQ(seen.size(), pending.size());

    // Placements are whole, well-shaped and valid against the requirements.
    for (const Placement& p : result.placements) {
      CheckPlacement(p, *spec_of.at(p.job), by_name, {});
      live.push_back(p);
    }

    // Nothing is over-committed or shared, and ClusterState agrees with the oracle.
    UsageMap usage;
    for (const Placement& p : live) Charge(usage, p, spec_of.at(p.job)->requirements);
    CheckUsage(nodes, usage, indexed);

    // A pending job does not fit in what is left, and its reason says so.
    for (const auto& [job, reason] : result.pending) {
      const model::JobSpec& spec = *spec_of.at(job);
      EXPECT_FALSE(GangFits(nodes, usage, spec)) << reason.Render();
      EXPECT_FALSE(TryPlace(indexed, job, spec));
      EXPECT_LT(reason.fitting_workers, spec.workers);
      EXPECT_FALSE(reason.Render().empty());
      EXPECT_EQ(reason, Explain(indexed, spec));
    }

    // The scanning path makes the same decisions as the indexed one.
    std::stable_sort(pending.begin(), pending.end(), [](const PendingJob& a, const PendingJob& b) {
      if (a.priority != b.priority) return a.priority > b.priority;
      if (a.enqueued_at != b.enqueued_at) return a.enqueued_at < b.enqueued_at;
      return a.job < b.job;
    });
    std::vector<Placement> replayed;
    for (const PendingJob& job : pending) {
      auto p = TryPlace(scanned, job.job, *job.spec);
      if (!p) continue;
      ASSERT_TRUE(scanned.Allocate(*p, job.spec->requirements).has_value());
      replayed.push_back(*p);
    }
    EXPECT_EQ(replayed, result.placements);

    // Spread and fragmentation choose the same through an index as by a scan.
    for (const PendingJob& job : pending) {
      for (model::Scoring scoring : {model::Scoring::kSpread, model::Scoring::kFragmentation}) {
        internal::PlanOptions other;
        other.scoring = scoring;
        other.mix = options.mix;
        EXPECT_EQ(TryPlace(indexed, job.job, *job.spec, other),
                  TryPlace(scanned, job.job, *job.spec, other));
      }
    }

    // With this seed's scoring and excluded nodes too: topology domains come from the index's
    // DomainTable on one side and from a scan on the other.
    for (const PendingJob& job : pending) {
      EXPECT_EQ(TryPlace(indexed, job.job, *job.spec, options),
                TryPlace(scanned, job.job, *job.spec, options));
    }

    // Another scoring, with excluded nodes: the same invariants; a job it does not place does
    // not fit on the nodes that are not excluded.
    UsageMap scored_usage;
    for (const Placement& p : scored_live) Charge(scored_usage, p, spec_of.at(p.job)->requirements);
    for (const PendingJob& job : pending) {
      auto p = TryPlace(scored, job.job, *job.spec, options);
      if (!p) {
        EXPECT_FALSE(GangFits(nodes, scored_usage, *job.spec, excluded));
        continue;
      }
      CheckPlacement(*p, *job.spec, by_name, excluded_names);
      ASSERT_TRUE(scored.Allocate(*p, job.spec->requirements).has_value());
      Charge(scored_usage, *p, job.spec->requirements);
      scored_live.push_back(*p);
    }
    CheckUsage(nodes, scored_usage, scored);

    // Release a random half before the next cycle, so that indexes see releases too.
    std::shuffle(live.begin(), live.end(), rng);
    std::size_t keep = live.size() / 2;
    for (std::size_t i = keep; i < live.size(); ++i) {
      const model::Requirements& r = spec_of.at(live[i].job)->requirements;
      indexed.Release(live[i], r);
      scanned.Release(live[i], r);
    }
    live.resize(keep);
    std::shuffle(scored_live.begin(), scored_live.end(), rng);
    keep = scored_live.size() / 2;
    for (std::size_t i = keep; i < scored_live.size(); ++i) {
      scored.Release(scored_live[i], spec_of.at(scored_live[i].job)->requirements);
    }
    scored_live.resize(keep);
  }

  for (const Placement& p : live) indexed.Release(p, spec_of.at(p.job)->requirements);
  for (const Placement& p : scored_live) scored.Release(p, spec_of.at(p.job)->requirements);
  CheckUsage(nodes, {}, indexed);
  CheckUsage(nodes, {}, scored);
}

INSTANTIATE_TEST_SUITE_P(Seeds, SchedulerProperty, ::testing::Range(0, 600));

}  // namespace
}  // namespace drover::sched
