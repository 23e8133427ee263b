// The bounds of limits.h as the job parser applies them (docs/spec.md, "Limits"): expanded size,
// the strings exec receives, UTF-8, and the names other users see.

#include "drover/spec/limits.h"

#include <fmt/format.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <string>

#include "drover/spec/parse.h"
#include "drover/spec/spec_test_util.h"

namespace drover::spec {
namespace {

using ::testing::ElementsAre;
using testing::Errors;
using ::testing::HasSubstr;
using ::testing::IsEmpty;
using testing::Options;

// A job whose env block, 100 KB, is an anchor that `uses` jobs reuse through an alias.
std::string AnchorReusedBy(int uses) {
  std::string text =
      "- kind: Job\n  name: j0\n  script: x\n  env: &big\n    A: " + std::string(100'000, 'x') +
      "\n";
  for (int i = 1; i <= uses; ++i) {
    text += fmt::format("- kind: Job\n  name: j{}\n  script: x\n  env: *big\n", i);
  }
  return text;
}

TEST(SpecLimits, RefusesAStreamWhoseAliasesExpandPastTheBound) {
  // 100 KB of text that expands to 30 MB: refused where the total crosses 4 MiB (the 41st use
  // of the anchor: 42 copies of 100 KB), naming the file, position and field.
  EXPECT_THAT(Errors(AnchorReusedBy(300)),
              ElementsAre("jobs.yaml:169:8: error: [41].env: the document expands to more than "
                          "4194304 bytes (aliases count as copies of what their anchor names); "
                          "the limit is 4194304 bytes"));
}

TEST(SpecLimits, AcceptsReuseWithinTheBound) {
  EXPECT_THAT(Errors(AnchorReusedBy(10)), IsEmpty());
  ParseOptions unbounded = Options();
  unbounded.limits.max_expanded_bytes = 0;
  EXPECT_THAT(Errors(AnchorReusedBy(300), unbounded), IsEmpty());
}

TEST(SpecLimits, CountsNestedAliasesWithoutWalkingThem) {
  // "Billion laughs": each level doubles; 64 levels would be 2^64 copies. Counted in linear time.
  std::string text = "a0: &a0 [x, x]\n";
  for (int i = 1; i < 64; ++i) text += fmt::format("a{}: &a{} [*a{}, *a{}]\n", i, i, i - 1, i - 1);
  const std::vector<std::string> errors = Errors(text);
  ASSERT_THAT(errors, ::testing::SizeIs(1));
  EXPECT_THAT(
      errors[0],
      HasSubstr("jobs.yaml:20:12: error: a19[0]: the document expands to more than 4194304"));
}

TEST(SpecLimits, RefusesAnArgumentLongerThanExecTakes) {
  const std::string big(128 * 1024, 'a');
  EXPECT_THAT(Errors("kind: Job\nname: a\ncommand: [echo, " + big + "]\n"),
              ElementsAre("jobs.yaml:3:17: error: command[1]: the argument is 131072 bytes; exec "
                          "takes at most 131071 bytes per string (Linux MAX_ARG_STRLEN, 128 KiB "
                          "with its NUL)"));
  EXPECT_THAT(Errors("kind: Job\nname: a\nscript: " + big + "\n"),
              ElementsAre(HasSubstr("jobs.yaml:3:9: error: script: the script is 131072 bytes")));
  // NAME=value counts: 1 + 1 + 131069 = 131071 passes, one more byte does not.
  EXPECT_THAT(Errors("kind: Job\nname: a\nscript: x\nenv: {A: " + big.substr(3) + "}\n"),
              IsEmpty());
  EXPECT_THAT(
      Errors("kind: Job\nname: a\nscript: x\nenv: {A: " + big.substr(2) + "}\n"),
      ElementsAre(HasSubstr("jobs.yaml:4:10: error: env.A: the entry NAME=value is 131072 bytes")));
}

TEST(SpecLimits, RefusesCommandAndEnvTogetherOverTheLaunchBound) {
  std::string env;
  for (int i = 0; i < 9; ++i) env += fmt::format("  V{}: {}\n", i, std::string(120'000, 'v'));
  EXPECT_THAT(Errors("kind: Job\nname: a\ncommand: [run]\nenv:\n" + env),
              ElementsAre("jobs.yaml:1:1: error: command: command, script and env take 1080120 "
                          "bytes as exec counts them (each string with its NUL and pointer); a "
                          "job may use at most 1048576 bytes"));
}

TEST(SpecLimits, RefusesInvalidUtf8AtItsFieldAndPosition) {
  EXPECT_THAT(Errors("kind: Job\nname: a\ncommand: [echo, \"ok\", \"b\xFFy\"]\n"),
              ElementsAre("jobs.yaml:3:25: error: command[2]: invalid UTF-8 (byte 0xFF); the "
                          "spec must be UTF-8 text"));
  EXPECT_THAT(Errors("kind: Job\nname: a\nscript: x\nenv:\n  K: \"\xC3\x28\"\n"),
              ElementsAre("jobs.yaml:5:7: error: env.K: invalid UTF-8 (byte 0xC3); the spec must "
                          "be UTF-8 text"));
  // In JSON too (read as YAML), and in a key.
  EXPECT_THAT(Errors("{\"kind\": \"Job\", \"name\": \"a\", \"script\": \"x\", \"env\": "
                     "{\"K\xE9\": \"v\"}}"),
              ElementsAre("jobs.yaml:1:55: error: env.K\\xe9: invalid UTF-8 (byte 0xE9); "
                          "the spec must be UTF-8 text"));
  // Text that is UTF-8, U+FFFD included, is kept as written.
  Result<std::vector<model::JobSpec>> jobs =
      ParseJobs("kind: Job\nname: a\ncommand: [echo, \"caf\xC3\xA9 \xEF\xBF\xBD\"]\n", Options());
  ASSERT_TRUE(jobs) << jobs.error().ToString();
  EXPECT_EQ(jobs->front().command[1], "caf\xC3\xA9 \xEF\xBF\xBD");
}

TEST(SpecLimits, RefusesOwnerTeamAndQueueOutsideTheirCharacterSets) {
  EXPECT_THAT(
      Errors("kind: Job\nname: a\nscript: x\nowner: \"ev\\e[2Jil\"\nteam: a/b\nqueue: \"q\\n\"\n"),
      ElementsAre("jobs.yaml:4:8: error: owner: invalid owner 'ev\\x1b[2Jil': use 1 to 64 "
                  "letters, digits, '.', '_', '-' or '@' (no spaces, control characters or '/')",
                  "jobs.yaml:5:7: error: team: invalid team 'a/b': use 1 to 64 letters, digits, "
                  "'.', '_', '-' or '@' (no spaces, control characters or '/')",
                  "jobs.yaml:6:8: error: queue: invalid queue name 'q\\x0a': use 1 to 63 "
                  "lowercase letters, digits, '.', '_' or '-', starting with a letter or digit"));
  EXPECT_THAT(Errors("kind: Pipeline\nname: p\nowner: \"a b\"\nstages: [{name: s, script: x}]\n"),
              ElementsAre(HasSubstr("jobs.yaml:3:8: error: owner: invalid owner 'a b'")));
  Result<std::vector<model::JobSpec>> jobs =
      ParseJobs("kind: Job\nname: a\nscript: x\nowner: Alice.Smith@example.com\nteam: ml_infra-2\n",
                Options());
  ASSERT_TRUE(jobs) << jobs.error().ToString();
  EXPECT_EQ(jobs->front().owner, "Alice.Smith@example.com");
  EXPECT_EQ(jobs->front().team, "ml_infra-2");
}

TEST(SpecLimits, HoldInfeasibleComesFromTheSpecOrTheOptions) {
  ParseOptions hold = Options();
  hold.hold_infeasible = true;
  auto parse = [](std::string_view text, const ParseOptions& options) {
    Result<std::vector<model::JobSpec>> jobs = ParseJobs(text, options);
    EXPECT_TRUE(jobs) << jobs.error().ToString();
    return jobs ? jobs->front().hold_infeasible : false;
  };
  EXPECT_FALSE(parse("kind: Job\nname: a\nscript: x\n", Options()));
  EXPECT_TRUE(parse("kind: Job\nname: a\nscript: x\n", hold));
  EXPECT_TRUE(parse("kind: Job\nname: a\nscript: x\nhold_infeasible: true\n", Options()));
  EXPECT_FALSE(parse("kind: Job\nname: a\nscript: x\nhold_infeasible: false\n", hold));
  EXPECT_TRUE(
      parse("kind: Pipeline\nname: p\nhold_infeasible: true\nstages: [{name: s, script: "
            "x}]\n",
            Options()));
}

TEST(SpecLimits, PrincipalNames) {
  EXPECT_TRUE(IsValidPrincipal("alice"));
  EXPECT_TRUE(IsValidPrincipal(std::string(64, 'a')));
  EXPECT_FALSE(IsValidPrincipal(std::string(65, 'a')));
  EXPECT_FALSE(IsValidPrincipal(""));
  EXPECT_FALSE(IsValidPrincipal("a\tb"));
  EXPECT_FALSE(IsValidPrincipal("caf\xC3\xA9"));
  EXPECT_EQ(EscapeForMessage("a\x1b[0m\xFF"), "a\\x1b[0m\\xff");
}

}  // namespace
}  // namespace drover::spec
