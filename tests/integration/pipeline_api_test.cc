// Pipeline runs through the API and the CLI against a real server: the roll-up of a run with a
// sweep, its lifecycle split adding up to its wall time, goodput, `drover ls --pipeline`,
// `drover get` of a stage, and cancelling a running pipeline (the run reads cancelled).

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "tests/integration/harness.h"

namespace drover::integration {
namespace {

using nlohmann::json;
using ::testing::ContainsRegex;
using ::testing::HasSubstr;

class PipelineApi : public IntegrationTest {};

// Two stages around a 3-trial sweep on GPUs, one trial at a time, passing value outputs down.
constexpr char kPipeline[] = R"(kind: Pipeline
name: tiny
team: vision
stages:
  - name: prep
    script: echo 5 > "$DROVER_OUTPUT_SIZE"
    resources: {cpu: 100m, memory: 64Mi}
    outputs:
      - {name: size}
  - name: sweep
    depends_on: [prep]
    matrix:
      grid: {lr: [1, 2, 3]}
    concurrency: 1
    objective: {metric: score, goal: maximize}
    script: echo "${{ matrix.lr }}" > "$DROVER_OUTPUT_SCORE"
    resources: {cpu: 100m, memory: 64Mi, gpus: 1}
    outputs:
      - {name: score}
  - name: report
    depends_on: [sweep]
    script: echo "best ${{ stages.sweep.outputs.score }}"
    resources: {cpu: 100m, memory: 64Mi}
)";

TEST_F(PipelineApi, RunRollsUpItsStagesAndItsSplitAddsUpToItsWallTime) {
  auto server = StartServer("data", "2xH100-80GB");
  ASSERT_TRUE(server->ok());
  api::ApiClient client = server->Client();
  std::vector<std::int64_t> ids = Submit(client, kPipeline, "tiny.yaml");
  ASSERT_EQ(ids.size(), 5u);
  const std::string run_id = std::to_string(ids[0]);
  ASSERT_EQ(WaitForTerminal(client, ids.back()), "succeeded") << server->Log();

  auto run = client.Pipeline(run_id);
  ASSERT_TRUE(run) << run.error().message;
  EXPECT_EQ((*run)["id"], ids[0]);
  EXPECT_EQ((*run)["name"], "tiny");
  EXPECT_EQ((*run)["state"], "succeeded");
  EXPECT_EQ((*run)["stages_done"], 3);
  EXPECT_EQ((*run)["jobs"], (json{{"succeeded", 5}}));
  const json& stages = (*run)["stages"];
  ASSERT_EQ(stages.size(), 3u) << run->dump(2);
  EXPECT_EQ(stages[0]["name"], "prep");
  EXPECT_EQ(stages[0]["jobs"][0]["outputs"], (json{{"size", "5"}}));
  EXPECT_EQ(stages[1]["name"], "sweep");
  EXPECT_EQ(stages[1]["state"], "succeeded");
  EXPECT_EQ(stages[1]["depends_on"],
            (json::array({{{"stage", "prep"}, {"condition", "succeeded"}}})));
  ASSERT_EQ(stages[1]["jobs"].size(), 3u);
  for (int i = 0; i < 3; ++i) {
    const json& trial = stages[1]["jobs"][i];
    const std::string lr = std::to_string(i + 1);
    EXPECT_EQ(trial["name"], "sweep." + lr);
    EXPECT_EQ(trial["trial"]["index"], i + 1);
    EXPECT_EQ(trial["trial"]["params"], (json{{"lr", lr}}));
    EXPECT_EQ(trial["outputs"], (json{{"score", lr}}));
  }
  EXPECT_EQ(stages[2]["name"], "report");
  EXPECT_EQ(stages[2]["state"], "succeeded");

  // The issue's check: the pipeline's lifecycle split adds up to its wall time, exactly.
  const std::int64_t wall = (*run)["wall_ms"];
  EXPECT_EQ(wall,
            (*run)["finished_at"].get<std::int64_t>() - (*run)["created_at"].get<std::int64_t>());
  std::int64_t phases = 0;
  for (const auto& [phase, ms] : (*run)["split"].items()) phases += ms.get<std::int64_t>();
  EXPECT_EQ(phases, wall) << (*run)["split"].dump();
  EXPECT_EQ((*run)["goodput"]["jobs"], 5);
  EXPECT_EQ((*run)["goodput"]["succeeded"], 5);

  // A trial names its run and lists each attempt's cost.
  json trial = GetJob(client, ids[2]);
  EXPECT_EQ(trial["pipeline_run"], ids[0]);
  EXPECT_EQ(trial["outputs"], (json{{"score", "2"}}));  // sweep.2
  ASSERT_EQ(trial["attempts"].size(), 1u);
  EXPECT_EQ(trial["attempts"][0]["lost_gpu_seconds"], 0.0);
  EXPECT_TRUE(trial["attempts"][0]["gpu_seconds"].is_number());
  EXPECT_TRUE(trial["split"].is_object());

  auto runs = client.Pipelines();
  ASSERT_TRUE(runs);
  ASSERT_EQ((*runs)["pipelines"].size(), 1u);
  EXPECT_EQ((*runs)["pipelines"][0]["id"], ids[0]);

  auto goodput = client.Goodput("team");
  ASSERT_TRUE(goodput) << goodput.error().message;
  ASSERT_EQ((*goodput)["groups"].size(), 1u);
  EXPECT_EQ((*goodput)["groups"][0]["name"], "vision");
  EXPECT_EQ((*goodput)["groups"][0]["succeeded"], 5);

  CommandResult list = RunDrover({"--server", server->url(), "ls", "--pipeline"}, dir_.path());
  EXPECT_EQ(list.exit_code, 0) << list.err;
  EXPECT_THAT(list.out, HasSubstr("STAGES"));
  EXPECT_THAT(list.out, ContainsRegex(run_id + " +tiny +succeeded +3/3 "));

  CommandResult get =
      RunDrover({"--server", server->url(), "get", std::to_string(ids[2])}, dir_.path());
  EXPECT_EQ(get.exit_code, 0) << get.err;
  EXPECT_THAT(get.out, HasSubstr("Pipeline run " + run_id + " (tiny): succeeded"));
  EXPECT_THAT(get.out, HasSubstr("|   |-- sweep.2 lr=2"));
  EXPECT_THAT(get.out, HasSubstr("`-- report"));
  EXPECT_THAT(get.out, HasSubstr("split (adds up to the wall time)"));

  auto unknown = client.Pipeline("9999");
  ASSERT_FALSE(unknown);
  EXPECT_EQ(unknown.error().code, ErrorCode::kNotFound);
  auto finished = client.CancelPipeline(run_id);
  ASSERT_FALSE(finished);
  EXPECT_EQ(finished.error().code, ErrorCode::kFailedPrecondition);
  auto bad_group = client.Goodput("gpu");
  ASSERT_FALSE(bad_group);
  EXPECT_EQ(bad_group.error().code, ErrorCode::kInvalidArgument);
}

// Issue 17, finding 4: a cancelled run read "failed", and the cancel said "cancelled; its state
// is now running". The run and its cancelled stages read `cancelled`, and the cancel names the
// state after it: `cancelling` while the running stage stops (here it lingers on SIGTERM until
// the test lets it go), then `cancelled`.
TEST_F(PipelineApi, ACancelledPipelineAndItsStagesReadCancelled) {
  auto server = StartServer("data", "2xH100-80GB");
  ASSERT_TRUE(server->ok());
  api::ApiClient client = server->Client();
  const std::string pid_file = dir_.Sub("hold.pid");
  const std::string release = dir_.Sub("release");
  std::vector<std::int64_t> ids = Submit(client, R"(kind: Pipeline
name: hold
stages:
  - name: wait
    script: |
      trap 'while [ ! -e )" + release + R"( ]; do sleep 0.05; done; exit 143' TERM
      echo $$ > )" + pid_file + R"(
      sleep 300 & wait
    resources: {cpu: 100m, memory: 64Mi, gpus: 1}
  - name: after
    depends_on: [wait]
    script: "true"
    resources: {cpu: 100m, memory: 64Mi}
)");
  ASSERT_EQ(ids.size(), 2u);
  const std::string run_id = std::to_string(ids[0]);
  ASSERT_EQ(WaitForState(client, ids[0], {"running"}), "running") << server->Log();
  ASSERT_TRUE(WaitUntil([&] { return !ReadLines(pid_file).empty(); }));
  const pid_t pid = std::stoi(ReadLines(pid_file).front());
  ASSERT_TRUE(ProcessAlive(pid));

  CommandResult cancel =
      RunDrover({"--server", server->url(), "cancel", "--pipeline", run_id}, dir_.path());
  EXPECT_EQ(cancel.exit_code, 0) << cancel.err;
  EXPECT_EQ(cancel.out, "pipeline run " + run_id + " (hold) is being cancelled: 1 job stopping\n");
  // The stage that had not started is cancelled at once; the run reads cancelling meanwhile.
  EXPECT_EQ(WaitForTerminal(client, ids[1]), "cancelled");
  CommandResult stopping = RunDrover({"--server", server->url(), "ls", "--pipeline"}, dir_.path());
  EXPECT_THAT(stopping.out, ContainsRegex(run_id + " +hold +cancelling +1/2 "));
  auto cancelling = client.Pipeline(run_id);
  ASSERT_TRUE(cancelling) << cancelling.error().message;
  EXPECT_EQ((*cancelling)["state"], "cancelling");
  EXPECT_EQ((*cancelling)["stages"][0]["state"], "running");
  EXPECT_EQ((*cancelling)["stages"][1]["state"], "cancelled");

  WriteFile(release, "");
  EXPECT_EQ(WaitForTerminal(client, ids[0]), "cancelled");
  EXPECT_TRUE(WaitUntil([&] { return !ProcessAlive(pid); })) << "the stage's process survived";
  auto run = client.Pipeline(run_id);
  ASSERT_TRUE(run) << run.error().message;
  EXPECT_EQ((*run)["state"], "cancelled");
  EXPECT_EQ((*run)["stages"][0]["state"], "cancelled");
  EXPECT_EQ((*run)["stages"][1]["state"], "cancelled");
  EXPECT_EQ((*run)["jobs"], (json{{"cancelled", 2}}));
  CommandResult list = RunDrover({"--server", server->url(), "ls", "--pipeline"}, dir_.path());
  EXPECT_THAT(list.out, ContainsRegex(run_id + " +hold +cancelled +2/2 "));
  CommandResult get = RunDrover({"--server", server->url(), "get", run_id}, dir_.path());
  EXPECT_THAT(get.out, HasSubstr("Pipeline run " + run_id + " (hold): cancelled"));
  // A finished run cannot be cancelled again.
  auto again = client.CancelPipeline(run_id);
  ASSERT_FALSE(again);
  EXPECT_EQ(again.error().code, ErrorCode::kFailedPrecondition);
}

}  // namespace
}  // namespace drover::integration
