// Listing through the real server and CLI (docs/api.md, "Pages" and "Queue positions"):
// `drover ls --pending` shows each waiting job's place in its queue and in the cluster in the
// scheduler's order, `explain` names the jobs ahead, `ls` pages through every job, and
// `ls --wide` shows whole messages.

#include <fmt/format.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <sstream>
#include <string>
#include <vector>

#include "tests/integration/harness.h"

namespace drover::integration {
namespace {

using nlohmann::json;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::Not;

// A job of `gpus` GPUs running `script`, at `priority`.
std::string Job(const std::string& name, int gpus, const std::string& script,
                const std::string& priority = "normal") {
  return fmt::format(
      "kind: Job\nname: {}\npriority: {}\nresources: {{cpu: 100m, memory: 64Mi, gpus: {}}}\n"
      "script: {}\n",
      name, priority, gpus, script);
}

// The lines of `text` after the header, as words.
std::vector<std::vector<std::string>> Rows(const std::string& text) {
  std::vector<std::vector<std::string>> rows;
  std::istringstream lines(text);
  std::string line;
  std::getline(lines, line);  // the header
  while (std::getline(lines, line)) rows.push_back(Words(line));
  return rows;
}

class Listing : public IntegrationTest {
 protected:
  // A server of one GPU, busy with a long job, so that every other GPU job waits.
  void SetUp() override {
    server_ = StartServer("data", "1xH100-80GB");
    ASSERT_TRUE(server_->ok());
    client_ = std::make_unique<api::ApiClient>(server_->Client());
    const std::vector<std::int64_t> holder = Submit(*client_, Job("holder", 1, "sleep 600"));
    ASSERT_EQ(holder.size(), 1u);
    ASSERT_EQ(WaitForState(*client_, holder[0], {"running"}), "running");
  }

  // Submits `spec` and waits until every job of it has a queue position.
  std::vector<std::int64_t> SubmitWaiting(const std::string& spec) {
    std::vector<std::int64_t> ids = Submit(*client_, spec);
    EXPECT_TRUE(WaitUntil([&] {
      auto listed = client_->Get("/v1/jobs?state=ready");
      if (!listed) return false;
      std::size_t positioned = 0;
      for (const json& job : listed->json["jobs"]) positioned += job.contains("position");
      return positioned == ids.size();
    })) << server_->Log();
    return ids;
  }

  CommandResult Drover(std::vector<std::string> args) {
    args.insert(args.begin(), {"--server", server_->url()});
    return RunDrover(args, dir_.path());
  }

  std::unique_ptr<ServerProcess> server_;
  std::unique_ptr<api::ApiClient> client_;
};

TEST_F(Listing, PendingShowsPositionsInTheSchedulersOrderAndExplainNamesTheJobsAhead) {
  const std::vector<std::int64_t> ids =
      SubmitWaiting(Job("first", 1, "true") + "---\n" + Job("second", 1, "true") + "---\n" +
                    Job("urgent", 1, "true", "high"));
  ASSERT_EQ(ids.size(), 3u);
  const std::string first = std::to_string(ids[0]), second = std::to_string(ids[1]),
                    urgent = std::to_string(ids[2]);

  CommandResult pending = Drover({"ls", "--pending"});
  ASSERT_EQ(pending.exit_code, 0) << pending.err;
  EXPECT_THAT(pending.out, HasSubstr("QUEUE POS  CLUSTER POS"));
  std::vector<std::vector<std::string>> rows = Rows(pending.out);
  ASSERT_EQ(rows.size(), 3u) << pending.out;
  // ID NAME OWNER QUEUE PRIORITY QUEUE-POS CLUSTER-POS ...: higher priority first, then the
  // earlier submission.
  EXPECT_THAT(std::vector<std::string>(rows[0].begin(), rows[0].begin() + 2),
              ElementsAre(urgent, "urgent"));
  EXPECT_THAT(std::vector<std::string>(rows[1].begin(), rows[1].begin() + 2),
              ElementsAre(first, "first"));
  EXPECT_THAT(std::vector<std::string>(rows[2].begin(), rows[2].begin() + 2),
              ElementsAre(second, "second"));
  for (int i = 0; i < 3; ++i) {
    EXPECT_EQ(rows[i][5], std::to_string(i + 1)) << pending.out;
    EXPECT_EQ(rows[i][6], std::to_string(i + 1)) << pending.out;
  }

  CommandResult explain = Drover({"explain", second});
  ASSERT_EQ(explain.exit_code, 0) << explain.err;
  EXPECT_THAT(explain.out, HasSubstr(fmt::format("2 jobs are ahead of it in queue default: {}, {}",
                                                 urgent, first)));
  CommandResult as_json = Drover({"-o", "json", "ls", "--pending"});
  ASSERT_EQ(as_json.exit_code, 0) << as_json.err;
  const json listed = json::parse(as_json.out);
  ASSERT_EQ(listed["jobs"].size(), 3u);
  EXPECT_EQ(listed["jobs"][2]["position"],
            (json{{"queue", "default"}, {"in_queue", 3}, {"in_cluster", 3}}));
}

TEST_F(Listing, LsPagesThroughEveryJobAndTheApiHandsOutCursors) {
  std::string spec;
  for (int i = 0; i < 5; ++i) spec += (i ? "---\n" : "") + Job(fmt::format("job{}", i), 1, "true");
  const std::vector<std::int64_t> ids = Submit(*client_, spec);
  ASSERT_EQ(ids.size(), 5u);
  const std::int64_t holder = ids[0] - 1;

  // The API: pages of two, each `next` the cursor of the one after, the last without.
  std::vector<std::int64_t> seen;
  std::string after;
  int pages = 0;
  while (true) {
    auto page = client_->Get("/v1/jobs?limit=2&order=asc" + after);
    ASSERT_TRUE(page) << page.error().message;
    ++pages;
    for (const json& job : page->json["jobs"]) seen.push_back(job["id"].get<std::int64_t>());
    if (page->json["next"].is_null()) break;
    after = "&after=" + page->json["next"].dump();
  }
  EXPECT_EQ(pages, 3);
  EXPECT_THAT(seen, ElementsAre(holder, ids[0], ids[1], ids[2], ids[3], ids[4]));
  auto bad = client_->Get("/v1/jobs?limit=0");
  ASSERT_FALSE(bad);
  EXPECT_THAT(bad.error().message, HasSubstr("query parameter limit: must be from 1 to 5000"));

  // The CLI pages through them all, and --limit takes the newest across pages.
  CommandResult all = Drover({"ls", "--page-size", "2"});
  ASSERT_EQ(all.exit_code, 0) << all.err;
  std::vector<std::string> listed;
  for (const auto& row : Rows(all.out)) listed.push_back(row[0]);
  EXPECT_EQ(listed.size(), 6u) << all.out;
  EXPECT_EQ(listed.front(), std::to_string(holder));
  EXPECT_EQ(listed.back(), std::to_string(ids[4]));
  CommandResult newest = Drover({"ls", "--page-size", "2", "--limit", "3"});
  ASSERT_EQ(newest.exit_code, 0) << newest.err;
  listed.clear();
  for (const auto& row : Rows(newest.out)) listed.push_back(row[0]);
  EXPECT_THAT(listed,
              ElementsAre(std::to_string(ids[4]), std::to_string(ids[3]), std::to_string(ids[2])));
}

TEST_F(Listing, WideShowsWholeMessages) {
  // A job no node can ever hold, accepted anyway: its message says why at length.
  const std::string spec = dir_.Sub("too-big.yaml");
  WriteFile(spec, Job("too-big", 4, "true"));
  CommandResult submitted = Drover({"submit", "--hold-infeasible", spec});
  ASSERT_EQ(submitted.exit_code, 0) << submitted.err;
  std::string message;
  ASSERT_TRUE(WaitUntil([&] {
    auto listed = client_->Get("/v1/jobs?state=ready");
    if (!listed || listed->json["jobs"].empty()) return false;
    message = listed->json["jobs"][0]["message"].get<std::string>();
    return message.size() > 70;  // what ls cuts it to
  })) << message;

  CommandResult cut = Drover({"ls", "--state", "ready"});
  ASSERT_EQ(cut.exit_code, 0) << cut.err;
  EXPECT_THAT(cut.out, Not(HasSubstr(message)));
  CommandResult wide = Drover({"ls", "--state", "ready", "--wide"});
  ASSERT_EQ(wide.exit_code, 0) << wide.err;
  EXPECT_THAT(wide.out, HasSubstr(message));
  CommandResult pending_wide = Drover({"ls", "--pending", "--wide"});
  ASSERT_EQ(pending_wide.exit_code, 0) << pending_wide.err;
  EXPECT_THAT(pending_wide.out, HasSubstr(message));
}

}  // namespace
}  // namespace drover::integration
