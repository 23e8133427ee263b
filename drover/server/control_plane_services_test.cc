// ControlPlane's services (control_plane_services.cc; docs/inference.md) under a FakeClock, the
// memory store and a FakeRuntime node of two GPUs, driven one turn at a time (RunOnce; probe
// results handed in directly): replicas as jobs, protection from preemption up to min,
// replacement, the autoscaler, readiness, liveness and a rolling update.

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <httplib.h>

#include <chrono>
#include <memory>
#include <set>
#include <string>
#include <thread>

#include "drover/sched/sched_test_util.h"
#include "drover/server/control_plane.h"
#include "drover/testing/fake_clock.h"
#include "drover/testing/fake_runtime.h"
#include "drover/testing/memory_file_system.h"

namespace drover::server {
namespace {

using ::testing::HasSubstr;
using Kind = model::WorkerEvent::Kind;

constexpr char kPolicy[] = "/etc/drover/policy.yaml";

class ControlPlaneServicesTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ControlPlaneOptions options;
    options.run_loop = false;
    options.service_port_from = 26500;
    options.service_port_to = 26599;
    plane_ = std::make_unique<ControlPlane>(store::NewMemoryStore(), clock_, options, fs_);
    model::Node node =
        sched::testing::MakeNode("node-a", 2, "H100-80GB", 8000, 64 * sched::testing::kGi);
    node.address = "10.0.0.7";
    auto runtime = std::make_unique<testing::FakeRuntime>();
    runtime_ = runtime.get();
    plane_->AddLocalNode(node, std::move(runtime), "/var/lib/drover/runs");
    fs_.WriteFile(
        kPolicy, "kind: Policy\npreemption: {enabled: true, min_run_time: 0s, grace_period: 1s}\n");
    ASSERT_TRUE(plane_->Start());
    ASSERT_TRUE(plane_->LoadPolicyFile(kPolicy));
  }

  static model::ServiceSpec Spec(int min, int max) {
    model::ServiceSpec spec;
    spec.name = "chat";
    spec.models = {"llama"};
    spec.replica.command = {"serve"};
    spec.replica.priority_class = "low";
    spec.replica.requirements.per_worker.cpu_millis = 100;
    spec.replica.requirements.per_worker.gpus = 1;
    spec.min_replicas = min;
    spec.max_replicas = max;
    spec.autoscaling.target_in_flight_per_replica = 4;
    spec.autoscaling.scale_up_delay_ms = 0;
    spec.autoscaling.scale_down_delay_ms = 0;
    return spec;
  }

  // Runs turns until no launch is left to report, reporting each launched worker started.
  void StartLaunched() {
    for (int turn = 0; turn < 5; ++turn) {
      plane_->RunOnce();
      for (const model::LaunchSpec& launch : runtime_->Launched()) {
        if (started_.insert(launch.key.job.value() * 100 + launch.key.attempt).second) {
          runtime_->Report({launch.key, Kind::kStarted, clock_.Now(), {}});
        }
      }
    }
    plane_->RunOnce();
  }

  api::ServiceStatus Chat() {
    for (api::ServiceStatus& status : plane_->Services()) {
      if (status.record.spec.name == "chat") return status;
    }
    ADD_FAILURE() << "no service chat";
    return {};
  }

  model::JobState State(JobId id) {
    auto job = plane_->GetJob(id);
    return job ? job->state : model::JobState::kPending;
  }

  // Reports every launched worker of `id`'s current attempt exited with `code`.
  void Exit(JobId id, int code) {
    for (const model::LaunchSpec& launch : runtime_->Launched()) {
      if (launch.key.job != id) continue;
      model::WorkerEvent exited{launch.key, Kind::kExited, clock_.Now(), {}};
      exited.exit.exit_code = code;
      runtime_->Report(exited);
    }
    plane_->RunOnce();
  }

  testing::FakeClock clock_{1'700'000'000'000};
  testing::MemoryFileSystem fs_;
  testing::FakeRuntime* runtime_ = nullptr;
  std::set<std::int64_t> started_;
  std::unique_ptr<ControlPlane> plane_;
};

TEST_F(ControlPlaneServicesTest, ReplicasAreJobsWithPortsAndTheFirstMinAreProtected) {
  auto put = plane_->PutService(Spec(1, 2), model::AdminIdentity("alice"));
  ASSERT_TRUE(put) << put.error().ToString();
  EXPECT_EQ(put->record.desired, 1);
  ASSERT_TRUE(plane_->ReportServiceLoad("chat", model::LoadSignal{.in_flight = 8}));
  StartLaunched();
  api::ServiceStatus chat = Chat();
  EXPECT_EQ(chat.record.desired, 2);
  EXPECT_THAT(chat.last_scaling, HasSubstr("in flight 8"));
  ASSERT_EQ(chat.endpoints.size(), 2u);
  EXPECT_TRUE(chat.endpoints[0].is_protected);
  EXPECT_FALSE(chat.endpoints[1].is_protected);
  EXPECT_EQ(chat.endpoints[0].url, "http://10.0.0.7:26500");
  EXPECT_EQ(chat.endpoints[1].url, "http://10.0.0.7:26501");
  EXPECT_TRUE(chat.endpoints[0].ready) << "no readiness probe: running is ready";
  auto job = plane_->GetJob(chat.endpoints[1].job);
  ASSERT_TRUE(job);
  EXPECT_EQ(job->spec.service, "chat");
  EXPECT_EQ(job->spec.env.at("DROVER_PORT"), "26501");
  EXPECT_FALSE(job->spec.timeout.has_value());
  auto decisions = plane_->Decisions(chat.endpoints[1].job);
  ASSERT_TRUE(decisions);
  ASSERT_FALSE(decisions->empty());
  EXPECT_EQ(decisions->front().kind, model::Decision::Kind::kScaled);
  EXPECT_THAT(decisions->front().summary, HasSubstr("1 -> 2"));
}

TEST_F(ControlPlaneServicesTest, OnlyReplicasAboveMinArePreemptionVictims) {
  ASSERT_TRUE(plane_->PutService(Spec(1, 2), model::AdminIdentity("alice")));
  ASSERT_TRUE(plane_->ReportServiceLoad("chat", model::LoadSignal{.in_flight = 8}));
  StartLaunched();
  api::ServiceStatus chat = Chat();
  ASSERT_EQ(chat.endpoints.size(), 2u);
  const JobId protected_replica = chat.endpoints[0].job;
  const JobId borrowed_replica = chat.endpoints[1].job;
  clock_.Set(clock_.Now() + 1'000);  // a victim must have run a while
  // Two high-priority one-GPU jobs want both GPUs: only the interruptible replica may go.
  auto submitted = plane_->Submit(
      "kind: Job\nname: urgent\npriority: high\nresources: {cpu: 100m, gpus: 1}\nscript: x\n"
      "---\nkind: Job\nname: urgent2\npriority: high\nresources: {cpu: 100m, gpus: 1}\n"
      "script: x\n",
      spec::ParseOptions{}, "", model::AdminIdentity("bob"));
  ASSERT_TRUE(submitted) << submitted.error().ToString();
  for (int turn = 0; turn < 5; ++turn) plane_->RunOnce();
  std::set<std::int64_t> stopped;
  for (const auto& [key, request] : runtime_->Stopped()) {
    if (request.preempt) stopped.insert(key.job.value());
  }
  EXPECT_EQ(stopped, std::set<std::int64_t>{borrowed_replica.value()});
  EXPECT_EQ(State(protected_replica), model::JobState::kRunning);
  // The victim drains: out of routing at once while its workers finish within the grace.
  EXPECT_EQ(State(borrowed_replica), model::JobState::kRunning) << "still finishing its requests";
  chat = Chat();
  ASSERT_EQ(chat.endpoints.size(), 2u);
  EXPECT_TRUE(chat.endpoints[0].ready) << "the protected replica still serves";
  EXPECT_FALSE(chat.endpoints[1].ready) << "the victim is out of routing";
  auto transitions = plane_->Transitions(borrowed_replica);
  ASSERT_TRUE(transitions);
  EXPECT_THAT(transitions->back().cause, HasSubstr("not ready: draining (preempted by job"));
}

TEST_F(ControlPlaneServicesTest, AnIdleServiceScalesToZeroAndAWaitingRequestWakesIt) {
  model::ServiceSpec spec = Spec(0, 2);
  spec.autoscaling.scale_to_zero_after_ms = 10'000;
  ASSERT_TRUE(plane_->PutService(spec, model::AdminIdentity("alice")));
  StartLaunched();
  EXPECT_TRUE(Chat().endpoints.empty()) << "min 0 starts nothing before any demand";
  // A request waits in the gateway: one replica starts at once.
  ASSERT_TRUE(plane_->ReportServiceLoad("chat", model::LoadSignal{.waiting = 1}));
  StartLaunched();
  api::ServiceStatus chat = Chat();
  EXPECT_EQ(chat.record.desired, 1);
  EXPECT_THAT(chat.last_scaling, HasSubstr("at zero replicas: scale from zero: 0 -> 1"));
  ASSERT_EQ(chat.endpoints.size(), 1u);
  EXPECT_TRUE(chat.endpoints[0].ready);
  EXPECT_FALSE(chat.endpoints[0].is_protected) << "above min 0: a borrowing replica";
  const JobId replica = chat.endpoints[0].job;
  // Requests keep coming for a while, then none: zero after scale_to_zero_after of silence.
  ASSERT_TRUE(plane_->ReportServiceLoad("chat", model::LoadSignal{.requests = 5}));
  StartLaunched();
  for (int second = 0; second < 10; ++second) {
    clock_.Advance(1'000);
    ASSERT_TRUE(plane_->ReportServiceLoad("chat", model::LoadSignal{.window_ms = 1'000}));
    plane_->RunOnce();
    ASSERT_EQ(Chat().record.desired, 1) << "idle for only " << second << " s";
  }
  clock_.Advance(1'000);
  ASSERT_TRUE(plane_->ReportServiceLoad("chat", model::LoadSignal{.window_ms = 1'000}));
  plane_->RunOnce();
  chat = Chat();
  EXPECT_EQ(chat.record.desired, 0);
  EXPECT_THAT(chat.last_scaling, HasSubstr("no request for 10000 ms"));
  EXPECT_TRUE(chat.endpoints.empty());
  bool stopped = false;
  for (const auto& [key, request] : runtime_->Stopped()) stopped |= key.job == replica;
  EXPECT_TRUE(stopped);
}

TEST_F(ControlPlaneServicesTest, TheSaturationGaugeIsScrapedFromReadyReplicasAndScales) {
  model::ServiceSpec spec = Spec(1, 2);
  spec.autoscaling.target_in_flight_per_replica = 0;  // the backend's queue alone
  spec.autoscaling.saturation = model::SaturationSpec{.target_per_replica = 2, .interval_ms = 500};
  ASSERT_TRUE(plane_->PutService(spec, model::AdminIdentity("alice")));
  StartLaunched();
  std::vector<ProbeTarget> due = plane_->DueProbes();
  ASSERT_EQ(due.size(), 1u);
  EXPECT_EQ(due[0].kind, ProbeKind::kSaturation);
  EXPECT_EQ(due[0].path, "/metrics");
  EXPECT_EQ(due[0].metric, "vllm:num_requests_waiting");
  EXPECT_EQ(due[0].port, 26500);
  EXPECT_TRUE(plane_->DueProbes().empty()) << "one scrape per interval";
  plane_->OnProbeResults({ProbeResult{due[0], true, "HTTP 200", 3}});
  StartLaunched();
  api::ServiceStatus chat = Chat();
  EXPECT_EQ(chat.record.desired, 2);
  EXPECT_THAT(chat.last_scaling,
              HasSubstr("vllm:num_requests_waiting 3 at target 2 per replica asks for 2"));
  EXPECT_EQ(chat.endpoints.size(), 2u);
  // The value ages out: three intervals, at least the load signal's 5 s, without a scrape is
  // unknown, and unknown never scales down.
  clock_.Advance(sched::kLoadSignalStaleMs + 1);
  plane_->RunOnce();
  EXPECT_EQ(Chat().record.desired, 2);
}

TEST(SumOfSamples, AddsEveryLabelSetOfTheMetricOnly) {
  constexpr char kText[] =
      "# HELP vllm:num_requests_waiting Number of requests waiting.\n"
      "# TYPE vllm:num_requests_waiting gauge\n"
      "vllm:num_requests_waiting{model_name=\"a\"} 3\n"
      "vllm:num_requests_waiting{model_name=\"b}\\\"\"} 2.5 1700000000000\n"
      "vllm:num_requests_waiting_total 100\n"
      "vllm:num_requests_running{model_name=\"a\"} 7\n";
  EXPECT_EQ(SumOfSamples(kText, "vllm:num_requests_waiting"), 5.5);
  EXPECT_EQ(SumOfSamples(kText, "vllm:num_requests_running"), 7.0);
  EXPECT_EQ(SumOfSamples(kText, "absent"), std::nullopt);
  EXPECT_EQ(SumOfSamples("m 1\nm NaN\n", "m"), std::nullopt) << "a value that is no number";
  EXPECT_EQ(SumOfSamples("m{a=\"1\" 2\n", "m"), std::nullopt) << "an unclosed label set";
  EXPECT_EQ(SumOfSamples("m 4", "m"), 4.0) << "no final newline";
}

// A probe reads the replica's answer (the user's program) up to kMaxProbeAnswerBytes and within
// the probe's timeout: a saturation scrape finds its gauge, a larger answer fails the probe, one
// trickled a byte at a time (each well within the timeout) fails at the timeout, and a port
// nobody listens on is "no answer".
TEST(RunProbe, ReadsTheReplicasAnswerWithinItsBound) {
  httplib::Server replica;
  replica.Get("/metrics", [](const httplib::Request&, httplib::Response& response) {
    response.set_content("vllm:num_requests_waiting{model_name=\"m\"} 3\n", "text/plain");
  });
  replica.Get("/huge", [](const httplib::Request&, httplib::Response& response) {
    response.set_content(std::string(kMaxProbeAnswerBytes + 1, 'x'), "text/plain");
  });
  replica.Get("/trickle", [](const httplib::Request&, httplib::Response& response) {
    response.set_chunked_content_provider("text/plain", [](std::size_t, httplib::DataSink& sink) {
      for (int i = 0; i < 500; ++i) {  // 10 s unless the probe hangs up
        if (!sink.write("x", 1)) return false;
        std::this_thread::sleep_for(std::chrono::milliseconds(20));
      }
      sink.done();
      return true;
    });
  });
  const int port = replica.bind_to_any_port("127.0.0.1");
  std::thread serving([&] { replica.listen_after_bind(); });
  while (!replica.is_running()) std::this_thread::yield();
  ProbeTarget target;
  target.kind = ProbeKind::kSaturation;
  target.host = "127.0.0.1";
  target.port = port;
  target.path = "/metrics";
  target.metric = "vllm:num_requests_waiting";
  const ProbeResult scraped = RunProbe(target);
  EXPECT_TRUE(scraped.ok) << scraped.outcome;
  EXPECT_EQ(scraped.value, 3.0);
  target.path = "/huge";
  const ProbeResult huge = RunProbe(target);
  EXPECT_FALSE(huge.ok);
  EXPECT_THAT(huge.outcome, ::testing::HasSubstr("the answer's body is over 4194304 bytes"));
  target.path = "/trickle";
  target.timeout_ms = 300;
  const ProbeResult trickled = RunProbe(target);
  EXPECT_FALSE(trickled.ok);
  EXPECT_THAT(trickled.outcome, ::testing::HasSubstr("no whole answer within 300 ms"));
  replica.stop();
  serving.join();
  const ProbeResult nobody = RunProbe(target);
  EXPECT_FALSE(nobody.ok);
  EXPECT_THAT(nobody.outcome, ::testing::HasSubstr("no answer (cannot connect"));
}

TEST_F(ControlPlaneServicesTest, ADeadReplicaIsReplacedAndTheServiceDeleteStopsAll) {
  ASSERT_TRUE(plane_->PutService(Spec(1, 1), model::AdminIdentity("alice")));
  StartLaunched();
  const JobId first = Chat().endpoints.at(0).job;
  Exit(first, 1);
  EXPECT_EQ(State(first), model::JobState::kFailed);
  StartLaunched();
  api::ServiceStatus chat = Chat();
  ASSERT_EQ(chat.endpoints.size(), 1u);
  EXPECT_NE(chat.endpoints[0].job, first);
  EXPECT_TRUE(chat.endpoints[0].is_protected) << "a protected replica's replacement is protected";
  EXPECT_EQ(chat.endpoints[0].port, 26500) << "the dead replica's port is free again";

  ASSERT_TRUE(plane_->DeleteService("chat", model::AdminIdentity("alice")));
  EXPECT_TRUE(plane_->Services().empty());
  EXPECT_EQ(plane_->DeleteService("chat", model::AdminIdentity("alice")).error().code,
            ErrorCode::kNotFound);
  bool stop_requested = false;
  for (const auto& [key, request] : runtime_->Stopped()) {
    if (key.job == chat.endpoints[0].job) stop_requested = true;
  }
  EXPECT_TRUE(stop_requested);
}

TEST_F(ControlPlaneServicesTest, ReplicasThatDieBeforeReadyAreRestartedWithBackoff) {
  model::ServiceSpec spec = Spec(1, 1);
  spec.readiness = model::ProbeSpec{.path = "/health"};
  ASSERT_TRUE(plane_->PutService(spec, model::AdminIdentity("alice")));
  StartLaunched();
  const JobId first = Chat().endpoints.at(0).job;
  Exit(first, 1);  // never ready
  StartLaunched();
  api::ServiceStatus chat = Chat();
  EXPECT_TRUE(chat.endpoints.empty()) << "no replacement before the backoff";
  EXPECT_THAT(chat.blocked, HasSubstr("ended before they were ready"));
  clock_.Advance(1'000);
  StartLaunched();
  ASSERT_EQ(Chat().endpoints.size(), 1u);
  Exit(Chat().endpoints.at(0).job, 1);
  clock_.Advance(1'000);
  StartLaunched();
  EXPECT_TRUE(Chat().endpoints.empty()) << "the second wait is 2 s";
  clock_.Advance(1'000);
  StartLaunched();
  EXPECT_EQ(Chat().endpoints.size(), 1u) << Chat().blocked;
}

TEST_F(ControlPlaneServicesTest, ProbesMarkReadinessAndLivenessFailuresRestart) {
  model::ServiceSpec spec = Spec(1, 1);
  spec.readiness = model::ProbeSpec{.path = "/health", .interval_ms = 1000};
  spec.liveness = model::ProbeSpec{.path = "/live", .interval_ms = 1000, .failure_threshold = 2};
  ASSERT_TRUE(plane_->PutService(spec, model::AdminIdentity("alice")));
  StartLaunched();
  api::ServiceEndpoint replica = Chat().endpoints.at(0);
  EXPECT_FALSE(replica.ready) << "not ready before its first passing probe";
  std::vector<ProbeTarget> due = plane_->DueProbes();
  ASSERT_EQ(due.size(), 2u);
  EXPECT_EQ(due[0].host, "10.0.0.7");
  EXPECT_EQ(due[0].port, 26500);
  EXPECT_TRUE(plane_->DueProbes().empty()) << "each probe is due once per interval";
  ProbeTarget readiness = due[0].kind == ProbeKind::kReadiness ? due[0] : due[1];
  ProbeTarget liveness = due[0].kind == ProbeKind::kLiveness ? due[0] : due[1];
  plane_->OnProbeResults({ProbeResult{readiness, true, "HTTP 200", 0}});
  EXPECT_TRUE(Chat().endpoints.at(0).ready);
  auto transitions = plane_->Transitions(replica.job);
  ASSERT_TRUE(transitions);
  EXPECT_THAT(transitions->back().cause, HasSubstr("ready: GET /health answered HTTP 200"));

  plane_->OnProbeResults({ProbeResult{liveness, false, "HTTP 500", 0}});
  EXPECT_EQ(State(replica.job), model::JobState::kRunning) << "one failure is under threshold";
  plane_->OnProbeResults({ProbeResult{liveness, false, "HTTP 500", 0}});
  bool stopped = false;
  for (const auto& [key, request] : runtime_->Stopped()) stopped |= key.job == replica.job;
  EXPECT_TRUE(stopped) << "two failures in a row restart the replica";
  EXPECT_TRUE(Chat().endpoints.empty()) << "a stopping replica is no endpoint";
}

TEST_F(ControlPlaneServicesTest, AChangedTemplateRollsOneReplicaAtATime) {
  ASSERT_TRUE(plane_->PutService(Spec(2, 2), model::AdminIdentity("alice")));
  StartLaunched();
  ASSERT_EQ(Chat().endpoints.size(), 2u);
  model::ServiceSpec changed = Spec(2, 2);
  changed.replica.env["VERSION"] = "2";
  changed.replica.requirements.per_worker.gpus = 0;  // the node has room for the surge
  auto put = plane_->PutService(changed, model::AdminIdentity("alice"));
  ASSERT_TRUE(put) << put.error().ToString();
  EXPECT_EQ(put->record.generation, 2);
  plane_->RunOnce();
  api::ServiceStatus chat = Chat();
  ASSERT_EQ(chat.endpoints.size(), 3u) << "one new replica beside the two old ones";
  EXPECT_EQ(chat.endpoints[2].generation, 2);
  StartLaunched();  // the new one runs, so it is ready: one old one stops
  chat = Chat();
  int old = 0, current = 0;
  for (const api::ServiceEndpoint& e : chat.endpoints) (e.generation == 1 ? old : current)++;
  EXPECT_EQ(old + current, 2) << "never more than one above desired once the surge is ready";
  StartLaunched();
  StartLaunched();
  chat = Chat();
  for (const api::ServiceEndpoint& e : chat.endpoints) {
    EXPECT_EQ(e.generation, 2);
  }
}

TEST_F(ControlPlaneServicesTest, RefusesBadSpecsAndForgedReplicaFields) {
  model::ServiceSpec spec = Spec(3, 2);
  EXPECT_THAT(plane_->PutService(spec, model::AdminIdentity("alice")).error().message,
              HasSubstr("min_replicas"));
  spec = Spec(1, 1);
  spec.replica.env["DROVER_PORT"] = "80";
  EXPECT_THAT(plane_->PutService(spec, model::AdminIdentity("alice")).error().message,
              HasSubstr("DROVER_PORT"));
  spec = Spec(1, 1);
  spec.replica.timeout = DurationMs{1000};
  EXPECT_THAT(plane_->PutService(spec, model::AdminIdentity("alice")).error().message,
              HasSubstr("timeout"));
  EXPECT_EQ(plane_->ReportServiceLoad("none", {}).error().code, ErrorCode::kNotFound);
  // A cron job's jobs come as JSON: none may pose as a replica.
  model::CronSpec cron;
  cron.name = "forged";
  cron.schedule = "@daily";
  model::JobSpec job = Spec(1, 1).replica;
  job.name = "x";
  job.service = "chat";
  cron.jobs = {job};
  auto forged = plane_->PutCron(cron, model::AdminIdentity("mallory"));
  ASSERT_FALSE(forged);
  EXPECT_THAT(forged.error().message, HasSubstr("service is set by the server"));
}

}  // namespace
}  // namespace drover::server
