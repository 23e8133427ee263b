// API benchmarks: the whole server path, in process (docs/benchmarks.md).
//
// Each benchmark assembles what `drover server` assembles (cli/daemons.cc): a ControlPlane over
// a SQLite store in a fresh temporary directory, and an HttpServer on 127.0.0.1, port 0. With
// DROVER_BENCH_STORE=postgres the store is instead a fresh database of a throwaway PostgreSQL
// cluster (testing::PostgresCluster; DROVER_TEST_PG_FSYNC=1 keeps its fsync on), its writes
// fenced by a leader lease as a server's on PostgreSQL are.
//
//   BM_SubmitHttp/queued:Q     8 client threads, each with its own ApiClient, POST a one-job
//                              YAML spec to /v1/jobs. There are no nodes, so every job stays
//                              queued and nothing is launched: this is the cost of parse +
//                              controller + scheduling cycle + SQLite commit + HTTP.
//                              items_per_second is submissions per second (wall clock). Q jobs
//                              are queued before the timed run (through ControlPlane::Submit),
//                              because each submission runs a scheduling cycle over the queue.
//                              (8 x 500 = 4,000 timed submissions per run.) Counters:
//                              p50/p90/p99 in ms of one POST.
//   BM_SubmitToStart           one local node with a declared 1xH100-80GB, workers supervised by
//                              drover-supervise (DROVER_SUPERVISOR), as in the server. One at a
//                              time, a 1-GPU job `command: ["true"]` is POSTed and the benchmark
//                              waits until its attempt has running_at set, then until it finishes
//                              (so the node is idle for the next one). Counters: p50/p90/p99 in ms
//                              of the client-observed time (before the POST -> running_at seen
//                              through ControlPlane::GetJob), and of the job's own record
//                              (created_at -> running_at, millisecond resolution).
//   BM_SubmitWhileRunning      issue 15's "32 clients submitting while jobs run": four local
//                              nodes of 16 CPUs (the shape of bench/slurm_side_by_side.sh), 32
//                              client threads each POSTing 25 one-job specs (1 CPU, command
//                              `true`, supervised by drover-supervise) as fast as answered, while
//                              the loop places and launches the earlier ones. Counters: p50/p90/
//                              p99 in ms of one POST (connect included for a thread's first),
//                              over all 800; then (untimed) every job is waited for.
//   BM_TrivialJobs/jobs:N      one POST of a file of N such jobs, then the time until all N have
//                              succeeded (manual time: from before the POST). Counter
//                              jobs_per_s = N / that time (a fresh server per iteration).
//   BM_Authenticate/kind:K     what every request's authentication costs (server/
//                              token_registry.h): TokenRegistry::Authenticate of a user's token
//                              among 10,000 (K=0: one SHA-256 and a hash map lookup under the
//                              registry's mutex) or of a job's token (K=1: one HMAC-SHA256).
//   BM_ForkExecTrue            the baseline: posix_spawn("/bin/true") + waitpid. Counters:
//                              p50/p90/p99 in ms of posix_spawn's return (glibc's posix_spawn
//                              returns once the child has exec'd) and of spawn + waitpid.
//
// The jobs are submitted by the identity `bench` and, as in `drover server`, run as their owner's
// Unix account when the benchmark runs as root (docs/security.md, "Jobs run as their users"),
// as the benchmark's own user otherwise. So run it as an unprivileged user (`useradd -M bench`
// once, then `runuser -u bench -- build-release/bench/api_bench ...`): as root without a `bench`
// account every launch fails.

#include <benchmark/benchmark.h>
#include <fmt/format.h>
#include <spawn.h>
#include <spdlog/spdlog.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "drover/api/client.h"
#include "drover/common/clock.h"
#include "drover/common/thread_annotations.h"
#include "drover/model/job.h"
#include "drover/server/control_plane.h"
#include "drover/server/http_server.h"
#include "drover/server/local_nodes.h"
#include "drover/server/token_registry.h"
#include "drover/store/postgres_store.h"
#include "drover/store/store.h"
#include "drover/testing/postgres_cluster.h"
#include "drover/testing/temp_dir.h"

#ifndef DROVER_SUPERVISOR
#error "DROVER_SUPERVISOR (the path of drover-supervise) must be defined by bench/CMakeLists.txt"
#endif

extern char** environ;

namespace drover::server {
namespace {

using Steady = std::chrono::steady_clock;

constexpr char kQueuedSpec[] =
    "kind: Job\n"
    "name: bench-submit\n"
    "command: [\"true\"]\n"
    "resources:\n"
    "  cpu: 100m\n"
    "  memory: 64Mi\n"
    "  gpus: 1\n";

constexpr char kTrueSpec[] =
    "kind: Job\n"
    "name: bench-true\n"
    "command: [\"true\"]\n"
    "resources:\n"
    "  cpu: 100m\n"
    "  memory: 64Mi\n"
    "  gpus: 1\n";

// One 1-CPU job running `true` (as the jobs of bench/slurm_side_by_side.sh), named {} (in a
// file of several, each job's name is its own).
constexpr char kTrivialSpec[] =
    "kind: Job\n"
    "name: {}\n"
    "command: [\"true\"]\n"
    "resources:\n"
    "  cpu: 1\n"
    "  memory: 100Mi\n";

// Four nodes of 16 CPUs and 64,000 MiB, all running their workers here (64 such jobs at once).
constexpr char kFourNodes[] =
    "nodes:\n"
    "  - {name: n1, cpu: \"16\", memory: 64000Mi}\n"
    "  - {name: n2, cpu: \"16\", memory: 64000Mi}\n"
    "  - {name: n3, cpu: \"16\", memory: 64000Mi}\n"
    "  - {name: n4, cpu: \"16\", memory: 64000Mi}\n";

double MillisSince(Steady::time_point start) {
  return std::chrono::duration<double, std::milli>(Steady::now() - start).count();
}

// The q-quantile (0..1) of `values` by nearest rank; 0 when empty.
double Quantile(std::vector<double> values, double q) {
  if (values.empty()) return 0;
  std::sort(values.begin(), values.end());
  std::size_t rank = static_cast<std::size_t>(q * static_cast<double>(values.size()) + 0.999999);
  rank = std::clamp<std::size_t>(rank, 1, values.size());
  return values[rank - 1];
}

void ReportPercentiles(benchmark::State& state, const std::string& prefix,
                       const std::vector<double>& ms) {
  state.counters[prefix + "p50_ms"] = Quantile(ms, 0.50);
  state.counters[prefix + "p90_ms"] = Quantile(ms, 0.90);
  state.counters[prefix + "p99_ms"] = Quantile(ms, 0.99);
}

// SkipWithError with a built message (benchmark 1.7 takes a const char*, which it copies).
void Skip(benchmark::State& state, const std::string& message) {
  state.SkipWithError(message.c_str());
}

// The store of a benchmark's server: SQLite in `dir`, or with DROVER_BENCH_STORE=postgres a fresh
// database of the program's PostgreSQL cluster, whose writes are fenced by a leader lease taken
// for the run, as `drover server` on PostgreSQL writes (every write checks the lease's epoch).
Result<std::unique_ptr<store::Store>> OpenBenchStore(const std::string& dir) {
  const char* kind = std::getenv("DROVER_BENCH_STORE");
  if (kind != nullptr && std::string(kind) == "postgres") {
    DROVER_ASSIGN_OR_RETURN(auto uri, testing::PostgresCluster::Shared().NewDatabase("bench"));
    return testing::OpenLeaderStore(uri, "api_bench");
  }
  return store::OpenSqliteStore(dir + "/drover.db");
}

// A control plane over its store plus its HTTP server, as `drover server` assembles them.
class Server {
 public:
  // `gpus`: empty for no node; else a declaration like "1xH100-80GB" for one local node.
  // `nodes_yaml`, if not empty: a node file (spec/node_file.h) whose nodes all run here instead.
  static std::unique_ptr<Server> Create(const std::string& gpus, std::string* error,
                                        const std::string& nodes_yaml = "") {
    auto server = std::unique_ptr<Server>(new Server());
    auto store = OpenBenchStore(server->dir_.path());
    if (!store) {
      *error = "open store: " + store.error().ToString();
      return nullptr;
    }
    server->plane_ = std::make_unique<ControlPlane>(*std::move(store), server->clock_);
    if (!gpus.empty() || !nodes_yaml.empty()) {
      LocalNodeFlags flags;
      flags.gpus = gpus;
      flags.node_name = "bench-node";
      if (!nodes_yaml.empty()) {
        flags.nodes_file = server->dir_.path() + "/nodes.yaml";
        std::FILE* file = std::fopen(flags.nodes_file.c_str(), "w");
        if (file == nullptr || std::fputs(nodes_yaml.c_str(), file) < 0 || std::fclose(file) != 0) {
          *error = "cannot write " + flags.nodes_file;
          return nullptr;
        }
      }
      auto nodes = DescribeLocalNodes(flags, "0", nullptr);
      if (!nodes) {
        *error = "DescribeLocalNodes: " + nodes.error().ToString();
        return nullptr;
      }
      Status added = AddLocalNodes(*server->plane_, *nodes, server->dir_.path(), DROVER_SUPERVISOR,
                                   /*server_url=*/"", server->clock_);
      if (!added) {
        *error = "AddLocalNodes: " + added.error().ToString();
        return nullptr;
      }
    }
    Status started = server->plane_->Start();
    if (!started) {
      *error = "ControlPlane::Start: " + started.error().ToString();
      return nullptr;
    }
    auto http = HttpServer::Start(*server->plane_, "127.0.0.1", 0);
    if (!http) {
      *error = "HttpServer::Start: " + http.error().ToString();
      return nullptr;
    }
    server->http_ = *std::move(http);
    server->url_ = fmt::format("http://127.0.0.1:{}", server->http_->port());
    auto token = server->plane_->CreateToken(model::AdminIdentity("bench"), 0,
                                             model::AdminIdentity("bench"));
    if (!token) {
      *error = "CreateToken: " + token.error().ToString();
      return nullptr;
    }
    server->token_ = token->token;
    return server;
  }

  ~Server() {
    if (http_) http_->Stop();
    if (plane_) plane_->Stop();
  }

  ControlPlane& plane() { return *plane_; }
  const std::string& url() const { return url_; }
  // A client of url() with an admin's token.
  std::unique_ptr<api::ApiClient> NewClient() const {
    auto client = std::make_unique<api::ApiClient>(url_);
    client->SetBearer(token_);
    return client;
  }

 private:
  Server() = default;

  testing::TempDir dir_{"drover-api-bench"};  // destroyed last
  SystemClock clock_;
  std::unique_ptr<ControlPlane> plane_;
  std::unique_ptr<HttpServer> http_;
  std::string url_;
  std::string token_;  // an admin's (bench)
};

// Shared between the threads of one BM_SubmitHttp run: thread 0 creates it before the timed
// loop (whose start is a barrier across threads) and destroys it after the loop's end barrier.
std::unique_ptr<Server> g_submit_server;
std::atomic<std::int64_t> g_submit_failures{0};
// Every timed POST's latency in ms, appended as each is answered (the threads' loops end
// together, so thread 0 reads them all after its loop).
Mutex g_submit_mutex;
std::vector<double> g_submit_ms GUARDED_BY(g_submit_mutex);

void BM_SubmitHttp(benchmark::State& state) {
  if (state.thread_index() == 0) {
    spdlog::set_level(spdlog::level::warn);
    std::string error;
    g_submit_server = Server::Create("", &error);
    g_submit_failures = 0;
    {
      MutexLock lock(g_submit_mutex);
      g_submit_ms.clear();
    }
    if (g_submit_server) {
      // Pre-queue jobs directly: the HTTP layer is not what is being filled in here.
      for (std::int64_t i = 0; i < state.range(0); ++i) {
        auto submitted =
            g_submit_server->plane().Submit(kQueuedSpec, {}, "", model::AdminIdentity("bench"));
        if (!submitted) {
          error = "pre-queue: " + submitted.error().ToString();
          g_submit_server.reset();
          break;
        }
      }
    }
    if (!g_submit_server) {
      std::fprintf(stderr, "BM_SubmitHttp: %s\n", error.c_str());
      std::abort();  // SkipWithError on one thread would leave the others at the barrier
    }
  }
  std::unique_ptr<api::ApiClient> client;
  std::int64_t submitted = 0;
  for (auto _ : state) {
    // The first iteration connects (keep-alive afterwards); its connect is timed, as a client
    // that reconnects per submission would pay it every time.
    if (!client) client = g_submit_server->NewClient();
    const Steady::time_point start = Steady::now();
    auto response = client->Post("/v1/jobs", kQueuedSpec, "application/yaml");
    {
      MutexLock lock(g_submit_mutex);
      g_submit_ms.push_back(MillisSince(start));
    }
    if (!response || response->status != 201) {
      ++g_submit_failures;
      continue;
    }
    ++submitted;
  }
  state.SetItemsProcessed(submitted);
  client.reset();
  if (state.thread_index() == 0) {
    if (g_submit_failures > 0) {
      Skip(state, fmt::format("{} submissions failed", g_submit_failures.load()));
    }
    store::JobFilter filter;
    std::int64_t stored =
        static_cast<std::int64_t>(g_submit_server->plane().ListJobs(filter).size());
    state.counters["jobs_in_store"] = static_cast<double>(stored);
    {
      MutexLock lock(g_submit_mutex);
      ReportPercentiles(state, "", g_submit_ms);
    }
    g_submit_server.reset();
  }
}
// 8 clients x 500 submissions each, from an empty queue, then with 2,000 jobs already queued.
// (Each submission runs a scheduling cycle over every queued job, so the rate falls as the
// queue grows; see docs/benchmarks.md.)
BENCHMARK(BM_SubmitHttp)
    ->ArgName("queued")
    ->Arg(0)
    ->Arg(2'000)
    ->Threads(8)
    ->Iterations(500)
    ->UseRealTime()
    ->Unit(benchmark::kMicrosecond);

// Waits (through WaitForChange) until `done(job)` or `timeout_ms` passes; the last job seen.
template <typename Done>
Result<model::Job> WaitForJob(ControlPlane& plane, JobId id, DurationMs timeout_ms, Done done) {
  const Steady::time_point start = Steady::now();
  std::uint64_t version = plane.version();
  while (true) {
    auto job = plane.GetJob(id);
    if (!job || done(*job)) return job;
    if (MillisSince(start) > static_cast<double>(timeout_ms)) {
      return MakeError(ErrorCode::kDeadlineExceeded,
                       fmt::format("job {} is still {} ({})", id.value(),
                                   model::JobStateName(job->state), job->status_message));
    }
    version = plane.WaitForChange(version, 50);
  }
}

void BM_SubmitToStart(benchmark::State& state) {
  spdlog::set_level(spdlog::level::warn);
  std::string error;
  std::unique_ptr<Server> server = Server::Create("1xH100-80GB", &error);
  if (!server) {
    Skip(state, "BM_SubmitToStart: " + error);
    return;
  }
  api::ApiClient client = std::move(*server->NewClient());
  std::vector<double> observed_ms;  // before the POST -> running_at seen
  std::vector<double> recorded_ms;  // created_at -> running_at, from the job's record
  std::vector<double> post_ms;      // the POST alone
  for (auto _ : state) {
    const Steady::time_point start = Steady::now();
    auto response = client.Post("/v1/jobs", kTrueSpec, "application/yaml");
    const double posted = MillisSince(start);
    if (!response || response->status != 201) {
      Skip(state,
           "submission failed: " + (response ? response->body : response.error().ToString()));
      break;
    }
    const JobId id(response->json["jobs"][0]["id"].get<std::int64_t>());
    auto running = WaitForJob(server->plane(), id, 10'000, [](const model::Job& job) {
      const model::Attempt* attempt = job.current_attempt();
      return (attempt != nullptr && attempt->running_at != 0) || model::IsTerminal(job.state);
    });
    const double seen = MillisSince(start);
    if (!running || running->current_attempt() == nullptr ||
        running->current_attempt()->running_at == 0) {
      Skip(state, "job did not start: " +
                      (running ? running->status_message : running.error().ToString()));
      break;
    }
    post_ms.push_back(posted);
    observed_ms.push_back(seen);
    recorded_ms.push_back(
        static_cast<double>(running->current_attempt()->running_at - running->created_at));

    // Untimed: let the job finish so that the node is idle for the next one.
    state.PauseTiming();
    auto finished = WaitForJob(server->plane(), id, 10'000,
                               [](const model::Job& job) { return model::IsTerminal(job.state); });
    if (!finished || finished->state != model::JobState::kSucceeded) {
      Skip(state, "job did not succeed: " +
                      (finished ? finished->status_message : finished.error().ToString()));
      break;
    }
    state.ResumeTiming();
  }
  ReportPercentiles(state, "", observed_ms);
  ReportPercentiles(state, "rec_", recorded_ms);
  state.counters["post_p50_ms"] = Quantile(post_ms, 0.50);
}
BENCHMARK(BM_SubmitToStart)->Iterations(100)->UseRealTime()->Unit(benchmark::kMillisecond);

// How many jobs of `plane` are in a terminal state, and how many of those succeeded.
std::pair<std::size_t, std::size_t> Finished(ControlPlane& plane) {
  std::size_t finished = 0;
  std::size_t succeeded = 0;
  for (const model::Job& job : plane.ListJobs(store::JobFilter{})) {
    if (!model::IsTerminal(job.state)) continue;
    ++finished;
    if (job.state == model::JobState::kSucceeded) ++succeeded;
  }
  return {finished, succeeded};
}

// Waits (through WaitForChange) until all `count` jobs of `plane` are finished or `timeout_ms`
// passes; how many succeeded.
std::size_t WaitForAllFinished(ControlPlane& plane, std::size_t count, DurationMs timeout_ms) {
  const Steady::time_point start = Steady::now();
  std::uint64_t version = plane.version();
  while (true) {
    auto [finished, succeeded] = Finished(plane);
    if (finished >= count || MillisSince(start) > static_cast<double>(timeout_ms)) {
      return succeeded;
    }
    version = plane.WaitForChange(version, 50);
  }
}

// Shared between the threads of one BM_SubmitWhileRunning run, as g_submit_server.
std::unique_ptr<Server> g_running_server;
std::mutex g_latency_mu;
std::vector<double> g_latency_ms;  // guarded by g_latency_mu
std::atomic<std::int64_t> g_running_failures{0};

void BM_SubmitWhileRunning(benchmark::State& state) {
  if (state.thread_index() == 0) {
    spdlog::set_level(spdlog::level::warn);
    std::string error;
    g_running_server = Server::Create("", &error, kFourNodes);
    if (!g_running_server) {
      std::fprintf(stderr, "BM_SubmitWhileRunning: %s\n", error.c_str());
      std::abort();  // SkipWithError on one thread would leave the others at the barrier
    }
    g_latency_ms.clear();
    g_running_failures = 0;
  }
  std::unique_ptr<api::ApiClient> client;
  for (auto _ : state) {
    const Steady::time_point start = Steady::now();
    if (!client) client = g_running_server->NewClient();
    auto response =
        client->Post("/v1/jobs", fmt::format(kTrivialSpec, "bench-trivial"), "application/yaml");
    const double ms = MillisSince(start);
    if (!response || response->status != 201) {
      ++g_running_failures;
      continue;
    }
    std::lock_guard lock(g_latency_mu);
    g_latency_ms.push_back(ms);
  }
  client.reset();
  if (state.thread_index() == 0) {
    const std::size_t submitted = g_latency_ms.size();
    ReportPercentiles(state, "", g_latency_ms);
    // Untimed: every job finishes before the server (and its runs directory) goes.
    const std::size_t succeeded = WaitForAllFinished(g_running_server->plane(), submitted, 120'000);
    state.counters["submitted"] = static_cast<double>(submitted);
    state.counters["succeeded"] = static_cast<double>(succeeded);
    if (g_running_failures > 0 || succeeded != submitted) {
      Skip(state, fmt::format("{} submissions failed, {} of {} jobs succeeded",
                              g_running_failures.load(), succeeded, submitted));
    }
    g_running_server.reset();
  }
}
// 32 clients x 25 submissions each.
BENCHMARK(BM_SubmitWhileRunning)
    ->Threads(32)
    ->Iterations(25)
    ->UseRealTime()
    ->Unit(benchmark::kMillisecond);

void BM_TrivialJobs(benchmark::State& state) {
  spdlog::set_level(spdlog::level::warn);
  const std::size_t count = static_cast<std::size_t>(state.range(0));
  std::string file;
  for (std::size_t i = 0; i < count; ++i)
    file += (i == 0 ? "" : "---\n") + fmt::format(kTrivialSpec, fmt::format("t{}", i));
  double seconds = 0;
  for (auto _ : state) {
    std::string error;
    std::unique_ptr<Server> server = Server::Create("", &error, kFourNodes);
    if (!server) {
      Skip(state, "BM_TrivialJobs: " + error);
      break;
    }
    api::ApiClient client = std::move(*server->NewClient());
    const Steady::time_point start = Steady::now();
    auto response = client.Post("/v1/jobs", file, "application/yaml");
    if (!response || response->status != 201) {
      Skip(state,
           "submission failed: " + (response ? response->body : response.error().ToString()));
      break;
    }
    const std::size_t succeeded = WaitForAllFinished(server->plane(), count, 120'000);
    const double elapsed = MillisSince(start) / 1000.0;
    if (succeeded != count) {
      Skip(state, fmt::format("{} of {} jobs succeeded", succeeded, count));
      break;
    }
    state.SetIterationTime(elapsed);
    seconds += elapsed;
  }
  if (seconds > 0) {
    state.counters["jobs_per_s"] =
        static_cast<double>(count) * static_cast<double>(state.iterations()) / seconds;
  }
}
BENCHMARK(BM_TrivialJobs)
    ->ArgName("jobs")
    ->Arg(300)
    ->Arg(1'000)
    ->Iterations(3)
    ->UseManualTime()
    ->Unit(benchmark::kMillisecond);

void BM_ForkExecTrue(benchmark::State& state) {
  char path[] = "/bin/true";
  char* argv[] = {path, nullptr};
  std::vector<double> spawn_ms;
  std::vector<double> exit_ms;
  for (auto _ : state) {
    const Steady::time_point start = Steady::now();
    pid_t pid = 0;
    if (posix_spawn(&pid, path, nullptr, nullptr, argv, environ) != 0) {
      state.SkipWithError("posix_spawn /bin/true failed");
      break;
    }
    spawn_ms.push_back(MillisSince(start));
    int status = 0;
    if (waitpid(pid, &status, 0) != pid || !WIFEXITED(status) || WEXITSTATUS(status) != 0) {
      state.SkipWithError("/bin/true did not exit 0");
      break;
    }
    exit_ms.push_back(MillisSince(start));
  }
  ReportPercentiles(state, "spawn_", spawn_ms);
  ReportPercentiles(state, "", exit_ms);
}
void BM_Authenticate(benchmark::State& state) {
  auto store = store::NewMemoryStore();
  TokenRegistry registry(*store, "bench key");
  std::string token;
  for (int i = 0; i < 10'000; ++i) {
    auto created = registry.Create(model::AdminIdentity("user" + std::to_string(i)), 0, "bench",
                                   /*now=*/1);
    if (!created) {
      state.SkipWithError(created.error().ToString().c_str());
      return;
    }
    token = created->token;
  }
  if (state.range(0) == 1) token = registry.JobToken(JobId(123'456));
  for (auto _ : state) {
    auto identity = registry.Authenticate(token, /*now=*/2);
    benchmark::DoNotOptimize(identity);
  }
}
BENCHMARK(BM_Authenticate)->ArgName("kind")->Arg(0)->Arg(1)->Unit(benchmark::kNanosecond);

BENCHMARK(BM_ForkExecTrue)->Iterations(1'000)->UseRealTime()->Unit(benchmark::kMillisecond);

}  // namespace
}  // namespace drover::server

BENCHMARK_MAIN();
