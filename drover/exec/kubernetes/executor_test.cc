#include "drover/exec/kubernetes/executor.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <chrono>
#include <thread>

#include "drover/exec/kubernetes/fake_api_server.h"

namespace drover::exec::kubernetes {
namespace {

using nlohmann::json;
using Kind = model::ExecutorEvent::Kind;
using ::testing::Contains;
using ::testing::ElementsAre;
using ::testing::HasSubstr;

constexpr char kJobs[] = "/apis/batch/v1/namespaces/ml/jobs";
constexpr char kPods[] = "/api/v1/namespaces/ml/pods";
constexpr char kServices[] = "/api/v1/namespaces/ml/services";

model::ExternalLaunch Launch(std::int64_t job, int workers = 1) {
  model::ExternalLaunch launch;
  launch.ref.job = JobId(job);
  launch.ref.attempt = 1;
  launch.ref.executor = model::ExecutorKind::kKubernetes;
  launch.ref.name = model::ExternalName(launch.ref.job, 1);
  launch.executor.kind = model::ExecutorKind::kKubernetes;
  launch.executor.kubernetes.namespace_name = "ml";
  launch.executor.kubernetes.image = "busybox:1.36";
  launch.spec.name = "train";
  launch.spec.script = "echo hi";
  launch.spec.workers = workers;
  launch.spec.requirements.per_worker = {.cpu_millis = 1000, .memory_bytes = 1LL << 30, .gpus = 1};
  launch.env = {{"DROVER_MASTER_PORT", "30000"}};
  return launch;
}

class ExecutorTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_TRUE(server_.Start());
    auto config = ParseKubeConfig(server_.KubeConfigYaml("ml"), "kubeconfig", "");
    ASSERT_TRUE(config) << config.error().ToString();
    ExecutorOptions options;
    options.watch_timeout_seconds = 2;
    options.retry_pause_ms = 100;
    auto executor = KubernetesExecutor::Create(*config, options);
    ASSERT_TRUE(executor) << executor.error().ToString();
    executor_ = std::move(*executor);
  }

  // The next event of `kind` for attempt `name` not returned before; fails after 15 s.
  model::ExecutorEvent Next(const std::string& name, Kind kind) {
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(15);
    while (true) {
      for (model::ExecutorEvent& event : executor_->Poll()) seen_.push_back(std::move(event));
      for (std::size_t i = 0; i < seen_.size(); ++i) {
        if (seen_[i].ref.name == name && seen_[i].kind == kind && !taken_.contains(i)) {
          taken_.insert(i);
          return seen_[i];
        }
      }
      if (std::chrono::steady_clock::now() > deadline) {
        ADD_FAILURE() << "no event of kind " << static_cast<int>(kind) << " for " << name;
        return {};
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
  }

  // Waits until `condition` holds; fails after 15 s.
  template <typename Condition>
  void Eventually(Condition condition, const std::string& what) {
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(15);
    while (!condition()) {
      if (std::chrono::steady_clock::now() > deadline) {
        ADD_FAILURE() << "timed out waiting for " << what;
        return;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
  }

  // The kinds reported for `name` so far, in order.
  std::vector<Kind> KindsOf(const std::string& name) {
    for (model::ExecutorEvent& event : executor_->Poll()) seen_.push_back(std::move(event));
    std::vector<Kind> kinds;
    for (const model::ExecutorEvent& event : seen_) {
      if (event.ref.name == name) kinds.push_back(event.kind);
    }
    return kinds;
  }

  FakeApiServer server_;
  std::unique_ptr<KubernetesExecutor> executor_;
  std::vector<model::ExecutorEvent> seen_;
  std::set<std::size_t> taken_;
};

TEST_F(ExecutorTest, ReportsSubmittedStartedAndExitedForAGangThatCompletes) {
  ASSERT_TRUE(executor_->Submit(Launch(7, 2)));
  const model::ExecutorEvent submitted = Next("drover-7-1", Kind::kSubmitted);
  EXPECT_EQ(submitted.ref.external_id, "ml/drover-7-1");
  EXPECT_GT(submitted.at, 0);
  ASSERT_TRUE(server_.Find(kJobs, "drover-7-1"));
  ASSERT_TRUE(server_.Find(kServices, "drover-7-1"));  // rank 0's address

  server_.RunPods("ml", "drover-7-1", {"node-a", "node-b"});
  const model::ExecutorEvent started = Next("drover-7-1", Kind::kStarted);
  EXPECT_THAT(started.nodes, ElementsAre("node-a", "node-b"));
  EXPECT_EQ(started.ref.external_id, "ml/drover-7-1");

  server_.EndPod("ml", "drover-7-1", 0, 0);
  server_.EndPod("ml", "drover-7-1", 1, 0);
  server_.FinishJob("ml", "drover-7-1", "Complete");
  const model::ExecutorEvent exited = Next("drover-7-1", Kind::kExited);
  EXPECT_TRUE(exited.exit.Succeeded()) << exited.exit.Describe();
  // The Service goes once the attempt is over; the Job stays for its logs.
  Eventually([&] { return !server_.Find(kServices, "drover-7-1"); }, "the Service deleted");
  EXPECT_TRUE(server_.Find(kJobs, "drover-7-1"));
  EXPECT_THAT(KindsOf("drover-7-1"), ElementsAre(Kind::kSubmitted, Kind::kStarted, Kind::kExited));
}

TEST_F(ExecutorTest, AFailedWorkerReportsItsExitCode) {
  ASSERT_TRUE(executor_->Submit(Launch(8)));
  Next("drover-8-1", Kind::kSubmitted);
  server_.RunPods("ml", "drover-8-1", {"node-c"});
  Next("drover-8-1", Kind::kStarted);
  server_.EndPod("ml", "drover-8-1", 0, 3);
  server_.FinishJob("ml", "drover-8-1", "Failed", "BackoffLimitExceeded");
  const model::ExecutorEvent exited = Next("drover-8-1", Kind::kExited);
  EXPECT_EQ(exited.exit.exit_code, 3);
  EXPECT_FALSE(exited.exit.preempted);
  EXPECT_THAT(exited.exit.message, HasSubstr("pod drover-8-1-0-fake on node node-c"));
}

// The container's own deadline (render.cc): it stops the worker at the timeout, says so in its
// termination message and exits with the worker's status (143 after SIGTERM).
TEST_F(ExecutorTest, AWorkerStoppedAtItsTimeoutByItsContainerIsTimedOut) {
  ASSERT_TRUE(executor_->Submit(Launch(12)));
  Next("drover-12-1", Kind::kSubmitted);
  server_.RunPods("ml", "drover-12-1", {"node-e"});
  Next("drover-12-1", Kind::kStarted);
  server_.EndPod("ml", "drover-12-1", 0, 143, "", "", "drover: timed out after 60.000s\n");
  server_.FinishJob("ml", "drover-12-1", "Failed", "BackoffLimitExceeded");
  const model::ExitStatus exit = Next("drover-12-1", Kind::kExited).exit;
  EXPECT_TRUE(exit.timed_out);
  EXPECT_EQ(exit.exit_code, 143);
  EXPECT_THAT(exit.message, HasSubstr("drover: timed out after 60.000s"));
}

TEST_F(ExecutorTest, DeadlinesPreemptionsAndLostNodesAreClassified) {
  ASSERT_TRUE(executor_->Submit(Launch(9)));
  ASSERT_TRUE(executor_->Submit(Launch(10)));
  ASSERT_TRUE(executor_->Submit(Launch(11)));
  for (const char* name : {"drover-9-1", "drover-10-1", "drover-11-1"}) {
    Next(name, Kind::kSubmitted);
    server_.RunPods("ml", name, {"node-d"});
    Next(name, Kind::kStarted);
  }
  server_.FinishJob("ml", "drover-9-1", "Failed", "DeadlineExceeded");
  EXPECT_TRUE(Next("drover-9-1", Kind::kExited).exit.timed_out);

  server_.EndPod("ml", "drover-10-1", 0, 137, "", "PreemptionByScheduler");
  server_.FinishJob("ml", "drover-10-1", "Failed", "BackoffLimitExceeded");
  const model::ExitStatus preempted = Next("drover-10-1", Kind::kExited).exit;
  EXPECT_TRUE(preempted.preempted);
  EXPECT_THAT(preempted.message, HasSubstr("PreemptionByScheduler"));

  server_.EndPod("ml", "drover-11-1", 0, 137, "", "DeletionByTaintManager");
  server_.FinishJob("ml", "drover-11-1", "Failed", "BackoffLimitExceeded");
  EXPECT_TRUE(Next("drover-11-1", Kind::kExited).exit.node_lost);
}

TEST_F(ExecutorTest, CancelDeletesTheJobInTheBackground) {
  ASSERT_TRUE(executor_->Submit(Launch(12)));
  ASSERT_TRUE(executor_->Submit(Launch(13)));
  Next("drover-12-1", Kind::kSubmitted);
  Next("drover-13-1", Kind::kSubmitted);
  server_.RunPods("ml", "drover-12-1", {"node-e"});
  Next("drover-12-1", Kind::kStarted);

  ASSERT_TRUE(executor_->Cancel(Launch(12).ref, {}));
  ASSERT_TRUE(executor_->Cancel(Launch(12).ref, {}));  // twice is not an error
  const model::ExecutorEvent cancelled = Next("drover-12-1", Kind::kExited);
  EXPECT_TRUE(cancelled.exit.cancelled);
  EXPECT_FALSE(server_.Find(kJobs, "drover-12-1"));
  EXPECT_TRUE(server_.Items(kPods).empty());  // propagationPolicy Background took the pods

  ASSERT_TRUE(executor_->Cancel(Launch(13).ref, {.preempt = true, .reason = "preempted by 4"}));
  const model::ExecutorEvent preempted = Next("drover-13-1", Kind::kExited);
  EXPECT_TRUE(preempted.exit.preempted);
  EXPECT_EQ(preempted.exit.message, "preempted by 4");

  EXPECT_EQ(executor_->Cancel(Launch(99).ref, {}).error().code, ErrorCode::kNotFound);
}

// Someone deleted the Job (kubectl delete): the attempt ends cancelled, not retried as a lost node.
TEST_F(ExecutorTest, ADeletionOutsideDroverCancels) {
  ASSERT_TRUE(executor_->Submit(Launch(14)));
  Next("drover-14-1", Kind::kSubmitted);
  server_.Remove(kJobs, "drover-14-1");
  const model::ExecutorEvent exited = Next("drover-14-1", Kind::kExited);
  EXPECT_TRUE(exited.exit.cancelled);
  EXPECT_FALSE(exited.exit.node_lost);
  EXPECT_THAT(exited.exit.message, HasSubstr("deleted outside Drover"));
}

TEST_F(ExecutorTest, SubmitIsIdempotentByNameAndAdoptsAJobCreatedBefore) {
  // A Job of this attempt created by an earlier server process.
  json earlier = Render(Launch(15))->objects.back();
  server_.Put(kJobs, earlier);
  ASSERT_TRUE(executor_->Submit(Launch(15)));
  ASSERT_TRUE(executor_->Submit(Launch(15)));
  EXPECT_EQ(Next("drover-15-1", Kind::kSubmitted).ref.external_id, "ml/drover-15-1");
  server_.FinishJob("ml", "drover-15-1", "Complete");
  EXPECT_TRUE(Next("drover-15-1", Kind::kExited).exit.Succeeded());
  int posts = 0;
  for (const std::string& request : server_.requests()) {
    if (request.rfind("POST /apis/batch/v1/namespaces/ml/jobs", 0) == 0) ++posts;
  }
  EXPECT_EQ(posts, 1);  // the second Submit sent nothing; the first got 409 and adopted
  EXPECT_THAT(KindsOf("drover-15-1"), ElementsAre(Kind::kSubmitted, Kind::kStarted, Kind::kExited));
}

TEST_F(ExecutorTest, ANameTakenByAnotherObjectIsRefused) {
  json stranger = Render(Launch(16))->objects.back();
  stranger["metadata"]["labels"]["drover.dev/attempt-name"] = "someone-else";
  server_.Put(kJobs, stranger);
  ASSERT_TRUE(executor_->Submit(Launch(16)));
  const model::ExecutorEvent exited = Next("drover-16-1", Kind::kExited);
  EXPECT_FALSE(exited.exit.Succeeded());
  EXPECT_THAT(exited.exit.message, HasSubstr("that Drover did not create"));
}

TEST_F(ExecutorTest, SubmitRefusesWhatCannotBeRendered) {
  model::ExternalLaunch launch = Launch(17);
  launch.executor.kubernetes.image.clear();
  auto refused = executor_->Submit(launch);
  ASSERT_FALSE(refused);
  EXPECT_EQ(refused.error().code, ErrorCode::kInvalidArgument);
  EXPECT_THAT(refused.error().message, HasSubstr("image: required"));
}

TEST_F(ExecutorTest, PendingReasonsComeFromKueueAndTheScheduler) {
  model::ExternalLaunch launch = Launch(18);
  launch.executor.kubernetes.kueue_queue = "team-a";
  ASSERT_TRUE(executor_->Submit(launch));
  Next("drover-18-1", Kind::kSubmitted);
  server_.Patch(kJobs, "drover-18-1", {{"spec", {{"suspend", true}}}});
  EXPECT_EQ(Next("drover-18-1", Kind::kPending).reason, "queued in Kueue (LocalQueue team-a)");

  server_.Patch(kJobs, "drover-18-1", {{"spec", {{"suspend", false}}}});
  json pod = {{"metadata",
               {{"name", "drover-18-1-0-x"},
                {"namespace", "ml"},
                {"labels",
                 {{"app.kubernetes.io/managed-by", "drover"},
                  {"drover.dev/attempt-name", "drover-18-1"}}}}},
              {"spec", json::object()},
              {"status",
               {{"phase", "Pending"},
                {"conditions",
                 json::array({{{"type", "PodScheduled"},
                               {"status", "False"},
                               {"reason", "Unschedulable"},
                               {"message",
                                "0/3 nodes are available: 3 Insufficient nvidia.com/gpu."}}})}}}};
  server_.Put(kPods, pod);
  EXPECT_EQ(Next("drover-18-1", Kind::kPending).reason,
            "Unschedulable: 0/3 nodes are available: 3 Insufficient nvidia.com/gpu.");
}

TEST_F(ExecutorTest, AdoptResumesKnownAttemptsAndReportsVanishedOnes) {
  json earlier = Render(Launch(19))->objects.back();
  server_.Put(kJobs, earlier);
  model::ExternalRef known = Launch(19).ref;
  known.external_id = "ml/drover-19-1";
  model::ExternalRef vanished = Launch(20).ref;
  vanished.external_id = "ml/drover-20-1";
  executor_->Adopt({known, vanished});

  const model::ExecutorEvent lost = Next("drover-20-1", Kind::kExited);
  EXPECT_TRUE(lost.exit.node_lost);
  EXPECT_THAT(lost.exit.message, HasSubstr("no Kubernetes Job named drover-20-1"));

  server_.RunPods("ml", "drover-19-1", {"node-f"});
  Next("drover-19-1", Kind::kStarted);
  server_.EndPod("ml", "drover-19-1", 0, 0);
  server_.FinishJob("ml", "drover-19-1", "Complete");
  EXPECT_TRUE(Next("drover-19-1", Kind::kExited).exit.Succeeded());
  // Submitted before the restart: not reported again.
  EXPECT_THAT(KindsOf("drover-19-1"), ElementsAre(Kind::kStarted, Kind::kExited));
}

TEST_F(ExecutorTest, KeepsWatchingThroughExpiredWatchesAndThrottling) {
  ASSERT_TRUE(executor_->Submit(Launch(21)));
  Next("drover-21-1", Kind::kSubmitted);
  // Every open watch ends and its resourceVersion is too old: both reflectors must re-list.
  server_.Compact();
  server_.DropWatches();
  server_.Throttle(2, 1);
  server_.RunPods("ml", "drover-21-1", {"node-g"});
  EXPECT_THAT(Next("drover-21-1", Kind::kStarted).nodes, ElementsAre("node-g"));
  server_.EndPod("ml", "drover-21-1", 0, 0);
  server_.FinishJob("ml", "drover-21-1", "Complete");
  EXPECT_TRUE(Next("drover-21-1", Kind::kExited).exit.Succeeded());
  EXPECT_THAT(KindsOf("drover-21-1"), ElementsAre(Kind::kSubmitted, Kind::kStarted, Kind::kExited));
}

}  // namespace
}  // namespace drover::exec::kubernetes
