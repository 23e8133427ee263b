// Store write throughput: one Apply per submission (one job snapshot + one transition), the
// store's share of the submission path. See docs/benchmarks.md.

#include <benchmark/benchmark.h>
#include <unistd.h>

#include <filesystem>
#include <string>

#include "drover/store/store.h"

namespace drover {
namespace {

model::Job SubmittedJob(std::int64_t id) {
  model::Job job;
  job.id = JobId(id);
  job.spec.name = "job-" + std::to_string(id);
  job.spec.owner = "bench";
  job.spec.command = {"true"};
  job.spec.requirements.per_worker = {1000, 1LL << 30, 1};
  job.created_at = 1'700'000'000'000 + id;
  return job;
}

void BM_SqliteApplySubmission(benchmark::State& state) {
  std::string dir =
      (std::filesystem::temp_directory_path() / ("drover-store-bench-" + std::to_string(getpid())))
          .string();
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  auto store = store::OpenSqliteStore(dir + "/drover.db");
  if (!store) {
    state.SkipWithError(store.error().ToString().c_str());
    return;
  }
  std::int64_t id = 0;
  for (auto _ : state) {
    ++id;
    store::Batch batch;
    batch.jobs.push_back(SubmittedJob(id));
    batch.transitions.push_back(
        {JobId(id), 0, model::JobState::kPending, model::JobState::kPending, id, "submitted"});
    if (!(*store)->Apply(batch)) {
      state.SkipWithError("Apply failed");
      break;
    }
  }
  state.SetItemsProcessed(state.iterations());
  store->reset();
  std::filesystem::remove_all(dir);
}
BENCHMARK(BM_SqliteApplySubmission)->UseRealTime();

}  // namespace
}  // namespace drover

BENCHMARK_MAIN();
