// The usage sampler's costs (docs/benchmarks.md, "Usage sampler"): one GPU turn at 8 fake GPUs
// (the fake libnvidia-ml, scripted), one process turn over N workers' trees read from the real
// /proc, the server's ingest of one 10 s batch, and the store's bytes per bucket. Run:
//   DROVER_FAKE_NVML=build/lib/agent/libdrover_fake_nvml.so build/bench/sampler_bench

#include <benchmark/benchmark.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>

#include "drover/agent/gpu/nvml.h"
#include "drover/agent/proc_tree.h"
#include "drover/agent/sampler.h"
#include "drover/server/usage_recorder.h"
#include "drover/testing/fake_clock.h"
#include "drover/testing/temp_dir.h"

namespace drover {
namespace {

// 8 GPUs, each with two processes, over 60 steps; with `gpm`, every GPU supports GPM and has
// GPM metrics scripted at every step.
std::unique_ptr<agent::NvmlSampler> OpenEightGpus(const testing::TempDir& dir, bool gpm) {
  const std::string script = dir.Sub("script");
  std::ofstream out(script);
  out << "gpus 8\n";
  for (int step = 0; step < 60; ++step) {
    for (int gpu = 0; gpu < 8; ++gpu) {
      out << "gpu " << step << " " << gpu << " " << (step * 7 + gpu) % 101 << " " << (1 << 30)
          << " 300000 " << step * 300000 << "\n";
      out << "proc " << step << " " << gpu << " " << 1000 + gpu << " 50 1000\n";
      out << "proc " << step << " " << gpu << " " << 2000 + gpu << " 10 1000\n";
      if (gpm) out << "gpm " << step << " " << gpu << " 70 35 12.5 40\n";
    }
  }
  out.close();
  setenv("DROVER_FAKE_NVML_SCRIPT", script.c_str(), 1);
  const char* library = std::getenv("DROVER_FAKE_NVML");
  auto nvml = agent::NvmlSampler::Open(library ? library : "libdrover_fake_nvml.so");
  if (!nvml) {
    std::fprintf(stderr, "%s (set DROVER_FAKE_NVML)\n", nvml.error().ToString().c_str());
    std::exit(1);
  }
  return *std::move(nvml);
}

// One GPU turn: 8 GPUs read and attributed (what the sampler does every second); with
// state.range(0) = 1 each GPU also takes a GPM sample and reads four GPM metrics.
void BM_GpuTurn(benchmark::State& state) {
  testing::TempDir dir;
  testing::FakeClock clock;
  std::vector<std::string> uuids;
  for (int i = 0; i < 8; ++i) uuids.push_back("GPU-fake-" + std::to_string(i));
  std::vector<agent::LocalRuntime::RunningWorker> workers;
  for (int i = 0; i < 8; ++i) workers.push_back({{JobId(i + 1), 1, 0}, getpid(), {i}});
  agent::UsageSampler::Options options;
  options.process_interval_ms = 0;
  agent::UsageSampler sampler(
      NodeId("n"), options, OpenEightGpus(dir, state.range(0) == 1), uuids, [&] { return workers; },
      [](model::UsageBatch) {}, clock);
  std::int64_t now = 1;
  for (auto _ : state) {
    now += 1'000;
    sampler.RunOnce(now);
  }
}
BENCHMARK(BM_GpuTurn)->ArgName("gpm")->Arg(0)->Arg(1);

// One process turn: a scan of /proc and the trees of state.range(0) workers (every 5 s).
void BM_ProcessTurn(benchmark::State& state) {
  agent::ProcessTreeReader reader;
  std::map<model::WorkerKey, pid_t> roots;
  for (int i = 0; i < state.range(0); ++i) roots[{JobId(i + 1), 1, 0}] = getpid();
  for (auto _ : state) {
    std::map<std::int64_t, model::WorkerKey> pids;
    benchmark::DoNotOptimize(reader.Sample(roots, pids));
  }
}
BENCHMARK(BM_ProcessTurn)->Arg(8);

// The server's ingest of one 10 s batch of an attempt holding state.range(0) GPUs (SQLite), and
// the bytes the store grows by per GPU-hour.
void BM_IngestBatch(benchmark::State& state) {
  testing::TempDir dir;
  auto store = store::OpenSqliteStore(dir.Sub("drover.db")).value();
  server::UsageRecorder recorder(*store);
  const model::WorkerKey worker{JobId(1), 1, 0};
  const int gpus = static_cast<int>(state.range(0));
  TimeMs at = 1'700'000'000'000;
  std::int64_t samples = 0;
  for (auto _ : state) {
    model::UsageBatch batch;
    batch.node = NodeId("n");
    for (int s = 0; s < 10; ++s, at += 1'000) {
      model::UsageSnapshot snapshot;
      snapshot.at = at;
      for (int g = 0; g < gpus; ++g) {
        model::GpuSample gpu;
        gpu.index = g;
        gpu.uuid = "GPU-" + std::to_string(g);
        gpu.utilization_pct = (s * 13 + g) % 101;
        gpu.memory_used_bytes = std::int64_t{g} << 30;
        gpu.power_mw = 300'000;
        gpu.energy_mj = at;
        gpu.worker = worker;
        snapshot.gpus.push_back(gpu);
      }
      batch.snapshots.push_back(snapshot);
      samples += gpus;
    }
    benchmark::DoNotOptimize(recorder.Record(batch.node, batch));
  }
  state.counters["samples"] =
      benchmark::Counter(static_cast<double>(samples), benchmark::Counter::kIsRate);
  store.reset();
  std::uintmax_t bytes = 0;
  for (const auto& entry : std::filesystem::directory_iterator(dir.path())) {
    bytes += entry.file_size();
  }
  // Each iteration is 10 s of the attempt: gpus x 10 GPU-seconds.
  const double gpu_hours = static_cast<double>(state.iterations()) * gpus * 10.0 / 3600.0;
  state.counters["bytes_per_gpu_hour"] = static_cast<double>(bytes) / gpu_hours;
}
BENCHMARK(BM_IngestBatch)->Arg(1)->Arg(8)->Iterations(3600);  // 10 hours of one attempt

}  // namespace
}  // namespace drover

BENCHMARK_MAIN();
