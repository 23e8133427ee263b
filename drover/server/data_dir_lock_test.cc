#include "drover/server/data_dir_lock.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>

namespace drover::server {
namespace {

using ::testing::HasSubstr;

class DataDirLockTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char pattern[] = "/tmp/drover-lock-test-XXXXXX";
    ASSERT_NE(mkdtemp(pattern), nullptr);
    dir_ = pattern;
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }
  std::string dir_;
};

TEST_F(DataDirLockTest, ASecondHolderIsRefusedNamingTheFirstOnesPid) {
  auto first = DataDirLock::Acquire(dir_, "drover server");
  ASSERT_TRUE(first) << first.error().ToString();
  // flock locks belong to open file descriptions: a second open in this process conflicts as a
  // second process would.
  auto second = DataDirLock::Acquire(dir_, "drover server");
  ASSERT_FALSE(second);
  EXPECT_EQ(second.error().code, ErrorCode::kFailedPrecondition);
  EXPECT_THAT(second.error().message, HasSubstr(dir_ + " is in use by another drover server (pid " +
                                                std::to_string(getpid()) + ")"));
}

TEST_F(DataDirLockTest, TheLockIsFreeAgainOnceItsHolderIsGone) {
  {
    auto first = DataDirLock::Acquire(dir_, "drover server");
    ASSERT_TRUE(first) << first.error().ToString();
    DataDirLock moved = *std::move(first);  // the moved-from object releases nothing
    EXPECT_FALSE(DataDirLock::Acquire(dir_, "drover server"));
  }
  auto again = DataDirLock::Acquire(dir_, "drover server");
  EXPECT_TRUE(again) << again.error().ToString();
}

TEST_F(DataDirLockTest, AStaleLockFileOfADeadProcessDoesNotBlock) {
  std::ofstream(dir_ + "/drover.lock") << "999999\n";
  auto lock = DataDirLock::Acquire(dir_, "drover agent");
  ASSERT_TRUE(lock) << lock.error().ToString();
  std::ifstream in(dir_ + "/drover.lock");
  std::string pid;
  in >> pid;
  EXPECT_EQ(pid, std::to_string(getpid()));
}

TEST_F(DataDirLockTest, AMissingFolderIsUnavailable) {
  auto lock = DataDirLock::Acquire(dir_ + "/absent", "drover server");
  ASSERT_FALSE(lock);
  EXPECT_EQ(lock.error().code, ErrorCode::kUnavailable);
  EXPECT_THAT(lock.error().message, HasSubstr("cannot open"));
}

}  // namespace
}  // namespace drover::server
