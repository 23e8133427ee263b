// Issue 18, "readable output", against a real server through the CLI: a job without a team
// reads "(none)" (goodput by team, get), `goodput --since` takes a time or a duration ago, the
// submission is an event rather than a "pending -> pending" step, and explain says "has
// succeeded" rather than "is succeeded".

#include <fmt/format.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <string>

#include "tests/integration/harness.h"

namespace drover::integration {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

class ReadableOutput : public IntegrationTest {
 protected:
  void SetUp() override {
    server_ = StartServer("data", "0");
    ASSERT_TRUE(server_->ok());
    api::ApiClient client = server_->Client();
    auto ids = Submit(client,
                      "kind: Job\nname: quick\nresources: {cpu: 100m, memory: 16Mi}\n"
                      "command: ['true']\n");
    ASSERT_EQ(ids.size(), 1u);
    id_ = std::to_string(ids[0]);
    ASSERT_EQ(WaitForTerminal(client, ids[0]), "succeeded") << server_->Log();
  }

  CommandResult Drover(std::vector<std::string> args) {
    args.insert(args.begin(), {"--server", server_->url()});
    return RunDrover(args, dir_.path());
  }

  std::unique_ptr<ServerProcess> server_;
  std::string id_;
};

TEST_F(ReadableOutput, AJobWithoutATeamReadsNone) {
  CommandResult goodput = Drover({"goodput", "--by", "team"});
  ASSERT_EQ(goodput.exit_code, 0) << goodput.err;
  EXPECT_THAT(goodput.out, HasSubstr("\n(none) "));
  CommandResult get = Drover({"get", id_});
  ASSERT_EQ(get.exit_code, 0) << get.err;
  EXPECT_THAT(get.out, HasSubstr("team: (none)"));
}

TEST_F(ReadableOutput, GoodputSinceTakesATimeOrADurationAgo) {
  // The job was created within the hour and long after 2000.
  for (const char* since : {"1h", "2000-01-01T00:00:00Z"}) {
    CommandResult recent = Drover({"goodput", "--since", since});
    ASSERT_EQ(recent.exit_code, 0) << recent.err;
    EXPECT_THAT(recent.out, HasSubstr("\ndefault ")) << since;
  }
  CommandResult future = Drover({"goodput", "--since", "2099-01-01T00:00:00Z"});
  ASSERT_EQ(future.exit_code, 0) << future.err;
  EXPECT_THAT(future.out, Not(HasSubstr("\ndefault ")));
  CommandResult bad = Drover({"goodput", "--since", "yesterday"});
  EXPECT_EQ(bad.exit_code, 2);
  EXPECT_THAT(bad.err, HasSubstr("--since: 'yesterday' is neither a time"));
}

TEST_F(ReadableOutput, TheSubmissionIsAnEventAndAFinishedJobHasSucceeded) {
  CommandResult get = Drover({"get", id_});
  ASSERT_EQ(get.exit_code, 0) << get.err;
  EXPECT_THAT(get.out, HasSubstr("submitted  (pending)"));
  EXPECT_THAT(get.out, Not(HasSubstr("pending -> pending")));
  CommandResult explain = Drover({"explain", id_});
  ASSERT_EQ(explain.exit_code, 0) << explain.err;
  EXPECT_THAT(explain.out, HasSubstr(fmt::format("job {} has succeeded (finished)", id_)));
  EXPECT_THAT(explain.out, Not(HasSubstr("is succeeded")));
}

}  // namespace
}  // namespace drover::integration
