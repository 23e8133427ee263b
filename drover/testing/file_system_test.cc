// One contract suite run against RealFileSystem (in a TempDir) and MemoryFileSystem, the faults
// of MemoryFileSystem, and FaultyStore.

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <sys/stat.h>

#include <filesystem>
#include <fstream>
#include <memory>
#include <string>
#include <thread>

#include "drover/common/filesystem.h"
#include "drover/testing/faulty_store.h"
#include "drover/testing/memory_file_system.h"
#include "drover/testing/temp_dir.h"
#include "drover/testing/wait_until.h"

namespace drover::testing {
namespace {

using ::testing::HasSubstr;

// A file system under test and a root directory in it that exists and is empty.
class FileSystemContractTest : public ::testing::TestWithParam<bool> {
 protected:
  void SetUp() override {
    if (GetParam()) {
      fs_ = &RealFileSystem();
      root_ = dir_.path();
    } else {
      fs_ = &memory_;
      root_ = "/root";
      ASSERT_TRUE(memory_.CreateDirectories(root_));
    }
  }

  // Writes through the implementation's own back door (the FileSystem only appends), creating
  // the parent directories.
  void Write(const std::string& path, const std::string& text) {
    if (GetParam()) {
      std::filesystem::create_directories(std::filesystem::path(path).parent_path());
      std::ofstream(path, std::ios::binary) << text;
    } else {
      memory_.WriteFile(path, text);
    }
  }

  TempDir dir_{"drover-fs-contract"};
  MemoryFileSystem memory_;
  FileSystem* fs_ = nullptr;
  std::string root_;
};

TEST_P(FileSystemContractTest, StatAndReadAFile) {
  const std::string file = root_ + "/a.txt";
  EXPECT_EQ(fs_->Stat(file).error().code, ErrorCode::kNotFound);
  EXPECT_EQ(fs_->Read(file).error().code, ErrorCode::kNotFound);
  Write(file, "hello world");
  auto info = fs_->Stat(file);
  ASSERT_TRUE(info) << info.error().ToString();
  EXPECT_EQ(info->size, 11);
  EXPECT_FALSE(info->directory);
  EXPECT_GT(info->modified_ns, 0);
  EXPECT_EQ(fs_->LinkStat(file)->size, 11);
  EXPECT_EQ(*fs_->Read(file), "hello world");
  EXPECT_EQ(*fs_->Read(file, 6, 3), "wor");
  EXPECT_EQ(*fs_->Read(file, 6), "world");
  EXPECT_EQ(*fs_->Read(file, 20, 3), "");
  EXPECT_TRUE(fs_->Stat(root_)->directory);
  EXPECT_EQ(fs_->Read(root_).error().code, ErrorCode::kInternal);
}

TEST_P(FileSystemContractTest, AppendCreatesThenExtendsAFile) {
  const std::string file = root_ + "/log.txt";
  ASSERT_TRUE(fs_->Append(file, "one\n"));
  ASSERT_TRUE(fs_->Append(file, std::string_view("two\n\0x", 6)));
  EXPECT_EQ(*fs_->Read(file), std::string("one\ntwo\n\0x", 10));
  EXPECT_EQ(fs_->Stat(file)->size, 10);
  EXPECT_EQ(fs_->Append(root_ + "/missing/log.txt", "x").error().code, ErrorCode::kInternal);
  EXPECT_EQ(fs_->Append(root_, "x").error().code, ErrorCode::kInternal);  // a directory
}

TEST_P(FileSystemContractTest, CreateDirectoriesIsMkdirP) {
  ASSERT_TRUE(fs_->CreateDirectories(root_ + "/a/b/c"));
  ASSERT_TRUE(fs_->CreateDirectories(root_ + "/a/b/c"));  // existing is fine
  EXPECT_TRUE(fs_->Stat(root_ + "/a/b")->directory);
  Write(root_ + "/file", "x");
  auto refused = fs_->CreateDirectories(root_ + "/file/d");
  ASSERT_FALSE(refused);
  EXPECT_EQ(refused.error().code, ErrorCode::kInternal);
  EXPECT_THAT(refused.error().message, HasSubstr("file"));
}

TEST_P(FileSystemContractTest, RenameMovesAndReplacesAFile) {
  Write(root_ + "/a", "new");
  Write(root_ + "/b", "old");
  const FileInfo moved = *fs_->Stat(root_ + "/a");
  EXPECT_NE(std::pair(moved.device, moved.inode),
            std::pair(fs_->Stat(root_ + "/b")->device, fs_->Stat(root_ + "/b")->inode));
  EXPECT_EQ(fs_->Rename(root_ + "/none", root_ + "/c").error().code, ErrorCode::kNotFound);
  ASSERT_TRUE(fs_->Rename(root_ + "/a", root_ + "/b"));
  EXPECT_EQ(*fs_->Read(root_ + "/b"), "new");
  // The same file at its new path (agent::PublicationRecord recognizes a published output so).
  EXPECT_EQ(fs_->Stat(root_ + "/b")->inode, moved.inode);
  EXPECT_EQ(fs_->Stat(root_ + "/b")->device, moved.device);
  EXPECT_EQ(fs_->Stat(root_ + "/a").error().code, ErrorCode::kNotFound);
  // A directory moves with what it holds; a missing parent of the target is an error.
  Write(root_ + "/d/x", "1");
  ASSERT_TRUE(fs_->Rename(root_ + "/d", root_ + "/e"));
  EXPECT_EQ(*fs_->Read(root_ + "/e/x"), "1");
  EXPECT_EQ(fs_->Rename(root_ + "/e", root_ + "/no/e").error().code, ErrorCode::kInternal);
}

TEST_P(FileSystemContractTest, ExchangeSwapsTwoEntries) {
  Write(root_ + "/a", "A");
  Write(root_ + "/d/x", "X");
  const std::uint64_t file = fs_->Stat(root_ + "/a")->inode;
  const std::uint64_t directory = fs_->Stat(root_ + "/d")->inode;
  ASSERT_TRUE(fs_->Exchange(root_ + "/a", root_ + "/d"));
  EXPECT_EQ(*fs_->Read(root_ + "/d"), "A");
  EXPECT_EQ(fs_->Stat(root_ + "/d")->inode, file);
  EXPECT_EQ(fs_->Stat(root_ + "/a")->inode, directory);
  EXPECT_EQ(*fs_->Read(root_ + "/a/x"), "X");
  EXPECT_EQ(fs_->Exchange(root_ + "/a", root_ + "/none").error().code, ErrorCode::kNotFound);
}

TEST_P(FileSystemContractTest, RemoveAllAndRemoveEmptyDirectory) {
  Write(root_ + "/d/e/x", "X");
  EXPECT_EQ(fs_->RemoveEmptyDirectory(root_ + "/d").error().code, ErrorCode::kFailedPrecondition);
  EXPECT_EQ(fs_->RemoveEmptyDirectory(root_ + "/none").error().code, ErrorCode::kNotFound);
  ASSERT_TRUE(fs_->RemoveAll(root_ + "/d/e"));
  EXPECT_EQ(fs_->Stat(root_ + "/d/e/x").error().code, ErrorCode::kNotFound);
  ASSERT_TRUE(fs_->RemoveEmptyDirectory(root_ + "/d"));
  EXPECT_EQ(fs_->Stat(root_ + "/d").error().code, ErrorCode::kNotFound);
  EXPECT_TRUE(fs_->RemoveAll(root_ + "/none"));  // nothing there is fine
}

INSTANTIATE_TEST_SUITE_P(RealAndMemory, FileSystemContractTest, ::testing::Bool(),
                         [](const auto& info) { return info.param ? "Real" : "Memory"; });

// A FIFO where a file is expected (a job's output, which the job itself wrote) is refused at
// once: opening it to read would wait for a writer that never comes, holding the server's
// thread.
TEST(RealFileSystem, ReadRefusesAFifoWithoutWaiting) {
  testing::TempDir dir("drover-fs-fifo");
  const std::string fifo = dir.path() + "/value";
  ASSERT_EQ(mkfifo(fifo.c_str(), 0600), 0);
  Result<std::string> read = RealFileSystem().Read(fifo);
  ASSERT_FALSE(read);
  EXPECT_EQ(read.error().code, ErrorCode::kInternal);
  EXPECT_THAT(read.error().message, ::testing::HasSubstr("not a regular file"));
}

TEST(MemoryFileSystem, AnInjectedFaultFailsThatOperationOnThatPathUntilHealed) {
  MemoryFileSystem memory;
  FileSystem& fs = memory;  // Read's default arguments are the interface's
  memory.WriteFile("/a/x", "X");
  memory.Fail(MemoryFileSystem::Op::kRead, "/a/x", ErrorCode::kUnavailable);
  EXPECT_EQ(fs.Read("/a/x").error().code, ErrorCode::kUnavailable);
  EXPECT_TRUE(fs.Stat("/a/x"));  // another operation
  memory.WriteFile("/a/y", "Y");
  EXPECT_EQ(*fs.Read("/a/y"), "Y");  // another path
  EXPECT_EQ(memory.Failures(MemoryFileSystem::Op::kRead, "/a/x"), 1);
  memory.Heal();
  EXPECT_EQ(*fs.Read("/a/x"), "X");
}

TEST(MemoryFileSystem, EveryWriteChangesTheModificationTime) {
  MemoryFileSystem fs;
  fs.WriteFile("/p", "one");
  const FileInfo first = *fs.Stat("/p");
  fs.WriteFile("/p", "two");
  EXPECT_NE(fs.Stat("/p")->modified_ns, first.modified_ns);
}

// A batch that stores one job.
store::Batch JobBatch(std::int64_t id) {
  store::Batch batch;
  model::Job job;
  job.id = JobId(id);
  job.spec.name = "job";
  batch.jobs.push_back(job);
  return batch;
}

TEST(FaultyStore, FailsTheChosenWriteApplyingNothing) {
  std::unique_ptr<store::Store> base = store::NewMemoryStore();
  FaultyStore faulty(*base);
  ASSERT_TRUE(faulty.Apply(JobBatch(1)));
  faulty.FailNthApply(2, ErrorCode::kInternal);
  ASSERT_TRUE(faulty.Apply(JobBatch(2)));
  auto failed = faulty.Apply(JobBatch(3));
  ASSERT_FALSE(failed);
  EXPECT_EQ(failed.error().code, ErrorCode::kInternal);
  ASSERT_TRUE(faulty.Apply(JobBatch(4)));  // only the chosen one
  EXPECT_EQ(base->GetJob(JobId(3)).error().code, ErrorCode::kNotFound);
  EXPECT_EQ(*faulty.MaxJobId(), 4);
  EXPECT_EQ(faulty.applies(), 4);
  EXPECT_EQ(faulty.failed_applies(), 1);
}

TEST(FaultyStore, FailsEveryWriteWhileSet) {
  std::unique_ptr<store::Store> base = store::NewMemoryStore();
  FaultyStore faulty(*base);
  faulty.SetFailing(true);
  EXPECT_EQ(faulty.Apply(JobBatch(1)).error().code, ErrorCode::kUnavailable);
  EXPECT_EQ(faulty.Apply(JobBatch(2)).error().code, ErrorCode::kUnavailable);
  faulty.SetFailing(false);
  EXPECT_TRUE(faulty.Apply(JobBatch(3)));
  EXPECT_EQ(*base->MaxJobId(), 3);
}

TEST(FaultyStore, AStalledWriteWaitsAndThenApplies) {
  std::unique_ptr<store::Store> base = store::NewMemoryStore();
  FaultyStore faulty(*base);
  faulty.SetStalled(true);
  std::thread writer([&] { EXPECT_TRUE(faulty.Apply(JobBatch(1))); });
  ASSERT_TRUE(WaitUntil([&] { return faulty.stalled_applies() == 1; }));
  EXPECT_EQ(*base->MaxJobId(), 0);  // waiting, not applied
  faulty.SetStalled(false);
  writer.join();
  EXPECT_EQ(faulty.stalled_applies(), 0);
  EXPECT_EQ(*base->MaxJobId(), 1);
}

}  // namespace
}  // namespace drover::testing
