#include "drover/agent/outputs.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "drover/testing/memory_file_system.h"
#include "drover/testing/temp_dir.h"

namespace drover::agent {
namespace {

namespace fs = std::filesystem;
using ::testing::HasSubstr;

std::string ReadText(const std::string& path) {
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

void WriteText(const std::string& path, const std::string& text) {
  std::filesystem::create_directories(model::DirectoryOf(path));
  std::ofstream(path) << text;
}

class OutputsTest : public ::testing::Test {
 protected:
  // A path output of job 7 attempt 1 published at root_/DESTINATION.
  model::StagedOutput PathOutput(const std::string& name, const std::string& destination) {
    const std::string path = root_ + "/" + destination;
    return model::StagedOutput{name, model::StagingPathFor(path, JobId(7), 1), path};
  }
  model::StagedOutput ValueOutput(const std::string& name) {
    return model::StagedOutput{name, root_ + "/values/job-7/attempt-1/" + name, ""};
  }

  drover::testing::TempDir dir_{"drover-outputs-test"};
  const std::string root_ = dir_.path();
};

TEST_F(OutputsTest, PublishesANewDirectoryAndRemovesTheEmptiedStagingDirectory) {
  model::StagedOutput model = PathOutput("model", "out/model");
  WriteText(model.staging + "/weights.bin", "new weights");
  WriteText(model.staging + "/config.json", "{}");

  auto published = PublishOutputs({model}, {});

  ASSERT_TRUE(published) << published.error().ToString();
  EXPECT_EQ(*published, (std::map<std::string, std::string>{{"model", root_ + "/out/model"}}));
  EXPECT_EQ(ReadText(root_ + "/out/model/weights.bin"), "new weights");
  EXPECT_EQ(ReadText(root_ + "/out/model/config.json"), "{}");
  EXPECT_FALSE(fs::exists(model.staging));
  EXPECT_FALSE(fs::exists(model::DirectoryOf(model.staging)));  // .../job-7.attempt-1
}

TEST_F(OutputsTest, ReplacesAnExistingOutputWhole) {
  model::StagedOutput model = PathOutput("model", "out/model");
  WriteText(root_ + "/out/model/weights.bin", "old weights");
  WriteText(root_ + "/out/model/only-in-old.txt", "stale");
  WriteText(model.staging + "/weights.bin", "new weights");

  auto published = PublishOutputs({model}, {});

  ASSERT_TRUE(published) << published.error().ToString();
  EXPECT_EQ(ReadText(root_ + "/out/model/weights.bin"), "new weights");
  EXPECT_FALSE(fs::exists(root_ + "/out/model/only-in-old.txt"));
  EXPECT_FALSE(fs::exists(model.staging));  // the old tree, swapped there, is gone too
}

TEST_F(OutputsTest, ReplacesAFileWithADirectory) {
  model::StagedOutput report = PathOutput("report", "report");
  WriteText(root_ + "/report", "old file");
  WriteText(report.staging + "/index.html", "new");

  ASSERT_TRUE(PublishOutputs({report}, {}));

  EXPECT_TRUE(fs::is_directory(root_ + "/report"));
  EXPECT_EQ(ReadText(root_ + "/report/index.html"), "new");
}

TEST_F(OutputsTest, CreatesTheDestinationsParents) {
  // A staging location outside the destination's directory, whose parents do not exist yet.
  model::StagedOutput output{"table", root_ + "/staging/table.csv", root_ + "/a/b/table.csv"};
  WriteText(output.staging, "x,y\n");

  auto published = PublishOutputs({output}, {});

  ASSERT_TRUE(published) << published.error().ToString();
  EXPECT_EQ(ReadText(root_ + "/a/b/table.csv"), "x,y\n");
}

TEST_F(OutputsTest, AMissingOutputPublishesNothing) {
  model::StagedOutput written = PathOutput("model", "out/model");
  model::StagedOutput missing = PathOutput("metrics", "out/metrics.json");
  model::StagedOutput value = ValueOutput("accuracy");
  WriteText(written.staging, "new");
  WriteText(root_ + "/out/model", "old");
  WriteText(value.staging, "0.9\n");

  auto published = PublishOutputs({written, missing, value}, {});

  ASSERT_FALSE(published);
  EXPECT_EQ(published.error().code, ErrorCode::kFailedPrecondition);
  EXPECT_EQ(published.error().message,
            "output 'metrics' was not written: " + missing.staging + " does not exist");
  EXPECT_EQ(ReadText(root_ + "/out/model"), "old");
  EXPECT_EQ(ReadText(written.staging), "new");
}

TEST_F(OutputsTest, AMissingValuePublishesNothing) {
  model::StagedOutput written = PathOutput("model", "out/model");
  model::StagedOutput value = ValueOutput("accuracy");
  WriteText(written.staging, "new");

  auto published = PublishOutputs({written, value}, {});

  ASSERT_FALSE(published);
  EXPECT_EQ(published.error().message,
            "output 'accuracy' was not written: " + value.staging +
                " does not exist (and no worker's node reported its value: see the workers' "
                "exits)");
  EXPECT_FALSE(fs::exists(root_ + "/out/model"));
}

// A value its worker's node reported (read there after the worker exited) is published as it
// is; the staging file is read only for a value no node reported.
TEST_F(OutputsTest, AReportedValueIsPublishedWithoutReadingTheStagingFile) {
  model::StagedOutput reported = ValueOutput("accuracy");  // its staging file never written
  model::StagedOutput staged = ValueOutput("label");
  WriteText(staged.staging, "from the file\n");

  auto published = PublishOutputs({reported, staged}, {{"accuracy", "0.93"}});

  ASSERT_TRUE(published) << published.error().ToString();
  EXPECT_EQ(*published,
            (std::map<std::string, std::string>{{"accuracy", "0.93"}, {"label", "from the file"}}));
}

TEST_F(OutputsTest, AValueIsItsFirstLineWithoutTrailingWhitespace) {
  model::StagedOutput accuracy = ValueOutput("accuracy");
  model::StagedOutput label = ValueOutput("label");
  model::StagedOutput empty = ValueOutput("empty");
  WriteText(accuracy.staging, "0.93 \t\r\nsecond line\n");
  WriteText(label.staging, "  best run");
  WriteText(empty.staging, "");

  auto published = PublishOutputs({accuracy, label, empty}, {});

  ASSERT_TRUE(published) << published.error().ToString();
  EXPECT_EQ(*published, (std::map<std::string, std::string>{
                            {"accuracy", "0.93"}, {"label", "  best run"}, {"empty", ""}}));
}

TEST_F(OutputsTest, AValueMayBeAtMost4096Bytes) {
  model::StagedOutput longest = ValueOutput("longest");
  model::StagedOutput too_long = ValueOutput("too_long");
  WriteText(longest.staging,
            std::string(model::kMaxOutputValueBytes, 'a') + "\n" + std::string(9000, 'b'));
  WriteText(too_long.staging, std::string(model::kMaxOutputValueBytes + 1, 'a') + "\n");

  auto ok = PublishOutputs({longest}, {});
  ASSERT_TRUE(ok) << ok.error().ToString();
  EXPECT_EQ(ok->at("longest"), std::string(model::kMaxOutputValueBytes, 'a'));

  auto rejected = PublishOutputs({too_long}, {});
  ASSERT_FALSE(rejected);
  EXPECT_EQ(rejected.error().code, ErrorCode::kFailedPrecondition);
  EXPECT_THAT(rejected.error().message, HasSubstr("output 'too_long'"));
  EXPECT_THAT(rejected.error().message, HasSubstr("longer than 4096 bytes"));
}

TEST_F(OutputsTest, DiscardRemovesTheStagingLocationsAndTheEmptiedAttemptDirectory) {
  model::StagedOutput model = PathOutput("model", "out/model");
  model::StagedOutput value = ValueOutput("accuracy");
  WriteText(model.staging + "/partial.bin", "half");
  WriteText(value.staging, "0.5");
  // Another attempt's staging directory beside it is left alone.
  const std::string other = model::StagingPathFor(root_ + "/out/model", JobId(7), 2);
  WriteText(other, "other attempt");

  DiscardStaging({model, value});

  EXPECT_FALSE(fs::exists(model::DirectoryOf(model.staging)));
  EXPECT_FALSE(fs::exists(model::DirectoryOf(value.staging)));
  EXPECT_EQ(ReadText(other), "other attempt");
  EXPECT_FALSE(fs::exists(root_ + "/out/model"));
}

TEST_F(OutputsTest, DiscardOfAnAttemptThatWroteNothingIsHarmless) {
  DiscardStaging({PathOutput("model", "out/model"), ValueOutput("accuracy")});
  EXPECT_TRUE(fs::is_directory(root_));
}

// The same publication on a file system in memory, where a chosen operation fails.
class MemoryOutputsTest : public ::testing::Test {
 protected:
  using Op = drover::testing::MemoryFileSystem::Op;

  model::StagedOutput PathOutput(const std::string& name, const std::string& destination) {
    return model::StagedOutput{name, model::StagingPathFor(destination, JobId(7), 1), destination};
  }

  drover::testing::MemoryFileSystem fs_;
};

TEST_F(MemoryOutputsTest, ReplacesAnOldOutputBySwappingAndRemovesTheOldOne) {
  model::StagedOutput model = PathOutput("model", "/out/model");
  fs_.WriteFile("/out/model", "old");
  fs_.WriteFile(model.staging, "new");
  auto published = PublishOutputs({model}, {}, fs_);
  ASSERT_TRUE(published) << published.error().ToString();
  EXPECT_EQ(fs_.Contents("/out/model"), "new");
  EXPECT_FALSE(fs_.Exists(model.staging));
  EXPECT_FALSE(fs_.Exists(model::DirectoryOf(model.staging)));
}

TEST_F(MemoryOutputsTest, AFailedMoveIsAnInternalErrorAndLeavesTheStagedOutput) {
  model::StagedOutput model = PathOutput("model", "/out/model");
  model::StagedOutput value{"accuracy", "/values/job-7/attempt-1/accuracy", ""};
  fs_.WriteFile(model.staging, "weights");
  fs_.WriteFile(value.staging, "0.93\n");
  fs_.Fail(Op::kRename, model.staging);
  auto published = PublishOutputs({value, model}, {}, fs_);
  ASSERT_FALSE(published);
  EXPECT_EQ(published.error().code, ErrorCode::kInternal);
  EXPECT_THAT(published.error().message, HasSubstr("output 'model'"));
  EXPECT_FALSE(fs_.Exists("/out/model"));
  EXPECT_EQ(fs_.Contents(model.staging), "weights");

  fs_.Heal();
  published = PublishOutputs({value, model}, {}, fs_);
  ASSERT_TRUE(published) << published.error().ToString();
  EXPECT_EQ(published->at("accuracy"), "0.93");
  EXPECT_EQ(fs_.Contents("/out/model"), "weights");
}

TEST_F(MemoryOutputsTest, AFailedSwapKeepsTheOldOutput) {
  model::StagedOutput model = PathOutput("model", "/out/model");
  fs_.WriteFile("/out/model", "old");
  fs_.WriteFile(model.staging, "new");
  fs_.Fail(Op::kExchange, "/out/model");
  auto published = PublishOutputs({model}, {}, fs_);
  ASSERT_FALSE(published);
  EXPECT_EQ(published.error().code, ErrorCode::kInternal);
  EXPECT_EQ(fs_.Contents("/out/model"), "old");
}

// A publication cut short, as by a crash, between a swap and the removal of the previous output
// it left at the staging path, before the next output's move: carried out again with its record,
// it finishes; without, it swapped the previous output back onto the destination.
TEST_F(MemoryOutputsTest, AnInterruptedPublicationIsFinishedNotRedone) {
  model::StagedOutput model = PathOutput("model", "/out/model");
  model::StagedOutput report = PathOutput("report", "/out/report");
  fs_.WriteFile("/out/model", "old");
  fs_.WriteFile(model.staging, "new");
  fs_.WriteFile(report.staging, "all good");
  const Publication how{"/data/publications/job-7.attempt-1", nullptr};
  fs_.Fail(Op::kRemoveAll, model.staging);  // the crash: nothing more after the swap
  fs_.Fail(Op::kRename, report.staging);
  ASSERT_FALSE(PublishOutputs({model, report}, {}, fs_, how));
  ASSERT_EQ(fs_.Contents("/out/model"), "new");
  ASSERT_EQ(fs_.Contents(model.staging), "old");

  fs_.Heal();
  auto published = PublishOutputs({model, report}, {}, fs_, how);
  ASSERT_TRUE(published) << published.error().ToString();
  EXPECT_EQ(published->at("model"), "/out/model");
  EXPECT_EQ(published->at("report"), "/out/report");
  EXPECT_EQ(fs_.Contents("/out/model"), "new");
  EXPECT_EQ(fs_.Contents("/out/report"), "all good");
  EXPECT_FALSE(fs_.Exists(model::DirectoryOf(model.staging)));

  // Once more (the answer was lost again): the same outputs, nothing touched.
  published = PublishOutputs({model, report}, {}, fs_, how);
  ASSERT_TRUE(published) << published.error().ToString();
  EXPECT_EQ(published->at("model"), "/out/model");
  EXPECT_EQ(fs_.Contents("/out/model"), "new");
}

TEST_F(MemoryOutputsTest, TheRecordNamesEachStagedFileBeforeTheFirstMove) {
  model::StagedOutput model = PathOutput("model", "/out/model");
  fs_.WriteFile(model.staging, "weights");
  const std::uint64_t inode = fs_.Stat(model.staging)->inode;
  fs_.Fail(Op::kRename, model.staging);
  ASSERT_FALSE(PublishOutputs({model}, {}, fs_, {"/data/publications/job-7.attempt-1", nullptr}));
  const std::optional<std::string> text = fs_.Contents("/data/publications/job-7.attempt-1");
  ASSERT_TRUE(text.has_value());
  auto record = ParsePublicationRecord(*text);
  ASSERT_TRUE(record) << record.error().ToString();
  EXPECT_EQ(*record, (PublicationRecord{{"model", {1, inode}}}));
}

TEST_F(MemoryOutputsTest, AResumedOutputThatChangedSinceIsRefused) {
  model::StagedOutput model = PathOutput("model", "/out/model");
  fs_.WriteFile(model.staging, "replaced since");
  fs_.WriteFile("/data/publications/job-7.attempt-1", "model 1 999999\n");
  auto published =
      PublishOutputs({model}, {}, fs_, {"/data/publications/job-7.attempt-1", nullptr});
  ASSERT_FALSE(published);
  EXPECT_EQ(published.error().code, ErrorCode::kFailedPrecondition);
  EXPECT_THAT(published.error().message, HasSubstr("changed since its publication began"));
  EXPECT_FALSE(fs_.Exists("/out/model"));
}

TEST(PublicationRecord, ReadsWhatItWritesAndNamesTheLineItCannotRead) {
  const PublicationRecord record{{"model", {2049, 131}}, {"report", {2049, 7}}};
  EXPECT_EQ(FormatPublicationRecord(record), "model 2049 131\nreport 2049 7\n");
  EXPECT_EQ(ParsePublicationRecord(FormatPublicationRecord(record)), record);
  auto refused = ParsePublicationRecord("model 2049 131\nreport 2049\n");
  ASSERT_FALSE(refused);
  EXPECT_EQ(refused.error().code, ErrorCode::kInvalidArgument);
  EXPECT_THAT(refused.error().message, HasSubstr("line 2"));
  EXPECT_FALSE(ParsePublicationRecord("model 1 2 extra\n"));
}

TEST_F(MemoryOutputsTest, DiscardRemovesWhatItCanAndKeepsGoing) {
  model::StagedOutput first = PathOutput("first", "/out/first");
  model::StagedOutput second = PathOutput("second", "/out/second");
  fs_.WriteFile(first.staging, "a");
  fs_.WriteFile(second.staging, "b");
  fs_.Fail(Op::kRemoveAll, first.staging);
  DiscardStaging({first, second}, fs_);
  EXPECT_TRUE(fs_.Exists(first.staging));
  EXPECT_FALSE(fs_.Exists(second.staging));
}

}  // namespace
}  // namespace drover::agent
