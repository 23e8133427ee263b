// Randomized properties of the scheduler over many seeded scenarios:
//   - capacity is never over-committed and GPUs are never shared;
//   - a gang is placed whole (every worker, right shape) or not at all;
//   - every placement satisfies the job's requirements (checked by an independent oracle);
//   - a job left pending really does not fit in what the cycle left free;
//   - the indexed path (RunCycle) and the scanning path (TryPlace without an index) agree;
//   - releasing every placement restores the cluster.

#include <gtest/gtest.h>

#include <algorithm>
#include <cctype>
#include <map>
#include <random>
#include <set>
#include <string>
#include <vector>

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

model::Node RandomNode(std::mt19937& rng, int i) {
  model::Node node;
  node.name = NodeId("node-" + std::to_string(i));
  node.cpu_millis = 1000 * Uniform(rng, 1, 32);
  node.memory_bytes = kGi * Uniform(rng, 4, 256);
  int gpus = Uniform(rng, 0, 3) == 0 ? 0 : Uniform(rng, 1, 8);
  std::string model = Pick(rng, kModels);
  for (int g = 0; g < gpus; ++g) {
    model::Gpu gpu;
    gpu.index = g;
    gpu.model = Uniform(rng, 0, 5) == 0 ? Pick(rng, kModels) : model;
    gpu.memory_bytes = kGi * Pick(rng, std::vector<std::int64_t>{24, 40, 80});
    gpu.topology_group = Pick(rng, std::vector<std::string>{"", "nvl0", "nvl1"});
    node.gpus.push_back(gpu);
  }
  std::shuffle(node.gpus.begin(), node.gpus.end(), rng);  // indices need not be in order
  if (Uniform(rng, 0, 2) == 0) node.labels["pool"] = Pick(rng, std::vector<std::string>{"a", "b"});
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
  spec.requirements.per_worker.gpus = Uniform(rng, 0, 4);
  spec.requirements.per_worker.cpu_millis = 500 * Uniform(rng, 0, 16);
  spec.requirements.per_worker.memory_bytes = kGi * Uniform(rng, 0, 64);
  spec.requirements.same_node = Uniform(rng, 0, 2) == 0;
  if (Uniform(rng, 0, 3) == 0) spec.requirements.gpu_models = {Pick(rng, kModels)};
  if (Uniform(rng, 0, 3) == 0) spec.requirements.gpu_memory_bytes = 40 * kGi;
  if (Uniform(rng, 0, 4) == 0) {
    spec.requirements.node_selector["pool"] = Pick(rng, std::vector<std::string>{"a", "b"});
  }
  if (Uniform(rng, 0, 2) == 0) {
    model::Toleration t;
    t.key = "gpu";
    t.op = Uniform(rng, 0, 1) ? model::Toleration::Operator::kExists
                              : model::Toleration::Operator::kEqual;
    t.value = "reserved";
    if (Uniform(rng, 0, 1)) t.effect = model::TaintEffect::kNoSchedule;
    spec.requirements.tolerations.push_back(t);
  }
  return spec;
}

// ---- An oracle written independently of the scheduler's code. ----

std::string LowerCase(std::string s) {
  for (char& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
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
  return true;
}

bool GpuAllowed(const model::Gpu& gpu, const model::Requirements& req) {
  if (gpu.memory_bytes < req.gpu_memory_bytes) return false;
  if (req.gpu_models.empty()) return true;
  for (const std::string& m : req.gpu_models) {
    if (LowerCase(m) == LowerCase(gpu.model)) return true;
  }
  return false;
}

struct Usage {
  std::int64_t cpu = 0;
  std::int64_t memory = 0;
  std::set<int> gpus;
};

// Workers of `spec` that fit on `node` given `usage`.
std::int64_t WorkersThatFit(const model::Node& node, const Usage& usage, const model::JobSpec& spec,
                            std::int64_t limit) {
  const model::Requirements& req = spec.requirements;
  if (!NodeAllowed(node, req)) return 0;
  std::int64_t free_matching = 0;
  for (const model::Gpu& gpu : node.gpus) {
    if (!usage.gpus.contains(gpu.index) && GpuAllowed(gpu, req)) ++free_matching;
  }
  std::int64_t n = limit;
  const model::Resources& r = req.per_worker;
  if (r.gpus > 0) n = std::min(n, free_matching / r.gpus);
  if (r.cpu_millis > 0) n = std::min(n, (node.cpu_millis - usage.cpu) / r.cpu_millis);
  if (r.memory_bytes > 0) n = std::min(n, (node.memory_bytes - usage.memory) / r.memory_bytes);
  return std::max<std::int64_t>(n, 0);
}

bool GangFits(const std::vector<model::Node>& nodes, const std::map<std::string, Usage>& usage,
              const model::JobSpec& spec) {
  const std::int64_t workers = spec.workers;
  std::int64_t total = 0;
  for (const model::Node& node : nodes) {
    auto it = usage.find(node.name.value());
    Usage none;
    std::int64_t n = WorkersThatFit(node, it == usage.end() ? none : it->second, spec, workers);
    if (spec.requirements.same_node ? n >= workers : (total += n) >= workers) return true;
  }
  return false;
}

// ---- The property test. ----

class SchedulerProperty : public ::testing::TestWithParam<int> {};

TEST_P(SchedulerProperty, HoldsOverSeededScenarios) {
  std::mt19937 rng(static_cast<unsigned>(GetParam()));
  ClusterState indexed;  // scheduled by RunCycle (indexes)
  ClusterState scanned;  // replayed with TryPlace + Allocate (no index: full scans)
  std::vector<model::Node> nodes;
  const int node_count = Uniform(rng, 1, 12);
  for (int i = 0; i < node_count; ++i) {
    nodes.push_back(RandomNode(rng, i));
    indexed.UpsertNode(nodes.back());
    scanned.UpsertNode(nodes.back());
  }
  std::map<std::string, const model::Node*> by_name;
  for (const model::Node& node : nodes) by_name[node.name.value()] = &node;

  std::vector<model::JobSpec> specs;
  const int job_count = Uniform(rng, 1, 40);
  for (int i = 0; i < job_count; ++i) specs.push_back(RandomJob(rng));
  std::map<JobId, const model::JobSpec*> spec_of;
  std::vector<Placement> live;  // every allocation, both cycles

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
      const model::JobSpec& spec = *spec_of.at(p.job);
      const model::Requirements& req = spec.requirements;
      ASSERT_EQ(static_cast<int>(p.workers.size()), spec.workers);
      std::set<std::string> used_nodes;
      for (int rank = 0; rank < static_cast<int>(p.workers.size()); ++rank) {
        const WorkerAssignment& w = p.workers[rank];
        EXPECT_EQ(w.rank, rank);
        used_nodes.insert(w.node.value());
        ASSERT_TRUE(by_name.contains(w.node.value()));
        const model::Node& node = *by_name.at(w.node.value());
        EXPECT_TRUE(NodeAllowed(node, req));
        EXPECT_EQ(static_cast<int>(w.gpus.size()), req.per_worker.gpus);
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
      live.push_back(p);
    }

    // Nothing is over-committed or shared, and ClusterState agrees with the oracle.
    std::map<std::string, Usage> usage;
    for (const Placement& p : live) {
      const model::Resources& r = spec_of.at(p.job)->requirements.per_worker;
      for (const WorkerAssignment& w : p.workers) {
        Usage& u = usage[w.node.value()];
        u.cpu += r.cpu_millis;
        u.memory += r.memory_bytes;
        for (int g : w.gpus) EXPECT_TRUE(u.gpus.insert(g).second) << "GPU shared";
      }
    }
    for (const model::Node& node : nodes) {
      const Usage& u = usage[node.name.value()];
      EXPECT_LE(u.cpu, node.cpu_millis);
      EXPECT_LE(u.memory, node.memory_bytes);
      model::Resources expected{node.cpu_millis - u.cpu, node.memory_bytes - u.memory,
                                static_cast<int>(node.gpus.size() - u.gpus.size())};
      EXPECT_EQ(indexed.Free(node.name), expected);
    }

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
      ASSERT_TRUE(scanned.Allocate(*p, job.spec->requirements.per_worker).has_value());
      replayed.push_back(*p);
    }
    EXPECT_EQ(replayed, result.placements);

    // Release a random half before the next cycle, so that indexes see releases too.
    std::shuffle(live.begin(), live.end(), rng);
    std::size_t keep = live.size() / 2;
    for (std::size_t i = keep; i < live.size(); ++i) {
      const model::Resources& r = spec_of.at(live[i].job)->requirements.per_worker;
      indexed.Release(live[i], r);
      scanned.Release(live[i], r);
    }
    live.resize(keep);
  }

  for (const Placement& p : live) indexed.Release(p, spec_of.at(p.job)->requirements.per_worker);
  for (const model::Node& node : nodes) {
    EXPECT_EQ(indexed.Free(node.name), (model::Resources{node.cpu_millis, node.memory_bytes,
                                                         static_cast<int>(node.gpus.size())}));
  }
}

INSTANTIATE_TEST_SUITE_P(Seeds, SchedulerProperty, ::testing::Range(0, 300));

}  // namespace
}  // namespace drover::sched
