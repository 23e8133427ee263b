// ControlPlane as a driver, with a fake runtime, the memory store and the memory file system,
// its loop driven one turn at a time (RunOnce): checkpoints from the API and from runtime
// events, stop requests, the decision log, the policy file, waiting jobs' inputs, output
// publishing, a store that fails mid-step, and effects carried out without the plane's mutex
// (API calls answered while a launch is in progress; order and feedback kept).

#include "drover/server/control_plane.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <future>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "drover/testing/fake_clock.h"
#include "drover/testing/fake_runtime.h"
#include "drover/testing/faulty_store.h"
#include "drover/testing/memory_file_system.h"
#include "drover/testing/wait_until.h"

namespace drover::server {
namespace {

using ::testing::HasSubstr;
using Kind = model::WorkerEvent::Kind;

model::WorkerEvent Event(const model::WorkerKey& key, Kind kind, TimeMs at) {
  model::WorkerEvent event;
  event.key = key;
  event.kind = kind;
  event.at = at;
  return event;
}

class ControlPlaneTest : public ::testing::Test {
 protected:
  void SetUp() override { OpenPlane(); }

  // A plane (without its loop thread unless `run_loop`) over the FaultyStore of store_ (kept
  // across calls: a new plane over it is a restarted server).
  void OpenPlane(bool run_loop = false) {
    plane_.reset();
    auto faulty = std::make_unique<testing::FaultyStore>(*store_);
    faulty_ = faulty.get();
    ControlPlaneOptions options;
    options.run_loop = run_loop;
    options.on_store_failure = [this](const Error& error) { store_failures_.push_back(error); };
    options.spec_limits = spec_limits_;
    options.publications_dir = publications_dir_;
    plane_ = std::make_unique<ControlPlane>(std::move(faulty), clock_, options, fs_);
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
    auto runtime = std::make_unique<testing::FakeRuntime>();
    runtime_ = runtime.get();
    plane_->AddLocalNode(node, std::move(runtime), kRunsDir);
  }

  // Submits `text` as alice; the ids of its jobs.
  std::vector<JobId> Submit(const std::string& text) {
    auto submitted = plane_->Submit(text, spec::ParseOptions{}, "", model::AdminIdentity("alice"));
    EXPECT_TRUE(submitted) << submitted.error().ToString();
    return submitted ? submitted->Ids() : std::vector<JobId>{};
  }

  // Submits a one-worker job, and reports its worker started; returns its id.
  JobId StartJob() {
    std::vector<JobId> ids = Submit(R"(kind: Job
name: train
resources: {cpu: 100m, memory: 64Mi, gpus: 1}
script: sleep 100
)");
    if (ids.empty()) return JobId(0);
    plane_->RunOnce();
    EXPECT_EQ(runtime_->Launched().size(), 1u);
    if (runtime_->Launched().empty()) return ids[0];
    runtime_->Report(Event(runtime_->Launched().back().key, Kind::kStarted, clock_.Now()));
    plane_->RunOnce();
    EXPECT_EQ(State(ids[0]), model::JobState::kRunning);
    return ids[0];
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
    fs_.WriteFile(kPolicy, text);
    return kPolicy;
  }

  bool HasQueue(const std::string& name) {
    for (const control::QueueReport& report : plane_->Queues()) {
      if (report.status.name == name) return true;
    }
    return false;
  }

  static constexpr char kRunsDir[] = "/var/lib/drover/runs";
  static constexpr char kPolicy[] = "/etc/drover/policy.yaml";
  testing::FakeClock clock_;
  testing::MemoryFileSystem fs_;
  std::unique_ptr<store::Store> store_ = store::NewMemoryStore();
  testing::FaultyStore* faulty_ = nullptr;  // owned by plane_
  std::vector<Error> store_failures_;       // what on_store_failure was called with
  spec::SpecLimits spec_limits_;            // the plane's, when OpenPlane makes it
  // The plane's ControlPlaneOptions::publications_dir, when OpenPlane makes it.
  std::string publications_dir_ = "/var/lib/drover/publications";
  testing::FakeRuntime* runtime_ = nullptr;  // owned by plane_, set by AddNode
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
  runtime_->Report(Event(key, Kind::kCheckpoint, at + 5000));
  plane_->RunOnce();
  ASSERT_EQ(LastCheckpoint(id), at + 5000);
  // Older ones (an adopted worker's marker reported again), other attempts and unknown jobs
  // change nothing and break nothing.
  runtime_->Report(Event(key, Kind::kCheckpoint, at + 1000));
  runtime_->Report(Event(model::WorkerKey{id, 7, 0}, Kind::kCheckpoint, at + 9000));
  runtime_->Report(Event(model::WorkerKey{JobId(999), 1, 0}, Kind::kCheckpoint, at + 9000));
  plane_->RunOnce();
  EXPECT_EQ(LastCheckpoint(id), at + 5000);
  std::uint64_t seen = plane_->version();
  runtime_->Report(Event(key, Kind::kCheckpoint, at + 6000));
  plane_->RunOnce();
  ASSERT_EQ(LastCheckpoint(id), at + 6000);
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
  runtime_->Report(exited);
  plane_->RunOnce();
  ASSERT_EQ(State(id), model::JobState::kSucceeded);
  auto refused = plane_->ReportCheckpoint(id);
  ASSERT_FALSE(refused);
  EXPECT_EQ(refused.error().code, ErrorCode::kFailedPrecondition);
  // A late marker event for it is ignored.
  runtime_->Report(Event(model::WorkerKey{id, 1, 0}, Kind::kCheckpoint, clock_.Now() + 1));
  plane_->RunOnce();
  EXPECT_EQ(LastCheckpoint(id), 0);
}

TEST_F(ControlPlaneTest, CancelStopsWorkersWithoutPreemption) {
  AddNode();
  ASSERT_TRUE(plane_->Start());
  JobId id = StartJob();
  ASSERT_TRUE(plane_->Cancel(id, "alice", "cancelled by alice"));
  auto stopped = runtime_->Stopped();
  ASSERT_EQ(stopped.size(), 1u);
  EXPECT_EQ(stopped[0].first, (model::WorkerKey{id, 1, 0}));
  EXPECT_FALSE(stopped[0].second.preempt);
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
  auto first = plane_->Submit(kFile, spec::ParseOptions{}, "key-1", model::AdminIdentity("alice"));
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
  plane_->RunOnce();
  ASSERT_EQ(State(prep), model::JobState::kStarting);
  // The same key again: the same jobs, each in its state now, and nothing new.
  auto again = plane_->Submit(kFile, spec::ParseOptions{}, "key-1", model::AdminIdentity("alice"));
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
  auto missing = plane_->LoadPolicyFile("/etc/drover/none.yaml");
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
  plane_->RunOnce();
  ASSERT_TRUE(HasQueue("research"));
  EXPECT_FALSE(HasQueue("team-a"));
  // A bad edit is recorded and the policy in force stays.
  WritePolicy("kind: Policy\nqueues: 7\n");
  plane_->RunOnce();
  ASSERT_TRUE(plane_->PolicyInfo().reload_error.has_value());
  EXPECT_TRUE(HasQueue("research"));
  auto reload = plane_->ReloadPolicy();
  ASSERT_FALSE(reload);
  EXPECT_EQ(reload.error().code, ErrorCode::kInvalidArgument);
  // Fixed: the error clears.
  WritePolicy(kTeams);
  plane_->RunOnce();
  ASSERT_FALSE(plane_->PolicyInfo().reload_error.has_value());
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
  // Policy(), which every request's authorization reads without the plane's mutex, answers the
  // policy in force: the old one after a refusal, the new one once installed.
  EXPECT_EQ(plane_->Policy(), plane_->PolicyInfo().policy);
  policy.queues.front().weight = 2;
  ASSERT_TRUE(plane_->SetPolicy(policy));
  ASSERT_EQ(plane_->Policy().queues.size(), 1u);
  EXPECT_EQ(plane_->Policy().queues.front().name, "bad");
  EXPECT_EQ(plane_->Policy(), plane_->PolicyInfo().policy);
}

TEST_F(ControlPlaneTest, AnEditThatIsReadOnlyOnceFailsIsRecordedOnce) {
  AddNode();
  WritePolicy(kTeams);
  ASSERT_TRUE(plane_->LoadPolicyFile(kPolicy));
  ASSERT_TRUE(plane_->Start());
  // The edit cannot be read: recorded, the policy in force stays, and an unchanged file is not
  // read again.
  WritePolicy("kind: Policy\nqueues:\n  - name: research\n");
  fs_.Fail(testing::MemoryFileSystem::Op::kRead, kPolicy);
  plane_->RunOnce();
  plane_->RunOnce();
  EXPECT_EQ(fs_.Failures(testing::MemoryFileSystem::Op::kRead, kPolicy), 1);
  ASSERT_TRUE(plane_->PolicyInfo().reload_error.has_value());
  EXPECT_TRUE(HasQueue("team-a"));
  // Readable again: the next change is taken.
  fs_.Heal();
  WritePolicy("kind: Policy\nqueues:\n  - name: research\n");
  plane_->RunOnce();
  EXPECT_TRUE(HasQueue("research"));
  EXPECT_FALSE(plane_->PolicyInfo().reload_error.has_value());
}

TEST_F(ControlPlaneTest, InputsAppearingReleaseAWaitingJob) {
  AddNode();
  ASSERT_TRUE(plane_->Start());
  std::vector<JobId> ids = Submit(R"(kind: Job
name: train
inputs: [{path: /data/train.csv}]
resources: {cpu: 100m, memory: 64Mi, gpus: 1}
script: sleep 100
)");
  ASSERT_EQ(ids.size(), 1u);
  plane_->RunOnce();
  plane_->RunOnce();
  EXPECT_EQ(State(ids[0]), model::JobState::kWaiting);
  EXPECT_TRUE(runtime_->Launched().empty());

  fs_.WriteFile("/data/train.csv", "x,y\n");
  plane_->RunOnce();
  plane_->RunOnce();
  EXPECT_EQ(State(ids[0]), model::JobState::kStarting);
  EXPECT_EQ(runtime_->Launched().size(), 1u);
}

TEST_F(ControlPlaneTest, APublishWhoseMoveFailsFailsTheAttemptAndTheRetryPublishes) {
  AddNode();
  ASSERT_TRUE(plane_->Start());
  std::vector<JobId> ids = Submit(R"(kind: Job
name: train
outputs: [{name: model, path: /out/model}]
retry: {max_attempts: 2}
resources: {cpu: 100m, memory: 64Mi, gpus: 1}
script: sleep 100
)");
  ASSERT_EQ(ids.size(), 1u);
  const JobId id = ids[0];
  // Runs attempt `attempt` to a clean exit after writing its output at the staging path.
  auto run_attempt = [&](int attempt) {
    plane_->RunOnce();
    ASSERT_EQ(runtime_->Launched().size(), static_cast<std::size_t>(attempt));
    const model::LaunchSpec launch = runtime_->Launched().back();
    ASSERT_EQ(launch.key.attempt, attempt);
    fs_.WriteFile(model::StagingPathFor("/out/model", id, attempt), "weights");
    runtime_->Report(Event(launch.key, Kind::kStarted, clock_.Now()));
    model::WorkerEvent exited = Event(launch.key, Kind::kExited, clock_.Now());
    exited.exit.exit_code = 0;
    runtime_->Report(exited);
    plane_->RunOnce();
  };

  const std::string staging = model::StagingPathFor("/out/model", id, 1);
  fs_.Fail(testing::MemoryFileSystem::Op::kRename, staging);
  run_attempt(1);
  EXPECT_EQ(fs_.Failures(testing::MemoryFileSystem::Op::kRename, staging), 1);
  model::Job job = *plane_->GetJob(id);
  ASSERT_EQ(job.attempts.size(), 2u);
  EXPECT_THAT(job.attempts[0].outcome_reason, HasSubstr("publishing outputs: output 'model'"));
  EXPECT_FALSE(fs_.Exists("/out/model"));

  fs_.Heal();
  run_attempt(2);
  EXPECT_EQ(State(id), model::JobState::kSucceeded);
  EXPECT_EQ(fs_.Contents("/out/model"), "weights");
  EXPECT_EQ(plane_->GetJob(id)->outputs.at("model"), "/out/model");
  EXPECT_FALSE(fs_.Exists(model::DirectoryOf(model::StagingPathFor("/out/model", id, 2))));
}

// The server stops (its store failed: a crash, or a leader's step-down) after it moved a job's
// output but before the job's success was persisted. Its restart publishes the attempt again:
// with the publication's record it finishes it; without (publications_dir empty), the staged
// file was gone and the job failed, though its output was published.
TEST_F(ControlPlaneTest, AServerStoppedMidPublicationFinishesItAfterItsRestart) {
  AddNode();
  ASSERT_TRUE(plane_->Start());
  std::vector<JobId> ids = Submit(R"(kind: Job
name: train
outputs: [{name: model, path: /out/model}]
resources: {cpu: 100m, memory: 64Mi, gpus: 1}
script: sleep 100
)");
  ASSERT_EQ(ids.size(), 1u);
  const JobId id = ids[0];
  fs_.WriteFile("/out/model", "old");
  plane_->RunOnce();
  ASSERT_EQ(runtime_->Launched().size(), 1u);
  const model::WorkerKey key = runtime_->Launched().back().key;
  fs_.WriteFile(model::StagingPathFor("/out/model", id, 1), "new");
  runtime_->Report(Event(key, Kind::kStarted, clock_.Now()));
  model::WorkerEvent exited = Event(key, Kind::kExited, clock_.Now());
  exited.exit.exit_code = 0;
  runtime_->Report(exited);
  faulty_->FailNthApply(2);  // the exit is persisted, the publication's answer is not
  plane_->RunOnce();
  ASSERT_EQ(store_failures_.size(), 1u);
  ASSERT_EQ(fs_.Contents("/out/model"), "new");
  ASSERT_TRUE(fs_.Exists(std::string(publications_dir_) + "/job-" + std::to_string(id.value()) +
                         ".attempt-1"));

  OpenPlane();
  AddNode();
  ASSERT_TRUE(plane_->Start());
  plane_->RunOnce();
  EXPECT_EQ(State(id), model::JobState::kSucceeded) << plane_->GetJob(id)->status_message;
  EXPECT_EQ(fs_.Contents("/out/model"), "new");
  EXPECT_EQ(plane_->GetJob(id)->outputs,
            (std::map<std::string, std::string>{{"model", "/out/model"}}));
  // Persisted: the record is gone, and so is the staging directory.
  EXPECT_FALSE(fs_.Exists(std::string(publications_dir_) + "/job-" + std::to_string(id.value()) +
                          ".attempt-1"));
  EXPECT_FALSE(fs_.Exists(model::DirectoryOf(model::StagingPathFor("/out/model", id, 1))));
}

TEST_F(ControlPlaneTest, LogsAreReadThroughTheFileSystem) {
  AddNode();
  ASSERT_TRUE(plane_->Start());
  JobId id = StartJob();
  const std::string log =
      std::string(kRunsDir) + "/" + std::to_string(id.value()) + "/1/0/stdout.log";
  fs_.WriteFile(log, "hello world\n");
  auto chunk = plane_->ReadLog(id, 0, 0, "stdout", 6, 100);
  ASSERT_TRUE(chunk) << chunk.error().ToString();
  EXPECT_EQ(chunk->data, "world\n");
  EXPECT_EQ(chunk->next_offset, 12);
  EXPECT_FALSE(chunk->finished);
  auto tail = plane_->ReadLog(id, 0, 0, "stdout", -3, 2);
  ASSERT_TRUE(tail);
  EXPECT_EQ(tail->data, "ld");
}

constexpr char kThreeJobs[] = R"(kind: Job
name: a
resources: {cpu: 100m, memory: 64Mi, gpus: 1}
script: sleep 100
---
kind: Job
name: b
resources: {cpu: 100m, memory: 64Mi, gpus: 1}
script: sleep 100
---
kind: Job
name: c
resources: {cpu: 100m, memory: 64Mi}
script: sleep 100
)";

// `launched` in the order of their jobs (the launches of one batch run in parallel, so the runtime
// records them in any order).
std::vector<model::LaunchSpec> ByJob(std::vector<model::LaunchSpec> launched) {
  std::sort(launched.begin(), launched.end(),
            [](const model::LaunchSpec& a, const model::LaunchSpec& b) { return a.key < b.key; });
  return launched;
}

// Launches per job, over every runtime a test used.
std::map<JobId, int> LaunchesPerJob(const std::vector<model::LaunchSpec>& launched) {
  std::map<JobId, int> count;
  for (const model::LaunchSpec& launch : launched) ++count[launch.key.job];
  return count;
}

TEST_F(ControlPlaneTest, AFailedWriteStopsThePlaneBeforeAnyEffectOfItsStep) {
  AddNode();
  ASSERT_TRUE(plane_->Start());
  std::vector<JobId> ids = Submit(kThreeJobs);
  ASSERT_EQ(ids.size(), 3u);
  // The scheduling cycle's step (placements, launches) is not persisted.
  faulty_->FailNthApply(1);
  plane_->RunOnce();
  ASSERT_EQ(store_failures_.size(), 1u);
  EXPECT_EQ(store_failures_[0].code, ErrorCode::kUnavailable);
  EXPECT_TRUE(runtime_->Launched().empty());
  // Stopped: nothing more is written or carried out, and changes are refused.
  const int applies = faulty_->applies();
  plane_->RunOnce();
  EXPECT_EQ(faulty_->applies(), applies);
  EXPECT_TRUE(runtime_->Launched().empty());
  auto refused =
      plane_->Submit(kThreeJobs, spec::ParseOptions{}, "", model::AdminIdentity("alice"));
  ASSERT_FALSE(refused);
  EXPECT_EQ(refused.error().code, ErrorCode::kUnavailable);
  EXPECT_EQ(store_failures_.size(), 1u);

  // A restart over the same store runs each job once.
  OpenPlane();
  AddNode();
  ASSERT_TRUE(plane_->Start());
  plane_->RunOnce();
  EXPECT_EQ(LaunchesPerJob(runtime_->Launched()),
            (std::map<JobId, int>{{ids[0], 1}, {ids[1], 1}, {ids[2], 1}}));
}

TEST_F(ControlPlaneTest, NoJobIsLostOrRunTwiceWhenTheStoreFailsMidWay) {
  AddNode();
  ASSERT_TRUE(plane_->Start());
  std::vector<JobId> ids = Submit(kThreeJobs);
  ASSERT_EQ(ids.size(), 3u);
  plane_->RunOnce();  // all three launched and persisted
  std::vector<model::LaunchSpec> launched = ByJob(runtime_->Launched());
  ASSERT_EQ(launched.size(), 3u);
  // a starts, b exits cleanly; c's start is the write that fails.
  runtime_->Report(Event(launched[0].key, Kind::kStarted, clock_.Now()));
  model::WorkerEvent exited = Event(launched[1].key, Kind::kExited, clock_.Now());
  exited.exit.exit_code = 0;
  runtime_->Report(Event(launched[1].key, Kind::kStarted, clock_.Now()));
  runtime_->Report(exited);
  plane_->RunOnce();
  faulty_->FailNthApply(1, ErrorCode::kInternal);
  runtime_->Report(Event(launched[2].key, Kind::kStarted, clock_.Now()));
  plane_->RunOnce();
  ASSERT_EQ(store_failures_.size(), 1u);

  // The restarted plane adopts the three workers (their supervisors outlived the server):
  // nothing is launched again, and c's start is reported again by its supervisor.
  OpenPlane();
  AddNode();
  ASSERT_TRUE(plane_->Start());
  plane_->RunOnce();
  EXPECT_TRUE(runtime_->Launched().empty());
  EXPECT_EQ(State(ids[0]), model::JobState::kRunning);
  EXPECT_EQ(State(ids[1]), model::JobState::kSucceeded);
  EXPECT_EQ(State(ids[2]), model::JobState::kStarting);
  runtime_->Report(Event(launched[2].key, Kind::kStarted, clock_.Now()));
  plane_->RunOnce();
  EXPECT_EQ(State(ids[2]), model::JobState::kRunning);
  EXPECT_EQ(LaunchesPerJob(launched),
            (std::map<JobId, int>{{ids[0], 1}, {ids[1], 1}, {ids[2], 1}}));
  EXPECT_TRUE(store_failures_.size() == 1u);
}

// How long a test waits for API calls made while a launch is blocked. They return at once;
// the deadline only turns a call that waits for the launch (the plane's mutex held through it,
// as before effects ran outside it) into a failure instead of a hang. A passing run never
// waits for it.
constexpr std::chrono::seconds kWatchdog{30};

bool ReturnedMeanwhile(std::future<void>& calls) {
  return calls.wait_for(kWatchdog) == std::future_status::ready;
}

// The scheduling cycles the plane ran so far (the count of its cycle-duration histogram).
int CyclesRun(const ControlPlane& plane) {
  int cycles = 0;
  const std::string text = plane.MetricsText();
  for (std::size_t at = text.find("drover_admission_attempt_duration_seconds_count");
       at != std::string::npos;
       at = text.find("drover_admission_attempt_duration_seconds_count", at + 1)) {
    const std::size_t value = text.find(' ', text.find('}', at));
    cycles += std::stoi(text.substr(value + 1));
  }
  return cycles;
}

TEST_F(ControlPlaneTest, WithNothingRunningTheLoopPollsOncePerIdleCycleAndWhileAJobRunsSeesItEnd) {
  OpenPlane(/*run_loop=*/true);
  AddNode();
  ASSERT_TRUE(plane_->Start());
  ASSERT_TRUE(testing::WaitUntil([&] { return CyclesRun(*plane_) >= 1; }));
  const int polls = runtime_->Polls();
  const int cycles = CyclesRun(*plane_);
  // Idle: a turn (one poll) when the next idle cycle is due, not one every poll_interval_ms
  // (5 ms: 50 polls per 250 ms idle cycle).
  ASSERT_TRUE(testing::WaitUntil([&] { return CyclesRun(*plane_) >= cycles + 4; },
                                 std::chrono::seconds(30)));
  EXPECT_LE(runtime_->Polls() - polls, 2 * (CyclesRun(*plane_) - cycles) + 2);

  // A job holds capacity: the loop polls again, and sees its worker start and exit.
  const std::vector<JobId> ids = Submit(R"(kind: Job
name: train
resources: {cpu: 100m, memory: 64Mi, gpus: 1}
script: sleep 100
)");
  ASSERT_EQ(ids.size(), 1u);
  ASSERT_TRUE(testing::WaitUntil([&] { return !runtime_->Launched().empty(); }));
  const model::WorkerKey key = runtime_->Launched().front().key;
  runtime_->Report(Event(key, Kind::kStarted, clock_.Now()));
  ASSERT_TRUE(testing::WaitUntil([&] { return State(ids[0]) == model::JobState::kRunning; }));
  model::WorkerEvent exited = Event(key, Kind::kExited, clock_.Now());
  exited.exit.exit_code = 0;
  runtime_->Report(exited);
  EXPECT_TRUE(testing::WaitUntil([&] { return State(ids[0]) == model::JobState::kSucceeded; }));
  plane_->Stop();
}

TEST_F(ControlPlaneTest, TheApiAnswersWhileTheLoopIsLaunching) {
  OpenPlane(/*run_loop=*/true);
  AddNode();
  runtime_->BlockLaunches();
  ASSERT_TRUE(plane_->Start());
  std::vector<JobId> ids = Submit(kThreeJobs);
  ASSERT_EQ(ids.size(), 3u);
  const model::LaunchSpec blocked = runtime_->WaitForBlockedLaunch();
  const JobId launching = blocked.key.job;

  std::future<void> calls = std::async(std::launch::async, [&] {
    EXPECT_EQ(State(launching), model::JobState::kStarting);
    EXPECT_EQ(plane_->ListJobs(store::JobFilter{}).size(), 3u);
    EXPECT_EQ(plane_->Nodes().size(), 1u);
    EXPECT_EQ(Submit(kThreeJobs).size(), 3u);
    EXPECT_TRUE(plane_->Cancel(launching, "alice", "cancelled by alice"));
  });
  const bool returned = ReturnedMeanwhile(calls);
  // The cancellation's stop waits for the launch it follows.
  const size_t stopped_meanwhile = runtime_->Stopped().size();
  runtime_->ReleaseLaunches();
  calls.get();
  EXPECT_TRUE(returned) << "API calls waited for a launch in progress";
  EXPECT_EQ(stopped_meanwhile, 0u);
  ASSERT_TRUE(testing::WaitUntil([&] { return !runtime_->Stopped().empty(); }));
  EXPECT_EQ(runtime_->Stopped()[0].first, blocked.key);
  EXPECT_EQ(LaunchesPerJob(runtime_->Launched())[launching], 1);
  plane_->Stop();
}

TEST_F(ControlPlaneTest, AStopFollowsItsLaunchAndAFailedWriteDropsItsOwnEffectsOnly) {
  AddNode();
  ASSERT_TRUE(plane_->Start());
  std::vector<JobId> ids = Submit(kThreeJobs);
  ASSERT_EQ(ids.size(), 3u);
  runtime_->BlockLaunches();
  std::thread turn([&] { plane_->RunOnce(); });  // launches a, b, c at once: all three blocked
  std::optional<std::vector<model::LaunchSpec>> waiting =
      runtime_->WaitForBlockedLaunches(3, kWatchdog);
  if (!waiting) runtime_->ReleaseLaunches();
  ASSERT_TRUE(waiting) << "the launches of one cycle were not carried out at once";
  const model::LaunchSpec blocked = ByJob(*waiting)[0];
  ASSERT_EQ(blocked.key.job, ids[0]);

  Status cancelled_a, cancelled_b;
  std::future<void> calls = std::async(std::launch::async, [&] {
    cancelled_a =
        plane_->Cancel(ids[0], "alice", "cancelled by alice");  // persisted, its stop queued
    faulty_->FailNthApply(1);
    cancelled_b = plane_->Cancel(ids[1], "alice", "cancelled by alice");  // not persisted: no stop
  });
  const bool returned = ReturnedMeanwhile(calls);
  const size_t stopped_meanwhile = runtime_->Stopped().size();
  runtime_->ReleaseLaunches();
  turn.join();
  calls.get();
  EXPECT_TRUE(returned) << "API calls waited for a launch in progress";
  EXPECT_EQ(stopped_meanwhile, 0u);
  EXPECT_TRUE(cancelled_a);
  ASSERT_FALSE(cancelled_b);
  EXPECT_EQ(cancelled_b.error().code, ErrorCode::kUnavailable);
  ASSERT_EQ(store_failures_.size(), 1u);
  // The launches persisted before the failure ran, then a's stop; b's stop never did.
  EXPECT_EQ(LaunchesPerJob(runtime_->Launched()),
            (std::map<JobId, int>{{ids[0], 1}, {ids[1], 1}, {ids[2], 1}}));
  ASSERT_EQ(runtime_->Stopped().size(), 1u);
  EXPECT_EQ(runtime_->Stopped()[0].first, blocked.key);
}

TEST_F(ControlPlaneTest, TheLaunchesOfACycleRunInParallelAndAStopStillFollowsItsLaunch) {
  AddNode();
  ASSERT_TRUE(plane_->Start());
  std::vector<JobId> ids = Submit(kThreeJobs);
  ASSERT_EQ(ids.size(), 3u);
  runtime_->BlockLaunches();
  std::thread turn([&] { plane_->RunOnce(); });
  // One after another, a second launch would never start while the first is blocked.
  std::optional<std::vector<model::LaunchSpec>> waiting =
      runtime_->WaitForBlockedLaunches(3, kWatchdog);
  std::optional<Status> cancelled;
  std::size_t stopped_meanwhile = 0;
  if (waiting) {
    // Cancelled while its launch is in flight: the stop is queued behind the launch.
    std::future<Status> cancel =
        std::async(std::launch::async, [&] { return plane_->Cancel(ids[1], "alice", "by alice"); });
    if (cancel.wait_for(kWatchdog) == std::future_status::ready) cancelled = cancel.get();
    stopped_meanwhile = runtime_->Stopped().size();
  }
  runtime_->ReleaseLaunches();
  turn.join();
  ASSERT_TRUE(waiting) << "the launches of one cycle were carried out one after another";
  ASSERT_TRUE(cancelled) << "the cancellation waited for the launches";
  EXPECT_TRUE(*cancelled);
  EXPECT_EQ(stopped_meanwhile, 0u);
  EXPECT_EQ(LaunchesPerJob(runtime_->Launched()),
            (std::map<JobId, int>{{ids[0], 1}, {ids[1], 1}, {ids[2], 1}}));
  // The turn's runner carried out the stop queued meanwhile, after the launches.
  ASSERT_EQ(runtime_->Stopped().size(), 1u);
  EXPECT_EQ(runtime_->Stopped()[0].first.job, ids[1]);
}

TEST_F(ControlPlaneTest, AFailedLaunchAmongParallelOnesIsFedBackAsItsWorkersExit) {
  AddNode();
  ASSERT_TRUE(plane_->Start());
  std::vector<JobId> ids = Submit(kThreeJobs);
  ASSERT_EQ(ids.size(), 3u);
  runtime_->FailLaunchesOf(ids[1], Internal("cannot spawn the supervisor").value());
  plane_->RunOnce();
  EXPECT_EQ(LaunchesPerJob(runtime_->Launched()),
            (std::map<JobId, int>{{ids[0], 1}, {ids[1], 1}, {ids[2], 1}}));
  EXPECT_EQ(State(ids[0]), model::JobState::kStarting);
  EXPECT_EQ(State(ids[2]), model::JobState::kStarting);
  auto failed = plane_->GetJob(ids[1]);
  ASSERT_TRUE(failed);
  EXPECT_EQ(failed->state, model::JobState::kFailed);
  EXPECT_THAT(failed->status_message, HasSubstr("launch failed: cannot spawn the supervisor"));
}

TEST_F(ControlPlaneTest, AFailedLaunchIsFedBackAndPersistedAsTheWorkersExit) {
  AddNode();
  ASSERT_TRUE(plane_->Start());
  std::vector<JobId> ids = Submit(R"(kind: Job
name: train
resources: {cpu: 100m, memory: 64Mi}
script: sleep 100
)");
  ASSERT_EQ(ids.size(), 1u);
  runtime_->FailLaunches(Internal("cannot spawn the supervisor").value());
  plane_->RunOnce();
  ASSERT_EQ(runtime_->Launched().size(), 1u);
  // The turn ended with the failure fed back and persisted: a restarted plane sees it.
  OpenPlane();
  AddNode();
  ASSERT_TRUE(plane_->Start());
  auto job = plane_->GetJob(ids[0]);
  ASSERT_TRUE(job);
  EXPECT_EQ(job->state, model::JobState::kFailed);
  ASSERT_NE(job->current_attempt(), nullptr);
  EXPECT_THAT(job->status_message, HasSubstr("launch failed: cannot spawn the supervisor"));
  EXPECT_TRUE(runtime_->Launched().empty());
}

TEST_F(ControlPlaneTest, SubmissionsKeepThePlanesSpecLimitsWhateverTheCallerAsks) {
  spec_limits_.max_arg_bytes = 16;
  OpenPlane();
  AddNode();
  spec::ParseOptions unbounded;
  unbounded.limits.max_arg_bytes = 0;  // a caller cannot lift the server's bound
  auto submitted = plane_->Submit("kind: Job\nname: long\ncommand: [echo, seventeen-bytes-x]\n",
                                  unbounded, "", model::AdminIdentity("alice"));
  ASSERT_FALSE(submitted);
  EXPECT_EQ(submitted.error().code, ErrorCode::kInvalidArgument);
  EXPECT_THAT(submitted.error().ToString(), HasSubstr("command[1]"));
  EXPECT_THAT(submitted.error().ToString(), HasSubstr("16"));
  EXPECT_TRUE(plane_->ListJobs(store::JobFilter{}).empty());
  auto at_the_bound = plane_->Submit("kind: Job\nname: short\ncommand: [echo, sixteen-bytes-xx]\n",
                                     unbounded, "", model::AdminIdentity("alice"));
  EXPECT_TRUE(at_the_bound) << at_the_bound.error().ToString();
}

}  // namespace
}  // namespace drover::server
