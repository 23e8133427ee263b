// GET /metrics' cost on a large cluster (docs/benchmarks.md, "GET /metrics").
//
//   BM_MetricsScrape   a ControlPlane over the memory store with 1,000 local nodes of 8 GPUs
//                      (fake runtimes) and 10,000 one-GPU jobs of 10 teams: 8,000 placed, 2,000
//                      waiting for a GPU. Times ControlPlane::MetricsText, the whole scrape: the
//                      gauges copied under the plane's mutex (ServerMetrics::Gather) and the text
//                      written after it is released. Counter lock_ms: the time under the mutex
//                      alone (ControlPlane::MetricsSnapshot); bytes: the exposition's size; pending
//                      and running: the jobs as the scrape saw them.

#include <benchmark/benchmark.h>
#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <chrono>
#include <memory>
#include <string>

#include "bench/bench_util.h"
#include "drover/server/control_plane.h"
#include "drover/store/store.h"
#include "drover/testing/fake_clock.h"
#include "drover/testing/fake_runtime.h"
#include "drover/testing/memory_file_system.h"

namespace drover::server {
namespace {

constexpr int kNodes = 1'000;
constexpr int kGpusPerNode = 8;
constexpr int kJobs = 10'000;

void BM_MetricsScrape(benchmark::State& state) {
  spdlog::set_level(spdlog::level::warn);
  testing::FakeClock clock;
  testing::MemoryFileSystem fs;
  ControlPlaneOptions options;
  options.run_loop = false;
  ControlPlane plane(store::NewMemoryStore(), clock, options, fs);
  for (const model::Node& node : bench::MakeNodes(kNodes, kGpusPerNode)) {
    plane.AddLocalNode(node, std::make_unique<testing::FakeRuntime>(), "/runs");
  }
  if (!plane.Start()) {
    state.SkipWithError("the plane did not start");
    return;
  }
  for (int i = 0; i < kJobs; ++i) {
    const std::string spec = fmt::format(
        "kind: Job\nname: j\nteam: team-{}\nresources: {{cpu: 1, memory: 1Gi, gpus: 1}}\n"
        "script: x\n",
        i % 10);
    if (!plane.Submit(spec, spec::ParseOptions{}, "", model::AdminIdentity("bench"))) {
      state.SkipWithError("a submission failed");
      return;
    }
  }
  plane.RunOnce();
  std::size_t bytes = 0;
  for (auto _ : state) {
    std::string text = plane.MetricsText();
    bytes = text.size();
    benchmark::DoNotOptimize(text);
  }
  state.counters["bytes"] = static_cast<double>(bytes);
  // The setup as the scrape saw it: jobs waiting and jobs holding GPUs.
  for (const control::QueueReport& queue : plane.MetricsSnapshot().queues) {
    state.counters["pending"] += queue.pending_jobs;
    state.counters["running"] += static_cast<double>(queue.status.running_jobs);
  }
  const auto start = std::chrono::steady_clock::now();
  constexpr int kGathers = 20;
  for (int i = 0; i < kGathers; ++i) benchmark::DoNotOptimize(plane.MetricsSnapshot());
  const std::chrono::duration<double, std::milli> took = std::chrono::steady_clock::now() - start;
  state.counters["lock_ms"] = took.count() / kGathers;
}
BENCHMARK(BM_MetricsScrape)->Unit(benchmark::kMillisecond)->Iterations(20);

}  // namespace
}  // namespace drover::server

BENCHMARK_MAIN();
