#include "drover/cli/text.h"

#include <gtest/gtest.h>
#include <stdlib.h>

#include <filesystem>
#include <fstream>

namespace drover::cli {
namespace {

using nlohmann::json;

// A summary of pipeline run 20 (etl) in `state` with `jobs` counted by state.
json Summary(const std::string& state, json jobs) {
  return json{{"id", 20}, {"name", "etl"}, {"state", state}, {"jobs", std::move(jobs)}};
}

// A zone is a TZif file under the zoneinfo directory, named relative to it; without the
// directory every name passes (the server decides).
TEST(ZoneinfoHas, NamesAZoneFileUnderTheDirectory) {
  char made[] = "/tmp/drover-zoneinfo-XXXXXX";
  ASSERT_NE(mkdtemp(made), nullptr);
  const std::string dir = made;
  std::filesystem::create_directories(dir + "/Europe");
  std::ofstream(dir + "/Europe/Berlin") << "TZif2 and the rest";
  std::ofstream(dir + "/UTC") << "TZif";
  std::ofstream(dir + "/zone.tab") << "# not a zone";
  EXPECT_TRUE(ZoneinfoHas("Europe/Berlin", dir));
  EXPECT_TRUE(ZoneinfoHas("UTC", dir));
  EXPECT_FALSE(ZoneinfoHas("Europe/Nowhere", dir));
  EXPECT_FALSE(ZoneinfoHas("Europe", dir));  // a directory
  EXPECT_FALSE(ZoneinfoHas("zone.tab", dir));
  EXPECT_FALSE(ZoneinfoHas("", dir));
  EXPECT_FALSE(ZoneinfoHas(dir + "/UTC", dir));     // absolute
  EXPECT_FALSE(ZoneinfoHas("Europe/../UTC", dir));  // climbs
  EXPECT_TRUE(ZoneinfoHas("Mars/Base", dir + "/missing"));
  std::filesystem::remove_all(dir);
}

// A directory, or a file that never ends, is refused naming it, not read into memory for ever.
TEST(ReadSpecFile, RefusesADirectoryAndMoreThanTheBound) {
  Result<std::string> directory = ReadSpecFile("/tmp");
  ASSERT_FALSE(directory);
  EXPECT_EQ(directory.error().message, "cannot read /tmp: it is a directory");
  Result<std::string> endless = ReadSpecFile("/dev/zero");
  ASSERT_FALSE(endless);
  EXPECT_EQ(endless.error().message,
            "cannot read /dev/zero: more than 16 MiB; a spec file is at most that");
  Result<std::string> missing = ReadSpecFile("/nonexistent/spec.yaml");
  ASSERT_FALSE(missing);
  EXPECT_EQ(missing.error().message,
            "cannot read /nonexistent/spec.yaml: No such file or directory");
}

TEST(DescribeCancelledPipeline, NamesTheStateTheCancelLeft) {
  EXPECT_EQ(DescribeCancelledPipeline(Summary("cancelled", {{"cancelled", 3}})),
            "pipeline run 20 (etl) cancelled\n");
  EXPECT_EQ(DescribeCancelledPipeline(
                Summary("cancelling", {{"succeeded", 1}, {"running", 2}, {"cancelled", 1}})),
            "pipeline run 20 (etl) is being cancelled: 2 jobs stopping\n");
  EXPECT_EQ(DescribeCancelledPipeline(Summary("cancelling", {{"starting", 1}})),
            "pipeline run 20 (etl) is being cancelled: 1 job stopping\n");
  EXPECT_EQ(DescribeCancelledPipeline(Summary("failed", {{"failed", 1}, {"cancelled", 1}})),
            "pipeline run 20 (etl): its unfinished jobs were cancelled; it has failed\n");
}

TEST(ParseSince, TakesATimeOrADurationAgo) {
  constexpr TimeMs kNow = 1'764'576'000'000;  // 2025-12-01T08:00:00Z
  EXPECT_EQ(ParseSince("24h", kNow), kNow - 24 * kMillisPerHour);
  EXPECT_EQ(ParseSince("2025-12-01T08:00:00Z", 0), kNow);
  EXPECT_EQ(ParseSince("2025-12-01T10:00:00+02:00", 0), kNow);
  Result<TimeMs> bad = ParseSince("yesterday", kNow);
  ASSERT_FALSE(bad.has_value());
  EXPECT_EQ(bad.error().code, ErrorCode::kInvalidArgument);
  EXPECT_EQ(bad.error().message,
            "--since: 'yesterday' is neither a time (2026-12-01T08:00:00Z) nor a duration ago "
            "(24h)");
}

TEST(OrNone, AnEmptyTeamReadsNone) {
  EXPECT_EQ(OrNone(""), "(none)");
  EXPECT_EQ(OrNone("team-a"), "team-a");
  const std::string table =
      DescribeGoodput(json{{"by", "team"},
                           {"groups", json::array({json{{"name", ""}, {"jobs", 2}}})},
                           {"total", json{{"jobs", 2}}}});
  EXPECT_NE(table.find("\n(none) "), std::string::npos) << table;
}

TEST(DescribeUserActions, ListsOnlyWhatUsersDidWithWhoAndWhy) {
  const json job = {
      {"transitions",
       {{{"from_state", "pending"},
         {"to_state", "ready"},
         {"at", 1},
         {"cause", "released"},
         {"actor", "system"}},
        {{"from_state", "ready"},
         {"to_state", "ready"},
         {"at", 2},
         {"cause", "held: maint"},
         {"actor", "bob"}},
        {{"from_state", "ready"}, {"to_state", "admitted"}, {"at", 3}, {"cause", "dequeued"}}}}};
  const std::string text = DescribeUserActions(job);
  EXPECT_EQ(text.rfind("user actions:\n", 0), 0u) << text;
  EXPECT_NE(text.find("bob: held: maint\n"), std::string::npos) << text;
  EXPECT_EQ(text.find("dequeued"), std::string::npos) << text;
  EXPECT_EQ(text.find("released"), std::string::npos) << text;
  EXPECT_EQ(DescribeUserActions(json{{"transitions", json::array()}}), "");
}

}  // namespace
}  // namespace drover::cli
