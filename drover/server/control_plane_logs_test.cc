// ControlPlane's worker logs (control_plane_logs.cc): what remote agents ship is kept once, in
// order, within its bounds, and read back as a local worker's log is; a job not started yet
// reads as such. The test plays node-r's agent through the plane's agent calls, over an
// in-memory file system.

#include <fmt/format.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <memory>
#include <string>

#include "drover/sched/sched_test_util.h"
#include "drover/server/control_plane.h"
#include "drover/testing/fake_clock.h"
#include "drover/testing/fake_runtime.h"
#include "drover/testing/memory_file_system.h"

namespace drover::server {
namespace {

using ::testing::HasSubstr;

constexpr char kLogs[] = "/data/remote-logs";

class RemoteLogsTest : public ::testing::Test {
 protected:
  void Open(ControlPlaneOptions options) {
    options.run_loop = false;
    plane_ = std::make_unique<ControlPlane>(store::NewMemoryStore(), clock_, options, fs_);
    ASSERT_TRUE(plane_->Start());
    api::Caller agent;
    agent.bearer = true;
    agent.agent = NodeId("node-r");
    agent.joined = true;
    ASSERT_TRUE(plane_->RegisterRemoteNode(
        sched::testing::MakeNode("node-r", 1, "A100", 8000, 64 * sched::testing::kGi,
                                 40 * sched::testing::kGi),
        agent));
  }
  void Open() {
    ControlPlaneOptions options;
    options.remote_logs_dir = kLogs;
    Open(options);
  }

  // Submits a one-GPU job (it runs on node-r, the only node); its id.
  JobId SubmitJob() {
    auto submitted = plane_->Submit(
        "kind: Job\nname: train\nresources: {cpu: 100m, memory: 64Mi, gpus: 1}\nscript: x\n",
        spec::ParseOptions{}, "", model::AdminIdentity("alice"));
    EXPECT_TRUE(submitted) << submitted.error().ToString();
    return submitted ? submitted->jobs.at(0).id : JobId(0);
  }

  // Runs `job`'s attempt 1 on node-r (launched, reported started); its worker's key.
  model::WorkerKey Start(JobId job) {
    plane_->RunOnce();
    const model::WorkerKey key{job, 1, 0};
    model::WorkerEvent started{key, model::WorkerEvent::Kind::kStarted, clock_.Now(), {}};
    EXPECT_TRUE(plane_->ReportEvents(NodeId("node-r"), {started}));
    plane_->RunOnce();
    return key;
  }

  Result<api::RemoteLogAck> Ship(const model::WorkerKey& key, std::int64_t offset,
                                 std::string_view data, const std::string& stream = "stdout",
                                 const std::string& node = "node-r") {
    return plane_->AppendRemoteLog(NodeId(node), key, stream, offset, data);
  }

  std::string Kept(const model::WorkerKey& key, const std::string& stream = "stdout") {
    return fs_.Contents(fmt::format("{}/node-r/{}/1/0/{}.log", kLogs, key.job.value(), stream))
        .value_or("<none>");
  }

  testing::MemoryFileSystem fs_;
  testing::FakeClock clock_;
  std::unique_ptr<ControlPlane> plane_;
};

TEST_F(RemoteLogsTest, ChunksAreKeptOnceInOrderAndReadLikeALocalLog) {
  Open();
  const model::WorkerKey key = Start(SubmitJob());

  auto first = Ship(key, 0, "hello ");
  ASSERT_TRUE(first) << first.error().ToString();
  EXPECT_EQ(first->size, 6);
  EXPECT_FALSE(first->full);
  EXPECT_EQ(Ship(key, 0, "hello ")->size, 6);        // sent again: kept once
  EXPECT_EQ(Ship(key, 9, "past the end")->size, 6);  // would leave a hole: not kept
  EXPECT_EQ(Ship(key, 3, "lo world\n")->size, 12);   // overlaps: only the new bytes
  EXPECT_EQ(Kept(key), "hello world\n");
  EXPECT_EQ(Ship(key, 0, "err\n", "stderr")->size, 4);
  EXPECT_EQ(Kept(key, "stderr"), "err\n");

  auto running = plane_->ReadLog(key.job, 0, 0, "stdout", 6, 100);
  ASSERT_TRUE(running) << running.error().ToString();
  EXPECT_EQ(running->data, "world\n");
  EXPECT_EQ(running->next_offset, 12);
  EXPECT_EQ(running->attempt, 1);
  EXPECT_TRUE(running->started);
  EXPECT_FALSE(running->finished);  // the worker still runs

  model::WorkerEvent exited{key, model::WorkerEvent::Kind::kExited, clock_.Now(), {}};
  exited.exit.exit_code = 0;
  ASSERT_TRUE(plane_->ReportEvents(NodeId("node-r"), {exited}));
  plane_->RunOnce();
  auto done = plane_->ReadLog(key.job, 0, 0, "stdout", 0, 100);
  ASSERT_TRUE(done);
  EXPECT_EQ(done->data, "hello world\n");
  EXPECT_TRUE(done->finished);
  EXPECT_EQ(done->job_state, "succeeded");
}

TEST_F(RemoteLogsTest, HostileChunksAreRefusedAndChangeNothing) {
  Open();
  const model::WorkerKey key = Start(SubmitJob());
  ASSERT_TRUE(Ship(key, 0, "ok\n"));

  auto stream = Ship(key, 3, "x", "../../etc/passwd");
  ASSERT_FALSE(stream);
  EXPECT_EQ(stream.error().code, ErrorCode::kInvalidArgument);
  EXPECT_THAT(stream.error().message, HasSubstr("stream: must be stdout or stderr"));
  auto offset = Ship(key, -1, "x");
  ASSERT_FALSE(offset);
  EXPECT_EQ(offset.error().code, ErrorCode::kInvalidArgument);
  EXPECT_THAT(offset.error().message, HasSubstr("offset"));
  for (const model::WorkerKey& other :
       {model::WorkerKey{key.job, 2, 0}, model::WorkerKey{key.job, 1, 1},
        model::WorkerKey{JobId(key.job.value() + 1), 1, 0}}) {
    auto unknown = Ship(other, 0, "x");
    ASSERT_FALSE(unknown);
    EXPECT_EQ(unknown.error().code, ErrorCode::kNotFound);
  }
  // Another node's agent may not write this node's worker's log.
  auto foreign = Ship(key, 3, "x", "stdout", "node-s");
  ASSERT_FALSE(foreign);
  EXPECT_EQ(foreign.error().code, ErrorCode::kNotFound);
  EXPECT_EQ(Kept(key), "ok\n");
}

TEST_F(RemoteLogsTest, AStreamIsKeptUpToTheLimitThenFull) {
  ControlPlaneOptions options;
  options.remote_logs_dir = kLogs;
  options.max_remote_log_bytes = 8;
  Open(options);
  const model::WorkerKey key = Start(SubmitJob());
  auto cut = Ship(key, 0, "0123456789");
  ASSERT_TRUE(cut);
  EXPECT_EQ(cut->size, 8);
  EXPECT_TRUE(cut->full);
  auto more = Ship(key, 8, "89");
  ASSERT_TRUE(more);
  EXPECT_EQ(more->size, 8);
  EXPECT_TRUE(more->full);
  EXPECT_EQ(Kept(key), "01234567");
}

TEST_F(RemoteLogsTest, WithoutARemoteLogsDirRemoteLogsStayOnTheirNode) {
  Open(ControlPlaneOptions{});
  const model::WorkerKey key = Start(SubmitJob());
  auto shipped = Ship(key, 0, "x");
  ASSERT_FALSE(shipped);
  EXPECT_EQ(shipped.error().code, ErrorCode::kFailedPrecondition);
  auto read = plane_->ReadLog(key.job, 0, 0, "stdout", 0, 100);
  ASSERT_FALSE(read);
  EXPECT_EQ(read.error().code, ErrorCode::kUnavailable);
}

TEST_F(RemoteLogsTest, AJobNotStartedReadsEmptyUntilItStartsOrEnds) {
  Open();
  JobId running = SubmitJob();
  Start(running);
  JobId waiting = SubmitJob();  // node-r's one GPU is taken
  plane_->RunOnce();
  auto pending = plane_->ReadLog(waiting, 0, 0, "stdout", 0, 100);
  ASSERT_TRUE(pending) << pending.error().ToString();
  EXPECT_FALSE(pending->started);
  EXPECT_FALSE(pending->finished);
  EXPECT_EQ(pending->job_state, "ready");  // waiting for node-r's GPU
  EXPECT_EQ(pending->data, "");

  ASSERT_TRUE(plane_->Cancel(waiting, "alice", "test"));
  auto cancelled = plane_->ReadLog(waiting, 0, 0, "stdout", 0, 100);
  ASSERT_TRUE(cancelled);
  EXPECT_FALSE(cancelled->started);
  EXPECT_TRUE(cancelled->finished);
  EXPECT_EQ(cancelled->job_state, "cancelled");
}

}  // namespace
}  // namespace drover::server
