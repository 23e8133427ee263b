#include "drover/os/files.h"

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

#include "drover/testing/temp_dir.h"

namespace drover::os {
namespace {

std::string Contents(const std::string& path) {
  std::stringstream text;
  text << std::ifstream(path).rdbuf();
  return text.str();
}

TEST(WriteFileAtomically, ReplacesTheFileWithTheModeAskedAndLeavesNothingBeside) {
  testing::TempDir tmp;
  const std::string path = tmp.Sub("record.json");
  std::ofstream(path) << "old and longer than the new";
  const mode_t old_umask = umask(0);  // the mode asked, whatever the umask
  Status written = WriteFileAtomically(path, "new", Durability::kSynced, 0600);
  umask(old_umask);
  ASSERT_TRUE(written) << written.error().ToString();
  EXPECT_EQ(Contents(path), "new");
  struct stat info {};
  ASSERT_EQ(stat(path.c_str(), &info), 0);
  EXPECT_EQ(info.st_mode & 07777, 0600u);
  int entries = 0;
  for ([[maybe_unused]] const auto& entry : std::filesystem::directory_iterator(tmp.path())) {
    ++entries;
  }
  EXPECT_EQ(entries, 1);
}

// A job's account may write the folder its files are replaced in (the Slurm executor's attempt
// folders): what it leaves at the temporary file's name, a link to a file it may not write or a
// file of its own, is replaced, never written through, and the link's target is untouched.
TEST(WriteFileAtomically, NeverWritesThroughWhatWasLeftAtItsTemporaryName) {
  testing::TempDir tmp;
  const std::string victim = tmp.Sub("victim");
  std::ofstream(victim) << "untouched\n";
  const std::string path = tmp.Sub("contract.sh");
  std::filesystem::create_symlink(victim, TemporaryFileOf(path));
  ASSERT_TRUE(WriteFileAtomically(path, "script\n", Durability::kVisible));
  EXPECT_EQ(Contents(victim), "untouched\n");
  EXPECT_EQ(Contents(path), "script\n");
  EXPECT_FALSE(std::filesystem::is_symlink(path));
  EXPECT_FALSE(std::filesystem::exists(std::filesystem::symlink_status(TemporaryFileOf(path))));

  std::filesystem::remove(path);
  std::filesystem::create_symlink(victim, path);  // the file itself a link: replaced, not followed
  ASSERT_TRUE(WriteFileAtomically(path, "again\n", Durability::kVisible));
  EXPECT_EQ(Contents(victim), "untouched\n");
  EXPECT_FALSE(std::filesystem::is_symlink(path));
}

TEST(WriteFileAtomically, AFolderThatIsNotThereFailsNamingThePath) {
  testing::TempDir tmp;
  Status written = WriteFileAtomically(tmp.Sub("missing/record.json"), "x");
  ASSERT_FALSE(written);
  EXPECT_EQ(written.error().code, ErrorCode::kUnavailable);
  EXPECT_NE(written.error().message.find(tmp.Sub("missing/.record.json.tmp.")), std::string::npos)
      << written.error().message;
}

TEST(IsAtomicWriteLeftover, KnowsItsOwnTemporaryNamesOnly) {
  const std::string temporary = TemporaryFileOf("/data/secrets/team-a/key");
  EXPECT_EQ(temporary, "/data/secrets/team-a/.key.tmp." + std::to_string(getpid()));
  EXPECT_TRUE(IsAtomicWriteLeftover(temporary.substr(temporary.rfind('/') + 1)));
  EXPECT_TRUE(IsAtomicWriteLeftover(".key.tmp.123"));
  EXPECT_FALSE(IsAtomicWriteLeftover("key.tmp.123"));   // not hidden: a name someone chose
  EXPECT_FALSE(IsAtomicWriteLeftover(".key.tmp."));     // no pid
  EXPECT_FALSE(IsAtomicWriteLeftover(".key.tmp.12a"));  // not a pid
  EXPECT_FALSE(IsAtomicWriteLeftover(".key"));
  EXPECT_FALSE(IsAtomicWriteLeftover(".tmp.123"));  // no name before the mark
}

}  // namespace
}  // namespace drover::os
