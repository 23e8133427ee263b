// ControlPlane as a driver, with a fake runtime and the memory store: checkpoints from the API
// and from runtime events, stop requests, the decision log and the policy file.

#include "drover/server/control_plane.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <stdlib.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "drover/testing/fake_clock.h"

namespace drover::server {
namespace {

using ::testing::HasSubstr;
using Kind = model::WorkerEvent::Kind;

// What the fake runtime was asked to do, and the events it will report.
struct RuntimeLog {
  std::mutex mu;
  std::vector<model::LaunchSpec> launched;
  std::vector<std::pair<model::WorkerKey, model::StopRequest>> stopped;
  std::vector<model::WorkerEvent> events;  // reported by the next Poll

  void Report(model::WorkerEvent event) {
    std::lock_guard lock(mu);
    events.push_back(std::move(event));
  }
};

class FakeRuntime final : public agent::WorkerRuntime {
 public:
  explicit FakeRuntime(std::shared_ptr<RuntimeLog> log) : log_(std::move(log)) {}
  Status Launch(const model::LaunchSpec& spec) override {
    std::lock_guard lock(log_->mu);
    log_->launched.push_back(spec);
    return OkStatus();
  }
  Status Stop(const model::WorkerKey& key, const model::StopRequest& request) override {
    std::lock_guard lock(log_->mu);
    log_->stopped.emplace_back(key, request);
    return OkStatus();
  }
  std::vector<model::WorkerKey> Adopt(const std::vector<model::WorkerKey>&) override { return {}; }
  std::vector<model::WorkerEvent> Poll() override {
    std::lock_guard lock(log_->mu);
    return std::exchange(log_->events, {});
  }

 private:
  std::shared_ptr<RuntimeLog> log_;
};

bool WaitUntil(const std::function<bool()>& condition) {
  auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  while (std::chrono::steady_clock::now() < deadline) {
    if (condition()) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  return condition();
}

model::WorkerEvent Event(const model::WorkerKey& key, Kind kind, TimeMs at) {
  model::WorkerEvent event;
  event.key = key;
  event.kind = kind;
  event.at = at;
  return event;
}

class ControlPlaneTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char pattern[] = "/tmp/drover_control_plane_test_XXXXXX";
    ASSERT_NE(mkdtemp(pattern), nullptr);
    dir_ = pattern;
    ControlPlaneOptions options;
    options.poll_interval_ms = 1;
    options.idle_cycle_ms = 10;
    options.policy_check_interval_ms = 10;
    plane_ = std::make_unique<ControlPlane>(store::NewMemoryStore(), clock_, options);
  }

  void TearDown() override {
    plane_.reset();
    std::error_code ignored;
    std::filesystem::remove_all(dir_, ignored);
  }

  void AddNode() {
    model::Node node;
    node.name = NodeId("node-a");
    node.address = "127.0.0.1";
    node.cpu_millis = 8000;
    node.memory_bytes = std::int64_t{64} << 30;
    for (int i = 0; i < 2; ++i) {
      model::Gpu gpu;
      gpu.index = i;
      gpu.uuid = "GPU-" + std::to_string(i);
      gpu.model = "H100-80GB";
      gpu.memory_bytes = std::int64_t{80} << 30;
      node.gpus.push_back(gpu);
    }
    plane_->AddLocalNode(node, std::make_unique<FakeRuntime>(log_), dir_);
  }

  // Submits a one-worker job, and reports its worker started; returns its id.
  JobId StartJob() {
    auto submitted = plane_->Submit(R"(kind: Job
name: train
resources: {cpu: 100m, memory: 64Mi, gpus: 1}
script: sleep 100
)",
                                    spec::ParseOptions{}, "", "alice");
    EXPECT_TRUE(submitted) << submitted.error().ToString();
    if (!submitted) return JobId(0);
    JobId id = submitted->jobs.at(0).id;
    EXPECT_TRUE(WaitUntil([&] {
      std::lock_guard lock(log_->mu);
      return !log_->launched.empty();
    }));
    model::WorkerKey key;
    {
      std::lock_guard lock(log_->mu);
      key = log_->launched.back().key;
    }
    log_->Report(Event(key, Kind::kStarted, clock_.Now()));
    EXPECT_TRUE(WaitUntil([&] { return State(id) == model::JobState::kRunning; }));
    return id;
  }

  model::JobState State(JobId id) {
    auto job = plane_->GetJob(id);
    return job ? job->state : model::JobState::kPending;
  }

  TimeMs LastCheckpoint(JobId id) {
    auto job = plane_->GetJob(id);
    return job && job->current_attempt() ? job->current_attempt()->last_checkpoint_at : -1;
  }

  std::string WritePolicy(const std::string& text) {
    const std::string path = dir_ + "/policy.yaml";
    std::ofstream(path + ".tmp") << text;
    std::filesystem::rename(path + ".tmp", path);
    return path;
  }

  bool HasQueue(const std::string& name) {
    for (const control::QueueReport& report : plane_->Queues()) {
      if (report.status.name == name) return true;
    }
    return false;
  }

  std::string dir_;
  testing::FakeClock clock_;
  std::shared_ptr<RuntimeLog> log_ = std::make_shared<RuntimeLog>();
  std::unique_ptr<ControlPlane> plane_;
};

TEST_F(ControlPlaneTest, CheckpointsComeFromTheApiAndFromTheRuntime) {
  AddNode();
  ASSERT_TRUE(plane_->Start());
  JobId id = StartJob();
  ASSERT_EQ(State(id), model::JobState::kRunning);

  clock_.Advance(1000);
  TimeMs at = 0;
  ASSERT_TRUE(plane_->ReportCheckpoint(id, &at));
  EXPECT_EQ(at, clock_.Now());
  EXPECT_EQ(LastCheckpoint(id), at);

  // The runtime saw the marker touched later.
  const model::WorkerKey key{id, 1, 0};
  log_->Report(Event(key, Kind::kCheckpoint, at + 5000));
  ASSERT_TRUE(WaitUntil([&] { return LastCheckpoint(id) == at + 5000; }));
  // Older ones (an adopted worker's marker reported again), other attempts and unknown jobs
  // change nothing and break nothing.
  log_->Report(Event(key, Kind::kCheckpoint, at + 1000));
  log_->Report(Event(model::WorkerKey{id, 7, 0}, Kind::kCheckpoint, at + 9000));
  log_->Report(Event(model::WorkerKey{JobId(999), 1, 0}, Kind::kCheckpoint, at + 9000));
  std::uint64_t seen = plane_->version();
  log_->Report(Event(key, Kind::kCheckpoint, at + 6000));
  ASSERT_TRUE(WaitUntil([&] { return LastCheckpoint(id) == at + 6000; }));
  EXPECT_GT(plane_->version(), seen);

  auto unknown = plane_->ReportCheckpoint(JobId(999));
  ASSERT_FALSE(unknown);
  EXPECT_EQ(unknown.error().code, ErrorCode::kNotFound);
}

TEST_F(ControlPlaneTest, CheckpointOfAFinishedJobIsAFailedPrecondition) {
  AddNode();
  ASSERT_TRUE(plane_->Start());
  JobId id = StartJob();
  model::WorkerEvent exited = Event(model::WorkerKey{id, 1, 0}, Kind::kExited, clock_.Now());
  exited.exit.exit_code = 0;
  log_->Report(exited);
  ASSERT_TRUE(WaitUntil([&] { return State(id) == model::JobState::kSucceeded; }));
  auto refused = plane_->ReportCheckpoint(id);
  ASSERT_FALSE(refused);
  EXPECT_EQ(refused.error().code, ErrorCode::kFailedPrecondition);
  // A late marker event for it is ignored.
  log_->Report(Event(model::WorkerKey{id, 1, 0}, Kind::kCheckpoint, clock_.Now() + 1));
  std::this_thread::sleep_for(std::chrono::milliseconds(50));
  EXPECT_EQ(LastCheckpoint(id), 0);
}

TEST_F(ControlPlaneTest, CancelStopsWorkersWithoutPreemption) {
  AddNode();
  ASSERT_TRUE(plane_->Start());
  JobId id = StartJob();
  ASSERT_TRUE(plane_->Cancel(id, "cancelled by alice"));
  std::lock_guard lock(log_->mu);
  ASSERT_EQ(log_->stopped.size(), 1u);
  EXPECT_EQ(log_->stopped[0].first, (model::WorkerKey{id, 1, 0}));
  EXPECT_FALSE(log_->stopped[0].second.preempt);
}

TEST_F(ControlPlaneTest, PlacementsAreInTheDecisionLog) {
  AddNode();
  ASSERT_TRUE(plane_->Start());
  JobId id = StartJob();
  auto decisions = plane_->Decisions(id);
  ASSERT_TRUE(decisions) << decisions.error().ToString();
  ASSERT_FALSE(decisions->empty());
  EXPECT_EQ(decisions->front().kind, model::Decision::Kind::kPlaced);
  EXPECT_EQ(decisions->front().job, id);
  EXPECT_EQ(plane_->Decisions(JobId(999)).error().code, ErrorCode::kNotFound);
}

TEST_F(ControlPlaneTest, SubmitReturnsEachJobAsTheSubmissionLeftIt) {
  AddNode();
  ASSERT_TRUE(plane_->Start());
  constexpr char kFile[] = R"(kind: Job
name: prep
resources: {cpu: 100m, memory: 64Mi}
script: "true"
---
kind: Job
name: train
depends_on: [prep]
resources: {cpu: 100m, memory: 64Mi, gpus: 1}
script: sleep 100
)";
  auto first = plane_->Submit(kFile, spec::ParseOptions{}, "key-1", "alice");
  ASSERT_TRUE(first) << first.error().ToString();
  EXPECT_FALSE(first->existing);
  ASSERT_EQ(first->jobs.size(), 2u);
  const JobId prep = first->jobs[0].id;
  const JobId train = first->jobs[1].id;
  EXPECT_EQ(train.value(), prep.value() + 1);
  EXPECT_EQ(first->jobs[0].name, "prep");
  EXPECT_EQ(first->jobs[1].name, "train");
  EXPECT_EQ(first->jobs[0].state, model::JobState::kPending);
  EXPECT_EQ(first->jobs[1].state, model::JobState::kPending);
  EXPECT_EQ(first->Ids(), (std::vector<JobId>{prep, train}));

  // prep is launched (and stays starting: the fake runtime reports nothing).
  ASSERT_TRUE(WaitUntil([&] { return State(prep) == model::JobState::kStarting; }));
  // The same key again: the same jobs, each in its state now, and nothing new.
  auto again = plane_->Submit(kFile, spec::ParseOptions{}, "key-1", "alice");
  ASSERT_TRUE(again) << again.error().ToString();
  EXPECT_TRUE(again->existing);
  ASSERT_EQ(again->jobs.size(), 2u);
  EXPECT_EQ(again->Ids(), (std::vector<JobId>{prep, train}));
  EXPECT_EQ(again->jobs[0].name, "prep");
  EXPECT_EQ(again->jobs[0].state, model::JobState::kStarting);
  EXPECT_EQ(again->jobs[1].state, model::JobState::kPending);
  EXPECT_EQ(plane_->ListJobs(store::JobFilter{}).size(), 2u);
}

constexpr char kTeams[] = R"(kind: Policy
queues:
  - name: team-a
    quota: {gpu: 1}
  - name: team-b
    quota: {gpu: 1}
)";

TEST_F(ControlPlaneTest, PolicyFileIsLoadedCheckedAndReloaded) {
  AddNode();
  // A file that cannot be read, or does not parse, changes nothing.
  auto missing = plane_->LoadPolicyFile(dir_ + "/none.yaml");
  ASSERT_FALSE(missing);
  EXPECT_EQ(missing.error().code, ErrorCode::kInvalidArgument);
  EXPECT_THAT(missing.error().message, HasSubstr("none.yaml"));
  std::string path = WritePolicy("kind: Policy\nqueues:\n  - name: a\n    weight: -1\n");
  auto bad = plane_->LoadPolicyFile(path);
  ASSERT_FALSE(bad);
  EXPECT_EQ(bad.error().code, ErrorCode::kInvalidArgument);
  ASSERT_FALSE(bad.error().details.empty());
  EXPECT_THAT(bad.error().details[0], HasSubstr(path + ":4:"));
  EXPECT_EQ(plane_->PolicyInfo().file, "");
  EXPECT_EQ(plane_->ReloadPolicy().error().code, ErrorCode::kFailedPrecondition);

  WritePolicy(kTeams);
  ASSERT_TRUE(plane_->LoadPolicyFile(path));
  EXPECT_TRUE(HasQueue("team-a"));
  EXPECT_EQ(plane_->PolicyInfo().file, path);
  EXPECT_EQ(plane_->PolicyInfo().loaded_at, clock_.Now());
  ASSERT_TRUE(plane_->Start());

  // The loop picks up an edit.
  WritePolicy("kind: Policy\nqueues:\n  - name: research\n");
  ASSERT_TRUE(WaitUntil([&] { return HasQueue("research"); }));
  EXPECT_FALSE(HasQueue("team-a"));
  // A bad edit is recorded and the policy in force stays.
  WritePolicy("kind: Policy\nqueues: 7\n");
  ASSERT_TRUE(WaitUntil([&] { return plane_->PolicyInfo().reload_error.has_value(); }));
  EXPECT_TRUE(HasQueue("research"));
  auto reload = plane_->ReloadPolicy();
  ASSERT_FALSE(reload);
  EXPECT_EQ(reload.error().code, ErrorCode::kInvalidArgument);
  // Fixed: the error clears.
  WritePolicy(kTeams);
  ASSERT_TRUE(WaitUntil([&] { return !plane_->PolicyInfo().reload_error.has_value(); }));
  EXPECT_TRUE(HasQueue("team-b"));
  EXPECT_EQ(plane_->Policy().queues.size(), 2u);
}

TEST_F(ControlPlaneTest, SetPolicyRejectsAMalformedPolicy) {
  model::Policy policy;
  model::QueueConfig queue;
  queue.name = "bad";
  queue.weight = 0;
  policy.queues.push_back(queue);
  auto rejected = plane_->SetPolicy(policy);
  ASSERT_FALSE(rejected);
  EXPECT_EQ(rejected.error().code, ErrorCode::kInvalidArgument);
  EXPECT_TRUE(HasQueue("default"));
}

}  // namespace
}  // namespace drover::server
