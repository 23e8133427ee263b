#include "drover/agent/worker_files.h"

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>

#include "drover/os/files.h"
#include "drover/testing/temp_dir.h"

namespace drover::agent {
namespace {

class WorkerFilesTest : public ::testing::Test {
 protected:
  drover::testing::TempDir temp_{"drover-worker-files"};
  const std::string dir_ = temp_.path();
};

TEST_F(WorkerFilesTest, RecordsRoundTrip) {
  ASSERT_TRUE(WriteSupervisorFile(dir_, ProcessIdentity{123, 456}));
  EXPECT_EQ(ReadSupervisorFile(dir_), (ProcessIdentity{123, 456}));

  ASSERT_TRUE(WriteStartedFile(dir_, StartedRecord{77, 1'700'000'000'123}));
  auto started = ReadStartedFile(dir_);
  ASSERT_TRUE(started);
  EXPECT_EQ(started->pid, 77);
  EXPECT_EQ(started->at, 1'700'000'000'123);

  model::ExitStatus exit;
  exit.exit_code = 143;
  exit.signal = 15;
  exit.cancelled = true;
  exit.message = "cancelled";
  ASSERT_TRUE(WriteExitFile(dir_, ExitRecord{exit, 42}));
  auto read = ReadExitFile(dir_);
  ASSERT_TRUE(read);
  EXPECT_EQ(read->exit, exit);
  EXPECT_EQ(read->at, 42);

  model::LaunchSpec spec;
  spec.key = model::WorkerKey{JobId(5), 2, 1};
  spec.argv = {"python", "train.py"};
  spec.env = {{"A", "b"}};
  spec.gpus = {3};
  spec.timeout_ms = 1000;
  ASSERT_TRUE(WriteLaunchFile(dir_, spec));
  EXPECT_EQ(ReadLaunchFile(dir_), spec);

  // No temporary files are left behind.
  int files = 0;
  for (const auto& entry : std::filesystem::directory_iterator(dir_)) {
    EXPECT_EQ(entry.path().string().find(".tmp"), std::string::npos) << entry.path();
    ++files;
  }
  EXPECT_EQ(files, 4);
}

TEST_F(WorkerFilesTest, LaunchFileIsReadableByItsOwnerAloneSinceItsEnvHoldsSecrets) {
  const mode_t old_umask = umask(0);  // a permissive umask does not widen it
  model::LaunchSpec spec;
  spec.env = {{"WANDB_API_KEY", "s3cr3t"}};
  Status written = WriteLaunchFile(dir_, spec);
  umask(old_umask);
  ASSERT_TRUE(written);
  struct stat info {};
  ASSERT_EQ(stat((dir_ + "/" + kLaunchFile).c_str(), &info), 0);
  EXPECT_EQ(info.st_mode & 07777, 0600u);
}

TEST_F(WorkerFilesTest, MissingFileIsNotFoundAndGarbageIsInvalid) {
  EXPECT_EQ(ReadExitFile(dir_).error().code, ErrorCode::kNotFound);
  ASSERT_TRUE(os::WriteFileAtomically(dir_ + "/" + kSupervisorFile, "{\"pid\": \"x\"}"));
  EXPECT_EQ(ReadSupervisorFile(dir_).error().code, ErrorCode::kInvalidArgument);
  ASSERT_TRUE(os::WriteFileAtomically(dir_ + "/" + kExitFile, "not json"));
  EXPECT_EQ(ReadExitFile(dir_).error().code, ErrorCode::kInvalidArgument);
}

TEST(ProcessIdentity, TellsALiveProcessFromAReusedPid) {
  auto start = ProcessStartTime(getpid());
  ASSERT_TRUE(start);
  EXPECT_TRUE(IsAlive(ProcessIdentity{getpid(), *start}));
  EXPECT_FALSE(IsAlive(ProcessIdentity{getpid(), *start + 1}));
  EXPECT_FALSE(IsAlive(ProcessIdentity{0, 0}));
  EXPECT_FALSE(ProcessStartTime(-1));
}

}  // namespace
}  // namespace drover::agent
