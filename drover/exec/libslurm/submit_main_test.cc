// SubmitHelper (exec/slurm/submit_helper.h) with the real drover-slurm-submit, which sits beside
// DROVER_BINARY. No slurmctld here: tests/slurm submits through it to a real cluster. These cover
// what does not need one: answers without one, a helper that dies, and usage.

#include <fmt/format.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/stat.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "drover/exec/slurm/submit_helper.h"
#include "drover/testing/temp_dir.h"

namespace drover::exec::slurm {
namespace {

using ::testing::HasSubstr;

std::string HelperPath() {
  return (std::filesystem::path(DROVER_BINARY).parent_path() / "drover-slurm-submit").string();
}

const Sbatch kJob{{"--job-name=drover-1-1", "--nodes=1"}, "#!/bin/bash\ntrue\n"};

class SubmitHelperTest : public ::testing::Test {
 protected:
  // The helper reads SLURM_CONF from the environment it is started with: this process's.
  void UseSlurmConf(const std::string& path) { setenv("SLURM_CONF", path.c_str(), 1); }
  void TearDown() override { unsetenv("SLURM_CONF"); }
  void Write(const std::string& path, const std::string& text) { std::ofstream(path) << text; }
  testing::TempDir dir_;
};

TEST_F(SubmitHelperTest, AnUnreadableSlurmConfIsAnsweredAtOnceNotFatal) {
  UseSlurmConf(dir_.Sub("missing/slurm.conf"));
  SubmitHelper helper(HelperPath());
  for (int i = 0; i < 2; ++i) {  // and the helper is still there for the next request
    Result<std::string> id = helper.Submit(kJob);
    ASSERT_FALSE(id);
    EXPECT_THAT(id.error().message,
                HasSubstr("cannot read the Slurm configuration " + dir_.Sub("missing/slurm.conf")));
  }
}

TEST_F(SubmitHelperTest, AListingWithoutASlurmConfIsAnErrorAndTheHelperStays) {
  UseSlurmConf(dir_.Sub("missing/slurm.conf"));
  SubmitHelper helper(HelperPath());
  Result<std::string> listing = helper.ListJobs();
  ASSERT_FALSE(listing);
  EXPECT_THAT(listing.error().message, HasSubstr("cannot read the Slurm configuration"));
  const pid_t pid = helper.HelperPid();
  EXPECT_GT(pid, 0);
  EXPECT_FALSE(helper.Submit(kJob));  // answered by the same helper
  EXPECT_EQ(helper.HelperPid(), pid);
}

TEST_F(SubmitHelperTest, ARequestItCannotMapIsRefusedBeforeSlurmIsAsked) {
  // A configuration libslurm accepts, naming a controller that is not there: nothing reaches it.
  Write(dir_.Sub("slurm.conf"), "ClusterName=test\nSlurmctldHost=localhost\nSlurmctldPort=1\n");
  UseSlurmConf(dir_.Sub("slurm.conf"));
  SubmitHelper helper(HelperPath());
  Result<std::string> id = helper.Submit({{"--exclusive"}, "#!/bin/bash\ntrue\n"});
  ASSERT_FALSE(id);
  EXPECT_THAT(id.error().message, HasSubstr("'--exclusive'"));
  id = helper.Submit({{}, "no interpreter line\n"});
  ASSERT_FALSE(id);
  EXPECT_THAT(id.error().message, HasSubstr("#!"));
}

TEST_F(SubmitHelperTest, AKilledHelperIsReplacedAtTheNextSubmission) {
  UseSlurmConf(dir_.Sub("missing.conf"));
  SubmitHelper helper(HelperPath());
  ASSERT_FALSE(helper.Submit(kJob));
  const pid_t first = helper.HelperPid();
  ASSERT_GT(first, 0);
  ASSERT_EQ(kill(first, SIGKILL), 0);
  Result<std::string> id = helper.Submit(kJob);
  ASSERT_FALSE(id);
  EXPECT_THAT(id.error().message, HasSubstr("cannot read the Slurm configuration"));
  EXPECT_NE(helper.HelperPid(), first);
  EXPECT_GT(helper.HelperPid(), 0);
}

TEST_F(SubmitHelperTest, AHelperThatTakesTheJobAndDiesIsReportedAsSuch) {
  const std::string fake = dir_.Sub("fake-helper");
  // Reads the whole request (one small write) and exits without an answer.
  Write(fake, "#!/bin/sh\ndd bs=65536 count=1 of=/dev/null <&3 2>/dev/null\n");
  chmod(fake.c_str(), 0755);
  SubmitHelper helper(fake);
  Result<std::string> id = helper.Submit(kJob);
  ASSERT_FALSE(id);
  EXPECT_THAT(id.error().message, HasSubstr("took the job but gave no answer (it exited)"));
  EXPECT_EQ(helper.HelperPid(), 0);  // stopped; the next submission starts another
}

TEST_F(SubmitHelperTest, AHelperThatEndsWithTheRequestUnreadIsReplacedAndAskedAgain) {
  const std::string fake = dir_.Sub("fake-helper");
  // The first start reads one byte and exits: the rest of the request stays unread, so it was
  // never submitted. The second start is the real helper.
  Write(fake, fmt::format("#!/bin/sh\nif [ -e {0}.once ]; then exec {1}; fi\ntouch {0}.once\n"
                          "head -c 1 <&3 >/dev/null\n",
                          fake, HelperPath()));
  chmod(fake.c_str(), 0755);
  UseSlurmConf(dir_.Sub("missing.conf"));
  SubmitHelper helper(fake);
  Result<std::string> id = helper.Submit(kJob);
  ASSERT_FALSE(id);
  EXPECT_THAT(id.error().message, HasSubstr("cannot read the Slurm configuration"));
}

// A fake helper that answers each request with the frames given, in turn, and appends each
// request's payload to `log`, a line each.
std::string FakeListingHelper(const std::vector<std::string>& replies, const std::string& log) {
  std::string script = "#!/bin/sh\n";
  const std::string read_request = fmt::format(
      "n=$(head -c 4 <&3 | od -An -tu4 | tr -d ' ')\n{{ head -c \"$n\" <&3; echo; }} >> {}\n", log);
  for (const std::string& reply : replies) {
    script +=
        read_request + fmt::format("printf '\\{:03o}\\000\\000\\000{}' >&3\n", reply.size(), reply);
  }
  return script + read_request;
}

TEST_F(SubmitHelperTest, AListingIfChangedIsTheLastListingAgainWhileUnchanged) {
  const std::string fake = dir_.Sub("fake-helper"), log = dir_.Sub("requests");
  Write(fake, FakeListingHelper(
                  {"ok JobId=7 JobState=RUNNING", "same", "ok JobId=7 JobState=COMPLETED"}, log));
  chmod(fake.c_str(), 0755);
  SubmitHelper helper(fake);
  Result<std::string> first = helper.ListJobs(Listing::kIfChanged);
  ASSERT_TRUE(first) << first.error().message;
  EXPECT_EQ(*first, "JobId=7 JobState=RUNNING");
  Result<std::string> again = helper.ListJobs(Listing::kIfChanged);
  ASSERT_TRUE(again) << again.error().message;
  EXPECT_EQ(*again, "JobId=7 JobState=RUNNING");
  Result<std::string> whole = helper.ListJobs(Listing::kWhole);
  ASSERT_TRUE(whole) << whole.error().message;
  EXPECT_EQ(*whole, "JobId=7 JobState=COMPLETED");
  std::ifstream requests(log);
  std::vector<std::string> lines;
  for (std::string line; std::getline(requests, line);) lines.push_back(line);
  EXPECT_EQ(lines, (std::vector<std::string>{std::string(kListChangedJobsRequest),
                                             std::string(kListChangedJobsRequest),
                                             std::string(kListJobsRequest)}));
}

TEST_F(SubmitHelperTest, UnchangedIsAnErrorUnlessAskedIfChangedAfterAListing) {
  const std::string fake = dir_.Sub("fake-helper");
  // Unchanged with no listing before it, then unchanged to a whole listing's request.
  Write(fake, FakeListingHelper({"same"}, dir_.Sub("requests")));
  chmod(fake.c_str(), 0755);
  SubmitHelper helper(fake);
  Result<std::string> listing = helper.ListJobs(Listing::kIfChanged);
  ASSERT_FALSE(listing);
  EXPECT_THAT(listing.error().message, HasSubstr("gave no listing of Slurm's jobs"));
  EXPECT_EQ(helper.HelperPid(), 0);  // stopped; the next request starts another
  Write(fake, FakeListingHelper({"ok JobId=7 JobState=RUNNING", "same"}, dir_.Sub("requests")));
  ASSERT_TRUE(helper.ListJobs(Listing::kWhole));
  listing = helper.ListJobs(Listing::kWhole);
  ASSERT_FALSE(listing);
  EXPECT_THAT(listing.error().message, HasSubstr("gave no listing of Slurm's jobs"));
}

TEST_F(SubmitHelperTest, AJobLargerThanAFrameIsRefusedWithoutStartingTheHelper) {
  SubmitHelper helper(HelperPath());
  Result<std::string> id =
      helper.Submit({{}, "#!/bin/bash\n" + std::string(kMaxSubmitFrameBytes, '#')});
  ASSERT_FALSE(id);
  EXPECT_EQ(id.error().code, ErrorCode::kInvalidArgument);
  EXPECT_THAT(id.error().message, HasSubstr("more than the 16777216"));
  EXPECT_EQ(helper.HelperPid(), 0);
}

TEST_F(SubmitHelperTest, AProgramThatCannotStartIsNamed) {
  SubmitHelper helper(dir_.Sub("no-such-helper"));
  Result<std::string> id = helper.Submit(kJob);
  ASSERT_FALSE(id);
  EXPECT_THAT(id.error().message, HasSubstr("cannot start " + dir_.Sub("no-such-helper")));
}

TEST(SlurmSubmitMain, WithoutItsSocketItExitsWithUsage) {
  const std::string command = HelperPath() + " 3</dev/null 2>/dev/null";
  const int status = std::system(command.c_str());
  ASSERT_TRUE(WIFEXITED(status));
  EXPECT_EQ(WEXITSTATUS(status), 2);
}

}  // namespace
}  // namespace drover::exec::slurm
