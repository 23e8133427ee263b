// Placement throughput of sched::RunCycle (docs/benchmarks.md).
//
// RunCycle is the scheduling engine, sched::RunPolicyCycle (drover/sched/engine.h), under the
// empty policy model::Policy{}: one queue "default" without quota, binpack scoring, and the
// defaults of the other settings (backfill and preemption on, with nothing running to reserve
// or preempt). So each cycle pays for what the engine does per job (queue order, admission,
// GPU flavor choice, a decision record with its summary; for jobs that do not fit, the backfill
// attempt and the verdicts), then RunCycle's conversion to placements and pending reasons.
// bench/policy_bench.cc measures the same engine under a policy with queues and quotas.
//
// Each iteration builds a fresh cluster of 5,000 nodes with 8 GPUs each (outside the timed
// region), then times one RunCycle over the pending jobs. items_per_second is placements
// (jobs placed) per second; the "workers" counter is workers placed per second; "placed" and
// "pending" are jobs per cycle.
//
//   BM_PlaceSingleGpu_5000x8  10,000 pending 1-GPU jobs, all fit.
//   BM_PlaceGang8             4,000 pending 8-worker same_node jobs of 1 GPU each, all fit.
//   BM_PlaceMixed_5000x8      20,000 pending jobs of 1, 2, 4 or 8 GPUs per worker, some with a
//                             model filter or 2 workers on pool "b"; they ask for more than
//                             the 40,000 GPUs, so many do not fit and the cycle also pays for
//                             the failed-request cache and for the pending reasons.

#include <benchmark/benchmark.h>

#include <optional>
#include <string>
#include <vector>

#include "bench/bench_util.h"
#include "drover/model/job_spec.h"
#include "drover/model/node.h"
#include "drover/sched/cluster_state.h"
#include "drover/sched/engine.h"

namespace drover::sched {
namespace {

using bench::MakeNodes;

model::JobSpec MakeSpec(int gpus, int workers, bool same_node) {
  model::JobSpec spec = bench::MakeSpec(gpus, workers);
  spec.requirements.same_node = same_node;
  return spec;
}

// Times RunCycle(fresh cluster of `nodes`, `pending`).
void RunCycles(benchmark::State& state, const std::vector<model::Node>& nodes,
               const std::vector<PendingJob>& pending, std::int64_t expect_placed) {
  std::int64_t placed = 0;
  std::int64_t workers = 0;
  std::int64_t pending_jobs = 0;
  std::optional<ClusterState> cluster;
  for (auto _ : state) {
    state.PauseTiming();
    cluster.reset();
    cluster.emplace();
    for (const model::Node& node : nodes) cluster->UpsertNode(node);
    std::vector<PendingJob> jobs = pending;
    state.ResumeTiming();

    CycleResult result = RunCycle(*cluster, std::move(jobs));

    state.PauseTiming();
    if (expect_placed >= 0 &&
        static_cast<std::int64_t>(result.placements.size()) != expect_placed) {
      state.SkipWithError("unexpected number of placements");
      break;
    }
    placed += static_cast<std::int64_t>(result.placements.size());
    pending_jobs += static_cast<std::int64_t>(result.pending.size());
    for (const Placement& p : result.placements)
      workers += static_cast<std::int64_t>(p.workers.size());
    benchmark::DoNotOptimize(result);
    state.ResumeTiming();
  }
  state.SetItemsProcessed(placed);
  state.counters["workers"] =
      benchmark::Counter(static_cast<double>(workers), benchmark::Counter::kIsRate);
  state.counters["placed"] =
      benchmark::Counter(static_cast<double>(placed), benchmark::Counter::kAvgIterations);
  state.counters["pending"] =
      benchmark::Counter(static_cast<double>(pending_jobs), benchmark::Counter::kAvgIterations);
}

void BM_PlaceSingleGpu_5000x8(benchmark::State& state) {
  const std::vector<model::Node> nodes = MakeNodes(5'000, 8);
  const model::JobSpec spec = MakeSpec(1, 1, false);
  std::vector<PendingJob> pending;
  for (int i = 0; i < 10'000; ++i) pending.push_back({JobId(i + 1), 0, i, &spec});
  RunCycles(state, nodes, pending, 10'000);
}
BENCHMARK(BM_PlaceSingleGpu_5000x8)->Unit(benchmark::kMillisecond);

void BM_PlaceGang8(benchmark::State& state) {
  const std::vector<model::Node> nodes = MakeNodes(5'000, 8);
  const model::JobSpec spec = MakeSpec(1, 8, true);
  std::vector<PendingJob> pending;
  for (int i = 0; i < 4'000; ++i) pending.push_back({JobId(i + 1), 0, i, &spec});
  RunCycles(state, nodes, pending, 4'000);
}
BENCHMARK(BM_PlaceGang8)->Unit(benchmark::kMillisecond);

void BM_PlaceMixed_5000x8(benchmark::State& state) {
  const std::vector<model::Node> nodes = MakeNodes(5'000, 8);
  std::vector<model::JobSpec> specs;
  for (int gpus : {1, 2, 4, 8}) {
    specs.push_back(MakeSpec(gpus, 1, false));
    model::JobSpec h100 = MakeSpec(gpus, 1, false);
    h100.requirements.gpu_models = {"H100"};
    specs.push_back(h100);
    model::JobSpec pool = MakeSpec(gpus, 2, false);
    pool.requirements.node_selector = {{"pool", "b"}};
    specs.push_back(pool);
  }
  const std::vector<PendingJob> pending = bench::RandomMix(specs, 20'000);
  RunCycles(state, nodes, pending, -1);
}
BENCHMARK(BM_PlaceMixed_5000x8)->Unit(benchmark::kMillisecond);

}  // namespace
}  // namespace drover::sched

BENCHMARK_MAIN();
