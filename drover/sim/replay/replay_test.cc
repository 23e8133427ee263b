#include "drover/sim/replay/replay.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <limits>
#include <map>
#include <optional>
#include <set>
#include <sstream>

#include "drover/sim/trace/loaders.h"
#include "drover/sim/trace/synthetic.h"
#include "drover/store/store.h"

namespace drover::sim {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

constexpr std::int64_t kGi = std::int64_t{1} << 30;

model::Node MakeNode(const std::string& name, int gpus) {
  model::Node node;
  node.name = NodeId(name);
  node.cpu_millis = 64'000;
  node.memory_bytes = 512 * kGi;
  for (int i = 0; i < gpus; ++i) {
    model::Gpu gpu;
    gpu.index = i;
    gpu.uuid = "GPU-" + name + "-" + std::to_string(i);
    gpu.model = "H100";
    gpu.memory_bytes = 80 * kGi;
    node.gpus.push_back(gpu);
  }
  return node;
}

// A job of `workers` x `gpus` GPUs running `duration_s`; its time limit is its duration (what
// SJF and EASY backfill see) unless `timeout_s` says otherwise (0: none).
TraceJob MakeJob(const std::string& name, double submit_s, double duration_s, int gpus,
                 int workers = 1, double timeout_s = -1) {
  TraceJob job;
  job.name = name;
  job.submit = static_cast<TimeMs>(submit_s * 1000);
  job.duration = static_cast<DurationMs>(duration_s * 1000);
  job.user = "alice";
  job.spec.name = name;
  job.spec.requirements.per_worker.gpus = gpus;
  job.spec.requirements.per_worker.cpu_millis = 1000;
  job.spec.requirements.per_worker.memory_bytes = kGi;
  job.spec.workers = workers;
  if (timeout_s < 0) timeout_s = duration_s;
  if (timeout_s > 0) job.spec.timeout = static_cast<DurationMs>(timeout_s * 1000);
  return job;
}

nlohmann::json Replay(const Trace& trace, const std::string& policy_name,
                      ReplayOptions options = {}) {
  auto policy = NamedReplayPolicy(policy_name, trace);
  EXPECT_TRUE(policy) << policy.error().ToString();
  options.policy = *policy;
  options.policy_name = policy_name;
  options.timing = false;
  auto report = RunReplay(trace, options);
  EXPECT_TRUE(report) << report.error().ToString();
  return report ? *report : nlohmann::json();
}

const nlohmann::json& Row(const nlohmann::json& report, const std::string& name) {
  for (const nlohmann::json& row : report.at("job_rows")) {
    if (row.at("name") == name) return row;
  }
  static const nlohmann::json kNone;
  ADD_FAILURE() << "no row for " << name;
  return kNone;
}

// 2 nodes x 4 GPUs, 5 jobs (see the test for the schedule worked out by hand).
Trace FiveJobs() {
  Trace trace;
  trace.nodes = {MakeNode("n1", 4), MakeNode("n2", 4)};
  trace.jobs = {MakeJob("a", 0, 100, 4), MakeJob("b", 0, 50, 4), MakeJob("c", 10, 30, 4, 2),
                MakeJob("d", 20, 20, 2), MakeJob("e", 20, 200, 2)};
  return trace;
}

TEST(Replay, FifoWithEasyBackfillMatchesTheScheduleWorkedOutByHand) {
  // t=0: a and b take a node each. t=10: c (2 x 4 GPUs) waits for both; it reserves them for
  // t=100, when a's limit ends. t=20: d and e wait. t=50: b ends; d (ends by 70 <= 100)
  // backfills onto n2, e (200 s) may not. t=100: c starts; t=130: c ends and e starts.
  const nlohmann::json report = Replay(FiveJobs(), "fifo");
  EXPECT_EQ(report.at("jobs"), 5);
  EXPECT_EQ(report.at("finished"), 5);
  EXPECT_EQ(report.at("unfinished"), 0);
  EXPECT_EQ(report.at("total_gpus"), 8);
  struct Expected {
    const char* name;
    double start, end, queue, jct;
  };
  for (const Expected& e : {Expected{"a", 0, 100, 0, 100}, Expected{"b", 0, 50, 0, 50},
                            Expected{"c", 100, 130, 90, 120}, Expected{"d", 50, 70, 30, 50},
                            Expected{"e", 130, 330, 110, 310}}) {
    const nlohmann::json& row = Row(report, e.name);
    EXPECT_EQ(row.at("start_s"), e.start) << e.name;
    EXPECT_EQ(row.at("end_s"), e.end) << e.name;
    EXPECT_EQ(row.at("queue_s"), e.queue) << e.name;
    EXPECT_EQ(row.at("jct_s"), e.jct) << e.name;
  }
  EXPECT_EQ(report.at("makespan_seconds"), 330);
  // JCTs 50 50 100 120 310; queue times 0 0 30 90 110.
  EXPECT_EQ(report.at("jct_seconds"),
            (nlohmann::json{{"mean", 126}, {"p50", 100}, {"p95", 310}, {"p99", 310}}));
  EXPECT_EQ(report.at("queue_seconds"),
            (nlohmann::json{{"mean", 46}, {"p50", 30}, {"p95", 110}, {"p99", 110}}));
  EXPECT_EQ(report.at("lifecycle_seconds").at("queue"), 46);
  EXPECT_EQ(report.at("lifecycle_seconds").at("run"), 80);  // (100+50+30+20+200) / 5
  // GPU-seconds: 400 + 200 + 240 + 40 + 400 = 1280.
  EXPECT_DOUBLE_EQ(report.at("gpu_hours_allocated").get<double>(), 0.355556);
  EXPECT_EQ(report.at("preemptions"), 0);
  const nlohmann::json& allocation = report.at("gpu_allocation_over_time");
  EXPECT_LE(allocation.size(), 500u);
  EXPECT_EQ(allocation.front(), (nlohmann::json{0, 100}));
  EXPECT_EQ(allocation.back(), (nlohmann::json{330, 0}));
}

TEST(Replay, SjfRunsTheShortJobFirst) {
  Trace trace;
  trace.nodes = {MakeNode("n1", 4)};
  trace.jobs = {MakeJob("x", 0, 100, 4), MakeJob("long", 1, 300, 4), MakeJob("short", 2, 10, 4)};
  const nlohmann::json fifo = Replay(trace, "fifo");
  EXPECT_EQ(Row(fifo, "long").at("start_s"), 100);
  EXPECT_EQ(Row(fifo, "short").at("start_s"), 400);
  EXPECT_EQ(fifo.at("makespan_seconds"), 410);
  const nlohmann::json sjf = Replay(trace, "sjf");
  EXPECT_EQ(Row(sjf, "short").at("start_s"), 100);
  EXPECT_EQ(Row(sjf, "short").at("end_s"), 110);
  EXPECT_EQ(Row(sjf, "long").at("start_s"), 110);
  EXPECT_EQ(Row(sjf, "long").at("end_s"), 410);
  // Mean JCT: fifo (100 + 399 + 408) / 3, sjf (100 + 409 + 108) / 3.
  EXPECT_EQ(fifo.at("jct_seconds").at("mean"), 302.333);
  EXPECT_EQ(sjf.at("jct_seconds").at("mean"), 205.667);
}

// 1 node x 4 GPUs: `low` (interruptible, 1000 s) runs from 0; `high` (100 s) arrives at 500 and
// preempts it; `low` runs again from 600.
Trace PreemptionTrace(double checkpoint_interval_s) {
  Trace trace;
  trace.nodes = {MakeNode("n1", 4)};
  TraceJob low = MakeJob("low", 0, 1000, 4, 1, 0);
  low.spec.priority_class = "low";
  low.spec.interruptible = true;
  low.checkpoint_interval = static_cast<DurationMs>(checkpoint_interval_s * 1000);
  TraceJob high = MakeJob("high", 500, 100, 4, 1, 0);
  high.spec.priority_class = "high";
  trace.jobs = {low, high};
  return trace;
}

TEST(Replay, PreemptionWithCheckpointsLosesOnlyTheWorkSinceTheLastOne) {
  // Checkpoints at 300 (and 600, never reached): preempted at 500, it loses 200 s x 4 GPUs and
  // resumes at 600 with 700 s of work left.
  const nlohmann::json report = Replay(PreemptionTrace(300), "fair-share");
  EXPECT_EQ(report.at("finished"), 2);
  EXPECT_EQ(report.at("preemptions"), 1);
  EXPECT_DOUBLE_EQ(report.at("lost_gpu_hours").get<double>(), 0.222222);  // 800 GPU-s
  EXPECT_EQ(Row(report, "high").at("start_s"), 500);
  EXPECT_EQ(Row(report, "high").at("end_s"), 600);
  const nlohmann::json& low = Row(report, "low");
  EXPECT_EQ(low.at("preemptions"), 1);
  EXPECT_EQ(low.at("end_s"), 1300);
  EXPECT_EQ(low.at("queue_s"), 100);  // requeued from 500 to 600
  // 4 GPUs x (500 + 100 + 700) s.
  EXPECT_DOUBLE_EQ(report.at("gpu_hours_allocated").get<double>(), 1.444444);
}

TEST(Replay, PreemptionWithoutCheckpointsRestartsFromZero) {
  const nlohmann::json report = Replay(PreemptionTrace(0), "fair-share");
  EXPECT_EQ(report.at("preemptions"), 1);
  EXPECT_DOUBLE_EQ(report.at("lost_gpu_hours").get<double>(), 0.555556);  // 2000 GPU-s
  EXPECT_EQ(Row(report, "low").at("end_s"), 1600);
  EXPECT_DOUBLE_EQ(report.at("gpu_hours_allocated").get<double>(), 1.777778);
}

TEST(Replay, LasPreemptsAJobThatAttainedMoreService) {
  // By 2000 s `old` has held 4 GPUs for 8000 GPU-s, past the last default threshold (7200):
  // `fresh` (queue 0) preempts it; `old` has no checkpoint and runs again from zero at 2100.
  Trace trace;
  trace.nodes = {MakeNode("n1", 4)};
  TraceJob old = MakeJob("old", 0, 10'000, 4, 1, 0);
  old.spec.interruptible = true;
  trace.jobs = {old, MakeJob("fresh", 2000, 100, 4, 1, 0)};
  const nlohmann::json report = Replay(trace, "las");
  EXPECT_EQ(report.at("preemptions"), 1);
  EXPECT_EQ(Row(report, "fresh").at("start_s"), 2000);
  EXPECT_EQ(Row(report, "old").at("end_s"), 12'100);
  EXPECT_DOUBLE_EQ(report.at("lost_gpu_hours").get<double>(), 2.222222);  // 8000 GPU-s
}

TEST(Replay, JobTooLargeForTheClusterEndsUnfinished) {
  Trace trace;
  trace.nodes = {MakeNode("n1", 4), MakeNode("n2", 4)};
  trace.jobs = {MakeJob("huge", 0, 10, 16), MakeJob("wide", 0, 10, 4, 3),
                MakeJob("fits", 5, 10, 4)};
  const nlohmann::json report = Replay(trace, "fifo");
  EXPECT_EQ(report.at("finished"), 1);
  EXPECT_EQ(report.at("unfinished"), 2);
  EXPECT_EQ(Row(report, "fits").at("end_s"), 15);
  EXPECT_TRUE(Row(report, "huge").at("end_s").is_null());
  EXPECT_TRUE(Row(report, "huge").at("start_s").is_null());
}

TEST(Replay, TimeLimitEndsTheJobTimedOut) {
  Trace trace;
  trace.nodes = {MakeNode("n1", 4)};
  trace.jobs = {MakeJob("slow", 0, 100, 1, 2, 40), MakeJob("exact", 0, 30, 1, 1, 30)};
  ReplayOptions options;
  options.event_log = true;
  const nlohmann::json report = Replay(trace, "fifo", options);
  EXPECT_EQ(report.at("finished"), 2);
  EXPECT_EQ(report.at("timed_out"), 1);
  EXPECT_EQ(Row(report, "slow").at("end_s"), 40);
  EXPECT_THAT(report.at("log").get<std::vector<std::string>>(),
              ElementsAre("0.000 start slow#1 n1[0] n1[1]", "0.000 start exact#1 n1[2]",
                          "30.000 end exact succeeded", "40.000 end slow timed_out"));
}

TEST(Replay, StartupDelayComesBeforeTheWork) {
  Trace trace;
  trace.nodes = {MakeNode("n1", 4)};
  trace.jobs = {MakeJob("a", 0, 100, 2, 2)};
  ReplayOptions options;
  options.startup_delay = 5'000;
  const nlohmann::json report = Replay(trace, "fifo", options);
  EXPECT_EQ(Row(report, "a").at("end_s"), 105);
  EXPECT_EQ(report.at("lifecycle_seconds").at("startup"), 5);
  EXPECT_EQ(report.at("lifecycle_seconds").at("run"), 100);
}

TEST(Replay, PassIntervalHoldsEventsForTheNextPass) {
  // Passes at 0 (a starts) and 25 (b, submitted at 1, starts though a ended at 10).
  Trace trace;
  trace.nodes = {MakeNode("n1", 4)};
  trace.jobs = {MakeJob("a", 0, 10, 4), MakeJob("b", 1, 10, 4)};
  ReplayOptions options;
  options.pass_interval = 25'000;
  const nlohmann::json report = Replay(trace, "fifo", options);
  EXPECT_EQ(Row(report, "a").at("end_s"), 10);
  EXPECT_EQ(Row(report, "b").at("start_s"), 25);
  EXPECT_EQ(Row(report, "b").at("end_s"), 35);
  EXPECT_EQ(Row(report, "b").at("queue_s"), 24);
  EXPECT_EQ(report.at("passes"), 3);  // 0, 25, and 50 (b's end)
}

TEST(Replay, EmptyTraceReportsNothing) {
  const nlohmann::json report = Replay(Trace{}, "las");
  EXPECT_EQ(report.at("jobs"), 0);
  EXPECT_EQ(report.at("makespan_seconds"), 0);
}

TEST(Replay, RejectsBadOptions) {
  ReplayOptions options;
  options.tick = 0;
  auto report = RunReplay(FiveJobs(), options);
  ASSERT_FALSE(report);
  EXPECT_EQ(report.error().code, ErrorCode::kInvalidArgument);
}

TEST(Replay, JobsOfAQueueThePolicyLacksAreRejected) {
  Trace trace = FiveJobs();
  trace.jobs[1].spec.queue = "elsewhere";
  ReplayOptions options;
  options.timing = false;  // the default policy: only "default"
  auto report = RunReplay(trace, options);
  ASSERT_TRUE(report) << report.error().ToString();
  EXPECT_EQ(report->at("rejected"), 1);
  EXPECT_EQ(report->at("unfinished"), 1);
  EXPECT_EQ(report->at("finished"), 4);
}

TEST(Replay, RefusesAPolicyThatHandsAQueueToAnExternalExecutor) {
  // The leaf inherits its parent's executor: the message names the leaf, whose jobs it is.
  model::QueueConfig leaf;
  leaf.name = "hpc-batch";
  model::QueueConfig parent;
  parent.name = "hpc";
  parent.executor = model::ExecutorConfig{};
  parent.executor->kind = model::ExecutorKind::kSlurm;
  parent.children.push_back(leaf);
  ReplayOptions options;
  options.timing = false;
  options.policy.queues.push_back(parent);
  auto report = RunReplay(FiveJobs(), options);
  ASSERT_FALSE(report);
  EXPECT_EQ(report.error().code, ErrorCode::kInvalidArgument);
  EXPECT_THAT(report.error().message,
              testing::HasSubstr("queue 'hpc-batch' hands its jobs to slurm"));

  // A leaf that sets local under an external parent runs here: the policy is accepted.
  options.policy.queues[0].children[0].executor = model::ExecutorConfig{};
  options.policy.queues[0].children[0].name = "default";
  auto local = RunReplay(FiveJobs(), options);
  ASSERT_TRUE(local) << local.error().ToString();
  EXPECT_EQ(local->at("finished"), 5);
}

TEST(Replay, JobsWithOutputsPublishAndSucceed) {
  Trace trace = FiveJobs();
  trace.jobs[0].spec.outputs.push_back(model::OutputSpec{"model", "/nonexistent/model.pt"});
  trace.jobs[0].spec.outputs.push_back(model::OutputSpec{"accuracy", ""});
  ReplayOptions options;
  options.event_log = true;
  const nlohmann::json report = Replay(trace, "fifo", options);
  EXPECT_EQ(report.at("finished"), 5);
  EXPECT_THAT(report.at("log").get<std::vector<std::string>>(),
              testing::Contains(testing::EndsWith(" end a succeeded")));
}

TEST(NamedReplayPolicy, OneQueuePerTraceQueue) {
  Trace trace = FiveJobs();
  trace.jobs[0].spec.queue = "zeta";
  trace.jobs[1].spec.queue = "alpha";
  auto policy = NamedReplayPolicy("las", trace);
  ASSERT_TRUE(policy) << policy.error().ToString();
  EXPECT_EQ(policy->order, model::QueueOrder::kLas);
  ASSERT_EQ(policy->queues.size(), 3u);
  EXPECT_EQ(policy->queues[0].name, "alpha");
  EXPECT_EQ(policy->queues[1].name, "default");
  EXPECT_EQ(policy->queues[2].name, "zeta");
  EXPECT_TRUE(policy->queues[0].nominal.empty());
  auto bad = NamedReplayPolicy("lottery", trace);
  ASSERT_FALSE(bad);
  EXPECT_EQ(bad.error().code, ErrorCode::kInvalidArgument);
}

// The distinct queues of `trace`'s jobs, in name order.
std::vector<std::string> NamedQueues(const Trace& trace) {
  std::set<std::string> queues;
  for (const TraceJob& job : trace.jobs) queues.insert(job.spec.queue);
  return {queues.begin(), queues.end()};
}

ClusterSummary TestSummary() {
  ClusterSummary summary;
  summary.id = "test";
  summary.avg_run_seconds = 3600;
  summary.median_run_seconds = 600;
  summary.max_run_seconds = 3 * 86'400;
  summary.avg_gpus = 4;
  summary.median_gpus = 1;
  summary.max_gpus = 64;
  return summary;
}

// Finding 7 of issue 17: the README's replay must show queueing. The README runs Philly's
// published summary (AcmeTrace's acme_cluster_summary.csv, row Philly, copied here so the test
// needs no data files) on 32 nodes x 8 GPUs, 4,000 jobs at load 2; this is the same trace shape
// at a quarter of the size, quick enough for a unit test. Were the load or the cluster to drift
// to where nothing waits, fifo and las would come out identical again.
TEST(Replay, LoadedPhillyReplayQueuesAndTheOrdersDiffer) {
  ClusterSummary philly;
  philly.id = "Philly";
  philly.avg_run_seconds = 18006.055;
  philly.median_run_seconds = 874;
  philly.max_run_seconds = 4240676;
  philly.avg_gpus = 1.928;
  philly.median_gpus = 1;
  philly.max_gpus = 128;
  SyntheticOptions synthetic;
  synthetic.nodes = 8;
  synthetic.gpus_per_node = 8;
  synthetic.jobs = 600;
  synthetic.load = 2;
  synthetic.seed = 42;
  const Trace trace = MakeSyntheticTrace(philly, synthetic);
  std::map<std::string, nlohmann::json> reports;
  for (const char* policy : {"fifo", "sjf", "las"}) {
    reports[policy] = Replay(trace, policy);
    EXPECT_EQ(reports[policy].at("unfinished"), 0) << policy;
  }
  const auto mean = [&](const char* policy, const char* what) {
    return reports[policy].at(what).at("mean").get<double>();
  };
  // Substantial queueing under fifo: more than ten minutes on average, in every queue.
  EXPECT_GT(mean("fifo", "queue_seconds"), 600);
  for (const auto& [queue, stats] : reports["fifo"].at("per_queue").items()) {
    EXPECT_GT(stats.at("queue_seconds").at("mean").get<double>(), 0) << queue;
  }
  // The orders differ: las preempts and reorders, sjf runs short jobs first.
  EXPECT_NE(mean("fifo", "jct_seconds"), mean("las", "jct_seconds"));
  EXPECT_GT(reports["las"].at("preemptions").get<int>(), 0);
  EXPECT_LT(mean("sjf", "jct_seconds"), mean("fifo", "jct_seconds"));
  EXPECT_LT(mean("sjf", "queue_seconds"), mean("fifo", "queue_seconds"));
}

TEST(Replay, ReportsGpuHoursByResultAndTheTrace) {
  ReplayOptions options;
  options.trace_name = "five jobs";
  const nlohmann::json report = Replay(FiveJobs(), "fifo", options);
  EXPECT_EQ(report.at("trace"), "five jobs");
  EXPECT_EQ(report.at("gpus_per_node"), 4);
  const nlohmann::json& by_result = report.at("gpu_hours_by_result");
  // a 4x100 + b 4x50 + c 8x30 + d 2x20 + e 2x200 GPU-seconds, all succeeded.
  const double hours = (400.0 + 200 + 240 + 40 + 400) / 3600;
  EXPECT_NEAR(by_result.at("succeeded").get<double>(), hours, 1e-6);
  for (const char* other :
       {"failed", "timed_out", "cancelled", "unfinished", "preemption_lost", "retry_lost"}) {
    EXPECT_EQ(by_result.at(other).get<double>(), 0) << other;
  }
  EXPECT_NEAR(report.at("gpu_hours_per_result").get<double>(), hours / 5, 1e-6);
}

TEST(Replay, IdenticalInputsGiveIdenticalJson) {
  SyntheticOptions synthetic;
  synthetic.nodes = 16;
  synthetic.jobs = 1500;
  synthetic.load = 1.2;
  const Trace trace = MakeSyntheticTrace(TestSummary(), synthetic);
  for (const char* policy : {"fair-share", "las", "sjf"}) {
    ReplayOptions options;
    options.event_log = true;
    const std::string first = Replay(trace, policy, options).dump();
    const std::string second = Replay(trace, policy, options).dump();
    EXPECT_EQ(first, second) << policy;
    EXPECT_THAT(first, HasSubstr("\"unfinished\":0")) << policy;
  }
}

// The 1M-job replay streams its synthetic trace (SyntheticJobStream) instead of holding it, and
// the replay forgets each job once it ends: neither may change a byte of the report.
TEST(Replay, AStreamedSyntheticTraceReportsAsTheHeldOne) {
  SyntheticOptions synthetic;
  synthetic.nodes = 16;
  synthetic.jobs = 1500;
  synthetic.load = 1.2;
  const Trace trace = MakeSyntheticTrace(TestSummary(), synthetic);
  for (const char* policy : {"fifo", "las"}) {
    ReplayOptions options;
    options.event_log = true;
    options.timing = false;
    options.policy_name = policy;
    auto named = NamedReplayPolicy(policy, trace);
    ASSERT_TRUE(named);
    options.policy = *named;
    SyntheticJobStream stream(TestSummary(), synthetic);
    EXPECT_EQ(stream.Queues(), NamedQueues(trace));
    EXPECT_EQ(stream.SizeHint(), trace.jobs.size());
    EXPECT_EQ(TraceJobStream(trace.jobs).SizeHint(), trace.jobs.size());
    auto streamed = RunReplay(MakeSyntheticNodes(synthetic), stream, options);
    ASSERT_TRUE(streamed) << streamed.error().ToString();
    EXPECT_EQ(streamed->dump(), Replay(trace, policy, options).dump()) << policy;
    EXPECT_EQ(streamed->at("finished"), 1500) << policy;
  }
}

// A stream whose jobs are not in submission order.
class BackwardsStream final : public JobStream {
 public:
  explicit BackwardsStream(std::vector<TraceJob> jobs) : jobs_(std::move(jobs)) {}
  std::optional<TraceJob> Next() override {
    if (jobs_.empty()) return std::nullopt;
    TraceJob job = std::move(jobs_.back());
    jobs_.pop_back();
    return job;
  }
  const std::vector<std::string>& Queues() const override { return queues_; }

 private:
  std::vector<TraceJob> jobs_;
  std::vector<std::string> queues_ = {"default"};
};

TEST(Replay, AStreamOutOfSubmissionOrderIsRefused) {
  const Trace trace = FiveJobs();
  BackwardsStream stream(trace.jobs);
  ReplayOptions options;
  options.policy.queues.push_back({});
  options.policy.queues.back().name = "default";
  auto report = RunReplay(trace.nodes, stream, options);
  ASSERT_FALSE(report);
  EXPECT_EQ(report.error().code, ErrorCode::kInvalidArgument);
  EXPECT_THAT(report.error().message, HasSubstr("before the job ahead of it"));
}

// A stream that claims more jobs than it gives (as `--jobs-count` may ask for more than memory
// holds): the replay reserves its tables up to a bound only, and reports what was given.
class OverclaimingStream final : public JobStream {
 public:
  explicit OverclaimingStream(const std::vector<TraceJob>& jobs) : jobs_(jobs) {}
  std::optional<TraceJob> Next() override { return jobs_.Next(); }
  const std::vector<std::string>& Queues() const override { return jobs_.Queues(); }
  std::size_t SizeHint() const override { return std::numeric_limits<std::size_t>::max() / 4; }

 private:
  TraceJobStream jobs_;
};

TEST(Replay, AnOverclaimedJobCountReservesWithinItsBound) {
  const Trace trace = FiveJobs();
  auto policy = NamedReplayPolicy("fifo", trace);
  ASSERT_TRUE(policy);
  ReplayOptions options;
  options.policy = *policy;
  options.policy_name = "fifo";
  options.timing = false;
  OverclaimingStream stream(trace.jobs);
  auto report = RunReplay(trace.nodes, stream, options);
  ASSERT_TRUE(report) << report.error().ToString();
  EXPECT_EQ(report->dump(), Replay(trace, "fifo").dump());
}

TEST(CompareQueueTimes, PerTeamBeforeAfterAndDifference) {
  Trace trace = FiveJobs();
  for (TraceJob& job : trace.jobs) job.spec.team = job.name == "e" ? "vision" : "";
  const nlohmann::json fifo = Replay(trace, "fifo");
  const nlohmann::json sjf = Replay(trace, "sjf");
  const nlohmann::json compared = CompareQueueTimes(fifo, sjf);
  const nlohmann::json& vision = compared.at("teams").at("vision");
  EXPECT_EQ(vision.at("before").at("jobs"), 1);
  EXPECT_EQ(vision.at("before").at("mean"), 110);
  EXPECT_EQ(vision.at("difference").at("mean").get<double>(),
            vision.at("after").at("mean").get<double>() - 110);
  EXPECT_TRUE(compared.at("teams").contains("default"));  // no team: the queue
  // Without rows, per queue.
  ReplayOptions options;
  options.job_detail = false;
  const nlohmann::json lean = Replay(trace, "fifo", options);
  const nlohmann::json by_queue = CompareQueueTimes(lean, lean);
  EXPECT_EQ(by_queue.at("teams").at("default").at("before").at("jobs"), 5);
  EXPECT_EQ(by_queue.at("teams").at("default").at("difference").at("mean"), 0);
}

// A job record as a server would store it: one attempt per (placed, running, finished,
// checkpoint) in seconds, worker 0 on `node` with `gpus`.
model::Job StoredJob(std::int64_t id, const std::string& name, TimeMs created,
                     std::vector<std::array<TimeMs, 4>> attempts, const std::string& node,
                     std::vector<int> gpus) {
  model::Job job;
  job.id = JobId(id);
  job.spec.name = name;
  job.spec.owner = "alice";
  job.spec.command = {"true"};
  job.spec.requirements.per_worker.gpus = static_cast<int>(gpus.size());
  job.spec.requirements.per_worker.cpu_millis = 2000;
  job.spec.requirements.per_worker.memory_bytes = kGi;
  job.created_at = created;
  job.state = model::JobState::kSucceeded;
  for (std::size_t i = 0; i < attempts.size(); ++i) {
    model::Attempt attempt;
    attempt.number = static_cast<int>(i) + 1;
    attempt.ready_at = created;
    attempt.placed_at = attempts[i][0];
    attempt.running_at = attempts[i][1];
    attempt.finished_at = attempts[i][2];
    attempt.last_checkpoint_at = attempts[i][3];
    attempt.resumed = i > 0;
    model::Worker worker;
    worker.node = NodeId(node);
    worker.gpus = gpus;
    worker.state = model::WorkerState::kExited;
    attempt.workers.push_back(worker);
    job.attempts.push_back(attempt);
  }
  job.finished_at = attempts.back()[2];
  return job;
}

TEST(TraceFromDataDir, RebuildsNodesFromPlacementsAndWorkFromAttempts) {
  const std::filesystem::path dir =
      std::filesystem::temp_directory_path() /
      ("drover_replay_test_" + std::to_string(static_cast<long>(::getpid())));
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  {
    auto store = store::OpenSqliteStore((dir / "drover.db").string());
    ASSERT_TRUE(store) << store.error().ToString();
    store::Batch batch;
    const TimeMs t0 = 1'700'000'000'000;
    batch.jobs.push_back(StoredJob(1, "train", t0 + 1'000,
                                   {{t0 + 2'000, t0 + 3'000, t0 + 63'000, 0}}, "gpu-a", {0, 1}));
    // Preempted at 40 s after a checkpoint at 30 s (20 s of work kept), then 50 s more.
    batch.jobs.push_back(StoredJob(2, "train", t0 + 5'000,
                                   {{t0 + 5'000, t0 + 10'000, t0 + 40'000, t0 + 30'000},
                                    {t0 + 40'000, t0 + 41'000, t0 + 91'000, 0}},
                                   "gpu-a", {2, 3}));
    batch.jobs.push_back(StoredJob(3, "late", t0 + 100'000,
                                   {{t0 + 100'000, t0 + 101'000, t0 + 102'000, 0}}, "gpu-b", {7}));
    ASSERT_TRUE((*store)->Apply(batch));
    auto trace = TraceFromDataDir(dir.string(), t0, t0 + 60'000);
    ASSERT_TRUE(trace) << trace.error().ToString();
    ASSERT_EQ(trace->nodes.size(), 2u);
    EXPECT_EQ(trace->nodes[0].name, NodeId("gpu-a"));
    EXPECT_EQ(trace->nodes[0].gpus.size(), 4u);
    EXPECT_EQ(trace->nodes[0].cpu_millis, 4000);  // both jobs at once, 2 cores each
    EXPECT_EQ(trace->nodes[1].gpus.size(), 8u);
    ASSERT_EQ(trace->jobs.size(), 2u);
    EXPECT_EQ(trace->jobs[0].name, "train-1");
    EXPECT_EQ(trace->jobs[0].submit, 1'000);
    EXPECT_EQ(trace->jobs[0].duration, 60'000);
    EXPECT_EQ(trace->jobs[1].name, "train-2");
    EXPECT_EQ(trace->jobs[1].duration, 70'000);
    EXPECT_EQ(trace->jobs[1].user, "alice");
  }
  auto missing = TraceFromDataDir((dir / "nothing").string(), 0, 1);
  ASSERT_FALSE(missing);
  EXPECT_EQ(missing.error().code, ErrorCode::kNotFound);
  std::filesystem::remove_all(dir);
}

// Golden scenarios: tests/scenarios/<name>/{nodes.yaml, jobs.csv, expected.txt}. expected.txt
// starts with comment lines ('#'); "# policy: NAME" names the policy (NamedReplayPolicy). The
// rest is the replay's event log (who starts when, on which node and GPUs; preemptions; ends)
// and a few totals. To regenerate after an intended change of behaviour, run
//   DROVER_UPDATE_SCENARIOS=1 build/lib/sim/replay/drover_sim_replay_test
//   --gtest_filter='Scenarios.*'
// and review the diff of tests/scenarios/ before committing it.
std::string ScenarioOutput(const nlohmann::json& report) {
  std::ostringstream out;
  for (const std::string& line : report.at("log").get<std::vector<std::string>>()) {
    out << line << "\n";
  }
  for (const char* key : {"finished", "unfinished", "makespan_seconds", "preemptions",
                          "lost_gpu_hours", "gpu_hours_allocated"}) {
    out << key << " " << report.at(key).dump() << "\n";
  }
  return out.str();
}

TEST(Scenarios, ReplayMatchesExpectedDecisions) {
  const std::filesystem::path root = std::filesystem::path(DROVER_SOURCE_DIR) / "tests/scenarios";
  const bool update = std::getenv("DROVER_UPDATE_SCENARIOS") != nullptr;
  int count = 0;
  std::vector<std::filesystem::path> dirs;
  for (const auto& entry : std::filesystem::directory_iterator(root)) {
    if (entry.is_directory()) dirs.push_back(entry.path());
  }
  std::sort(dirs.begin(), dirs.end());
  for (const std::filesystem::path& dir : dirs) {
    SCOPED_TRACE(dir.filename().string());
    ++count;
    std::ifstream expected_file(dir / "expected.txt");
    ASSERT_TRUE(expected_file) << "missing expected.txt";
    std::string header, expected, line, policy_name;
    while (std::getline(expected_file, line)) {
      if (line.rfind("#", 0) == 0) {
        header += line + "\n";
        if (line.rfind("# policy: ", 0) == 0) policy_name = line.substr(10);
      } else {
        expected += line + "\n";
      }
    }
    ASSERT_FALSE(policy_name.empty()) << "expected.txt needs a '# policy: NAME' line";
    Trace trace;
    auto nodes = LoadClusterFile((dir / "nodes.yaml").string());
    ASSERT_TRUE(nodes) << nodes.error().ToString();
    trace.nodes = *std::move(nodes);
    auto jobs = LoadDroverJobs((dir / "jobs.csv").string());
    ASSERT_TRUE(jobs) << jobs.error().ToString();
    trace.jobs = *std::move(jobs);
    ReplayOptions options;
    options.event_log = true;
    const std::string actual = ScenarioOutput(Replay(trace, policy_name, options));
    if (update) {
      std::ofstream(dir / "expected.txt") << header << actual;
      continue;
    }
    EXPECT_EQ(actual, expected);
  }
  EXPECT_GE(count, 2);
}

}  // namespace
}  // namespace drover::sim
