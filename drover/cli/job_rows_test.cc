#include "drover/cli/job_rows.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <string>

namespace drover::cli {
namespace {

using ::testing::HasSubstr;

TEST(ParseJobRows, ReadsTheFieldsTheTableShowsAndTheCursor) {
  const std::string body = R"({"jobs":[
      {"attempt":2,"created_at":5,"finished_at":0,"gpus":16,
       "hold":{"by":"ana","reason":"x","since":3},"id":7,"message":"waiting \"here\"",
       "metrics":{"gpu_hours":0.5,"queue_wait_ms":1500,"run_time_ms":0,"startup_ms":0,
                  "total_ms":9},
       "name":"caf\u00e9","owner":"ana","position":{"in_cluster":12,"in_queue":3,"queue":"a"},
       "priority":"high","queue":"a","state":"ready","team":"t","workers":2,"extra":[1,{"x":2}]},
      {"attempt":0,"gpus":0,"hold":null,"id":8,"message":"","metrics":{},"name":"b",
       "owner":"bo","priority":"","queue":"q","state":"pending"}],
    "next":8})";
  Result<JobRowPage> page = ParseJobRows(body);
  ASSERT_TRUE(page.has_value()) << page.error().ToString();
  ASSERT_EQ(page->jobs.size(), 2u);
  const JobRow& first = page->jobs[0];
  EXPECT_EQ(first.id, 7);
  EXPECT_EQ(first.name, "caf\xc3\xa9");
  EXPECT_EQ(first.owner, "ana");
  EXPECT_EQ(first.queue, "a");
  EXPECT_EQ(first.priority, "high");
  EXPECT_EQ(first.state, "ready");
  EXPECT_EQ(first.message, "waiting \"here\"");
  EXPECT_EQ(first.attempt, 2);
  EXPECT_EQ(first.gpus, 16);
  EXPECT_EQ(first.queue_wait_ms, 1500);
  EXPECT_EQ(first.run_time_ms, 0);
  EXPECT_EQ(first.in_queue, 3);
  EXPECT_EQ(first.in_cluster, 12);
  const JobRow& second = page->jobs[1];
  EXPECT_EQ(second.id, 8);
  EXPECT_EQ(second.state, "pending");
  EXPECT_FALSE(second.in_queue.has_value());
  EXPECT_FALSE(second.in_cluster.has_value());
  EXPECT_EQ(page->next, 8);
}

TEST(ParseJobRows, TheLastPageHasNoCursor) {
  for (const char* body :
       {R"({"jobs":[],"next":null})", R"({"jobs":[]})", R"({"jobs":[],"next":"x"})"}) {
    Result<JobRowPage> page = ParseJobRows(body);
    ASSERT_TRUE(page.has_value()) << body;
    EXPECT_TRUE(page->jobs.empty());
    EXPECT_FALSE(page->next.has_value()) << body;
  }
}

TEST(ParseJobRows, RefusesWhatIsNotAJobListNamingWhere) {
  struct Case {
    const char* body;
    const char* error;
  };
  for (const Case& c : {
           Case{"", "not JSON at byte"},
           Case{R"({"jobs":[{"id":1,)", "not JSON at byte"},
           Case{"[1,2]", "no \"jobs\" array"},
           Case{R"({"jobs":{"id":1}})", "no \"jobs\" array"},
           Case{R"({"next":3})", "no \"jobs\" array"},
           Case{R"({"jobs":[{"id":1},{"id":"2"}]})", "jobs[1].id: expected an integer"},
           Case{R"({"jobs":[{"id":1.5}]})", "jobs[0].id: expected an integer"},
           Case{R"({"jobs":[{"name":3}]})", "jobs[0].name: expected a string"},
           Case{R"({"jobs":[{"name":{"a":1}}]})", "jobs[0].name: expected a string"},
           Case{R"({"jobs":[{"id":[1]}]})", "jobs[0].id: expected an integer"},
           Case{R"({"jobs":[{"id":18446744073709551615}]})", "jobs[0].id: expected an integer"},
           Case{R"({"jobs":[{"attempt":-1}]})", "jobs[0].attempt: expected an integer from 0"},
           Case{R"({"jobs":[{"position":{"in_queue":3000000000}}]})",
                "jobs[0].position.in_queue: expected an integer from 0"},
           Case{R"({"jobs":[{"metrics":{"queue_wait_ms":"1s"}}]})",
                "jobs[0].metrics.queue_wait_ms: expected an integer"},
       }) {
    Result<JobRowPage> page = ParseJobRows(c.body);
    ASSERT_FALSE(page.has_value()) << c.body;
    EXPECT_THAT(page.error().message, HasSubstr(c.error)) << c.body;
    EXPECT_THAT(page.error().message, HasSubstr("the server's job list")) << c.body;
  }
}

TEST(ParseJobRows, DeepNestingInAnUnknownFieldIsSkipped) {
  const std::string deep = std::string(2000, '[') + std::string(2000, ']');
  Result<JobRowPage> page = ParseJobRows(R"({"jobs":[{"id":4,"extra":)" + deep + "}]}");
  ASSERT_TRUE(page.has_value()) << page.error().ToString();
  ASSERT_EQ(page->jobs.size(), 1u);
  EXPECT_EQ(page->jobs[0].id, 4);
}

}  // namespace
}  // namespace drover::cli
