#include "drover/cli/text.h"

#include <gtest/gtest.h>

namespace drover::cli {
namespace {

using nlohmann::json;

// A summary of pipeline run 20 (etl) in `state` with `jobs` counted by state.
json Summary(const std::string& state, json jobs) {
  return json{{"id", 20}, {"name", "etl"}, {"state", state}, {"jobs", std::move(jobs)}};
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
            "pipeline run 20 (etl): its unfinished jobs were cancelled; it is now failed\n");
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
