// Store write throughput: one Apply per submission (one job snapshot + one transition), the
// store's share of the submission path, into SQLite and into PostgreSQL (a throwaway cluster,
// testing::PostgresCluster; DROVER_TEST_PG_FSYNC=1 keeps its fsync on). Counters: the bytes the
// store holds per job (SQLite: the database and WAL files; PostgreSQL: its tables and indexes)
// and, for PostgreSQL, the WAL bytes written per job. See docs/benchmarks.md.

#include <benchmark/benchmark.h>
#include <unistd.h>

#include <filesystem>
#include <pqxx/pqxx>
#include <string>

#include "drover/store/postgres_store.h"
#include "drover/store/store.h"
#include "drover/testing/postgres_cluster.h"

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

// Applies one submission's batch per iteration; false (with the benchmark skipped) on error.
bool ApplySubmissions(benchmark::State& state, store::Store& store) {
  std::int64_t id = 0;
  for (auto _ : state) {
    ++id;
    store::Batch batch;
    batch.jobs.push_back(SubmittedJob(id));
    batch.transitions.push_back(
        {JobId(id), 0, model::JobState::kPending, model::JobState::kPending, id, "submitted"});
    if (!store.Apply(batch)) {
      state.SkipWithError("Apply failed");
      return false;
    }
  }
  state.SetItemsProcessed(state.iterations());
  return true;
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
  const bool ok = ApplySubmissions(state, **store);
  store->reset();  // checkpoints the WAL into the database
  if (ok) {
    std::uintmax_t bytes = 0;
    for (const auto& entry : std::filesystem::directory_iterator(dir)) bytes += entry.file_size();
    state.counters["bytes_per_job"] = static_cast<double>(bytes) / state.iterations();
  }
  std::filesystem::remove_all(dir);
}
BENCHMARK(BM_SqliteApplySubmission)->UseRealTime();

// fenced:1: the writes of a leading server on PostgreSQL, each checking the leader lease's
// epoch first (testing::OpenLeaderStore); fenced:0: unfenced, one server alone.
void BM_PostgresApplySubmission(benchmark::State& state) {
  auto uri = testing::PostgresCluster::Shared().NewDatabase("bench");
  if (!uri) {
    state.SkipWithError(uri.error().ToString().c_str());
    return;
  }
  auto store = state.range(0) != 0 ? testing::OpenLeaderStore(*uri, "store_bench")
                                   : store::OpenPostgresStore(*uri);
  if (!store) {
    state.SkipWithError(store.error().ToString().c_str());
    return;
  }
  pqxx::connection db(*uri);
  auto wal = [&] {
    pqxx::nontransaction tx(db);
    return tx.exec1("SELECT pg_current_wal_insert_lsn() - '0/0'::pg_lsn")[0].as<double>();
  };
  const double wal_before = wal();
  if (!ApplySubmissions(state, **store)) return;
  state.counters["wal_bytes_per_job"] = (wal() - wal_before) / state.iterations();
  pqxx::nontransaction tx(db);
  const double bytes =
      tx.exec1("SELECT pg_total_relation_size('jobs') + pg_total_relation_size('transitions')")[0]
          .as<double>();
  state.counters["bytes_per_job"] = bytes / state.iterations();
}
BENCHMARK(BM_PostgresApplySubmission)->ArgName("fenced")->Arg(0)->Arg(1)->UseRealTime();

}  // namespace
}  // namespace drover

BENCHMARK_MAIN();
