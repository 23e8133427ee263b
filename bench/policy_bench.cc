// The scheduling policy at scale: sched::RunPolicyCycle with queues, quotas, fair share,
// backfill and topology (docs/benchmarks.md).
//
// Each iteration builds a fresh cluster and queue tree outside the timed region, then times one
// cycle (no running jobs: the cluster starts empty). items_per_second is jobs placed per second;
// "workers" is workers placed per second; "placed" is jobs placed per cycle and
// "pending_<layer>" counts the jobs a cycle leaves pending by the layer of their verdict
// (engine.h: quota, fair share, node fit, topology, ...).
//
//   BM_PolicySingleGpu_5000x8   20,000 pending 1-GPU jobs in 8 leaf queues with quotas on
//                               5,000 nodes x 8 GPUs: sustained single-GPU placements. Each
//                               leaf has 1/8 of the 40,000 GPUs as nominal quota (5,000) and
//                               gets 2,500 jobs: all 20,000 are admitted and fit. Scoring
//                               binpack, set explicitly.
//   BM_PolicySingleGpuFragmentation_5000x8  the same under scoring fragmentation (FGD with
//                               the CPU term, the default).
//   BM_PolicyGang8Rack_5000x8   2,000 pending 8-worker gangs of 1 GPU each that must sit in
//                               one rack (topology_level "rack", 20 nodes per rack: 250 racks
//                               of 160 GPUs, room for 5,000 such gangs): all fit.
//   BM_PolicyGang8Block_5000x8  400 pending 8-worker gangs of 8 GPUs each within one block
//                               (32 nodes): 64-GPU topology-constrained jobs, 8 whole nodes of
//                               one block each. 5,000 nodes make 156 blocks of 32 (4 gangs
//                               each) and one of 8 (1 gang): room for 625, so all 400 fit, and
//                               each leaf's 50 gangs (3,200 GPUs) stay within its quota.
//   BM_PolicyMixed50k_5000x8    50,000 pending jobs of mixed shapes (1/2/4/8 GPUs, gangs of 4
//                               within a rack, H100-only variants) under quotas with borrowing.
//                               They ask for about 375,000 GPUs of the 40,000, so about 5,300
//                               are placed and the rest get verdicts (mostly quota: the leaves'
//                               nominals add up to the cluster): the cycle also pays for
//                               admission refusals, the backfill attempt and the explanations.
//   BM_PendingJobMemory         heap bytes per pending job held by the Controller (JobSpec,
//                               Job, attempt, indexes), 50,000 jobs.

#include <benchmark/benchmark.h>
#include <malloc.h>

#include <algorithm>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "bench/bench_util.h"
#include "drover/control/controller.h"
#include "drover/model/hold_layer.h"
#include "drover/model/job_spec.h"
#include "drover/model/node.h"
#include "drover/model/policy.h"
#include "drover/sched/engine.h"

namespace drover::sched {
namespace {

std::vector<model::Node> MakeNodes(int count) { return bench::MakeNodes(count, 8); }

// org -> 4 teams -> 2 queues each; each leaf gets 1/8 of the cluster's GPUs as nominal quota and
// may borrow the rest.
model::Policy MakePolicy(std::int64_t cluster_gpus) {
  model::Policy policy;
  model::QueueConfig org;
  org.name = "org";
  for (int t = 0; t < 4; ++t) {
    model::QueueConfig team;
    team.name = "team-" + std::to_string(t);
    for (int q = 0; q < 2; ++q) {
      model::QueueConfig leaf;
      leaf.name = team.name + "-q" + std::to_string(q);
      leaf.nominal["gpu"] = cluster_gpus * 1000 / 8;
      team.children.push_back(leaf);
    }
    org.children.push_back(team);
  }
  policy.queues = {org};
  return policy;
}

model::JobSpec MakeSpec(int gpus, int workers, const std::string& queue) {
  model::JobSpec spec = bench::MakeSpec(gpus, workers);
  spec.queue = queue;
  return spec;
}

std::string LeafName(int i) {
  return "team-" + std::to_string(i % 4) + "-q" + std::to_string(i / 4 % 2);
}

void RunCycles(benchmark::State& state, const std::vector<model::Node>& nodes,
               const model::Policy& policy, const std::vector<PendingJob>& pending,
               std::int64_t expect_placed) {
  std::int64_t placed = 0;
  std::int64_t workers = 0;
  for (auto _ : state) {
    state.PauseTiming();
    std::optional<ClusterState> cluster;
    cluster.emplace();
    for (const model::Node& node : nodes) cluster->UpsertNode(node);
    QueueTree queues = *QueueTree::Create(policy);
    CycleInput input;
    input.now = 1'000'000;
    input.pending = pending;
    state.ResumeTiming();

    CycleOutput out = RunPolicyCycle(policy, queues, *cluster, input, std::nullopt);

    state.PauseTiming();
    if (expect_placed >= 0 && static_cast<std::int64_t>(out.placed.size()) != expect_placed) {
      state.SkipWithError(("placed " + std::to_string(out.placed.size()) + ", expected " +
                           std::to_string(expect_placed))
                              .c_str());
      break;
    }
    placed += static_cast<std::int64_t>(out.placed.size());
    for (const PlacedJob& job : out.placed) {
      workers += static_cast<std::int64_t>(job.placement.workers.size());
    }
    // Deterministic: every iteration decides the same, so the last one's split stands for all.
    std::map<std::string, int> layers;
    for (const auto& [job, verdict] : out.pending) {
      ++layers[std::string(model::kHoldLayerNames.Name(verdict.layer))];
    }
    for (const auto& [layer, count] : layers) {
      std::string name = "pending_" + layer;
      std::replace(name.begin(), name.end(), ' ', '_');
      state.counters[name] = static_cast<double>(count);
    }
    benchmark::DoNotOptimize(out);
    cluster.reset();
    state.ResumeTiming();
  }
  state.SetItemsProcessed(placed);
  state.counters["workers"] =
      benchmark::Counter(static_cast<double>(workers), benchmark::Counter::kIsRate);
  state.counters["placed"] =
      benchmark::Counter(static_cast<double>(placed), benchmark::Counter::kAvgIterations);
}

// BM_PolicySingleGpu_5000x8 under `scoring`.
void RunSingleGpu(benchmark::State& state, model::Scoring scoring) {
  const auto nodes = MakeNodes(5'000);
  model::Policy policy = MakePolicy(40'000);
  policy.scoring = scoring;
  std::vector<model::JobSpec> specs;
  for (int q = 0; q < 8; ++q) specs.push_back(MakeSpec(1, 1, LeafName(q)));
  std::vector<PendingJob> pending;
  for (int i = 0; i < 20'000; ++i) pending.push_back({JobId(i + 1), 0, i, &specs[i % 8]});
  RunCycles(state, nodes, policy, pending, 20'000);
}

void BM_PolicySingleGpu_5000x8(benchmark::State& state) {
  RunSingleGpu(state, model::Scoring::kBinpack);
}
BENCHMARK(BM_PolicySingleGpu_5000x8)->Unit(benchmark::kMillisecond);

void BM_PolicySingleGpuFragmentation_5000x8(benchmark::State& state) {
  RunSingleGpu(state, model::Scoring::kFragmentation);
}
BENCHMARK(BM_PolicySingleGpuFragmentation_5000x8)->Unit(benchmark::kMillisecond);

// `count` gangs of 8 workers x `gpus` GPUs that must sit within one domain of `level`, spread
// over the 8 leaves; all must be placed.
void RunTopologyGangs(benchmark::State& state, int gpus, const std::string& level, int count) {
  const auto nodes = MakeNodes(5'000);
  const model::Policy policy = MakePolicy(40'000);
  std::vector<model::JobSpec> specs;
  for (int q = 0; q < 8; ++q) {
    model::JobSpec spec = MakeSpec(gpus, 8, LeafName(q));
    spec.requirements.topology_level = level;
    specs.push_back(spec);
  }
  std::vector<PendingJob> pending;
  for (int i = 0; i < count; ++i) pending.push_back({JobId(i + 1), 0, i, &specs[i % 8]});
  RunCycles(state, nodes, policy, pending, count);
}

void BM_PolicyGang8Rack_5000x8(benchmark::State& state) {
  RunTopologyGangs(state, 1, "rack", 2'000);
}
BENCHMARK(BM_PolicyGang8Rack_5000x8)->Unit(benchmark::kMillisecond);

void BM_PolicyGang8Block_5000x8(benchmark::State& state) {
  RunTopologyGangs(state, 8, "block", 400);
}
BENCHMARK(BM_PolicyGang8Block_5000x8)->Unit(benchmark::kMillisecond);

void BM_PolicyMixed50k_5000x8(benchmark::State& state) {
  const auto nodes = MakeNodes(5'000);
  const model::Policy policy = MakePolicy(40'000);
  std::vector<model::JobSpec> specs;
  for (int q = 0; q < 8; ++q) {
    for (int gpus : {1, 2, 4, 8}) {
      model::JobSpec plain = MakeSpec(gpus, 1, LeafName(q));
      plain.timeout = 3'600'000;
      specs.push_back(plain);
      model::JobSpec h100 = MakeSpec(gpus, 1, LeafName(q));
      h100.requirements.gpu_models = {"H100"};
      specs.push_back(h100);
      model::JobSpec gang = MakeSpec(gpus, 4, LeafName(q));
      gang.requirements.topology_level = "rack";
      specs.push_back(gang);
    }
  }
  const std::vector<PendingJob> pending = bench::RandomMix(specs, 50'000);
  RunCycles(state, nodes, policy, pending, -1);
}
BENCHMARK(BM_PolicyMixed50k_5000x8)->Unit(benchmark::kMillisecond);

void BM_PendingJobMemory(benchmark::State& state) {
  constexpr int kJobs = 50'000;
  for (auto _ : state) {
    const std::size_t before = mallinfo2().uordblks;
    auto controller = std::make_unique<control::Controller>();
    {
      control::Step step;  // persisted and dropped by a driver; not part of what a job costs
      std::vector<model::JobSpec> specs;
      for (int i = 0; i < kJobs; ++i) {
        model::JobSpec spec = MakeSpec(1 + i % 8, 1, "default");
        spec.name = "job-" + std::to_string(i);
        spec.owner = "alice";
        spec.command = {"python", "train.py", "--epochs", "3"};
        specs.push_back(std::move(spec));
      }
      (void)controller->Submit(std::move(specs), "", "alice", 0, step);
      control::Step schedule;
      controller->Schedule(0, schedule);  // every job becomes ready (no nodes: all stay pending)
    }
    const std::size_t after = mallinfo2().uordblks;
    state.counters["bytes_per_pending_job"] =
        static_cast<double>(after - before) / static_cast<double>(kJobs);
    benchmark::DoNotOptimize(controller);
  }
}
BENCHMARK(BM_PendingJobMemory)->Unit(benchmark::kMillisecond)->Iterations(1);

}  // namespace
}  // namespace drover::sched

BENCHMARK_MAIN();
