// Workflows with a real server and real processes (docs/workflows.md): the example pipeline run
// with `drover run`, retries that resume from a checkpoint, outputs that only a successful
// attempt publishes, a sweep's concurrency, inputs a job waits for, and dependency conditions.

#include <fmt/format.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <sys/stat.h>

#include <atomic>
#include <chrono>
#include <ctime>
#include <filesystem>
#include <map>
#include <set>
#include <sstream>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "tests/integration/harness.h"

namespace drover::integration {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;
using ::testing::ElementsAre;
using ::testing::HasSubstr;

class Workflow : public IntegrationTest {};

// The rows of the final table `drover run` prints (a header starting with JOB NAME STATE).
std::vector<std::vector<std::string>> FinalTable(const std::string& output) {
  std::istringstream out(output);
  std::vector<std::vector<std::string>> rows;
  std::string line;
  bool in_table = false;
  while (std::getline(out, line)) {
    std::vector<std::string> words = Words(line);
    if (words.size() > 2 && words[0] == "JOB" && words[2] == "STATE") {
      in_table = true;
      rows.clear();
      continue;
    }
    if (!in_table) continue;
    if (words.size() < 3 || words[0].find_first_not_of("0123456789") != std::string::npos) {
      in_table = false;
      continue;
    }
    rows.push_back(words);
  }
  return rows;
}

// The (from_state, to_state) pairs of a job's stored transitions that change its state, oldest
// first (the first record, pending -> pending, is the submission).
std::vector<std::pair<std::string, std::string>> Transitions(const json& job) {
  std::vector<std::pair<std::string, std::string>> out;
  for (const json& t : job["transitions"]) {
    if (t["from_state"] == t["to_state"]) continue;
    out.emplace_back(t["from_state"].get<std::string>(), t["to_state"].get<std::string>());
  }
  return out;
}

// Modification time of `path` in seconds since the epoch (0 if it does not exist).
std::time_t ModifiedAt(const std::string& path) {
  struct stat info {};
  return stat(path.c_str(), &info) == 0 ? info.st_mtime : 0;
}

// Entries of directory `path` (empty if it does not exist).
std::vector<std::string> Entries(const std::string& path) {
  std::vector<std::string> out;
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator(path, ec)) {
    out.push_back(entry.path().filename().string());
  }
  return out;
}

TEST_F(Workflow, ExamplePipelineRunsToTheEndWithDrover) {
  // The example publishes under /tmp/drover-pipeline (its paths are absolute); outputs of an
  // earlier run there are replaced, so only this run's are newer than `started`.
  const std::string published = "/tmp/drover-pipeline";
  const std::time_t started = std::time(nullptr);
  const std::string data = dir_.Sub("data");
  CommandResult run = RunDrover(
      {"run", SourceDir() + "/examples/pipeline.yaml", "--gpus", "4xH100-80GB", "--data", data},
      dir_.path(), std::chrono::milliseconds(300'000));
  EXPECT_EQ(run.exit_code, 0) << run.out << run.err;

  // preprocess, six trials, evaluate: all succeeded, each at the first attempt.
  std::vector<std::vector<std::string>> rows = FinalTable(run.out);
  ASSERT_EQ(rows.size(), 8u) << run.out;
  const std::vector<std::string> names = {"preprocess", "train.1", "train.2", "train.3",
                                          "train.4",    "train.5", "train.6", "evaluate"};
  for (std::size_t i = 0; i < names.size(); ++i) {
    EXPECT_EQ(rows[i][1], names[i]) << run.out;
    EXPECT_EQ(rows[i][2], "succeeded") << run.out;
    EXPECT_EQ(rows[i][3], "1") << run.out;
  }

  // evaluate read the best trial's model (lr 0.03, 4 layers: trial 5 of the grid).
  const std::string evaluate = rows[7][0];
  std::string evaluate_log;
  for (const std::string& node : Entries(data + "/runs")) {
    const std::string log = fmt::format("{}/runs/{}/{}/1/0/stdout.log", data, node, evaluate);
    if (fs::exists(log)) evaluate_log = ReadFile(log);
  }
  EXPECT_THAT(evaluate_log, HasSubstr("best trial: lr=0.03 layers=4 accuracy=0.9500")) << run.out;

  // The outputs are at their published paths, written by this run, and no staging is left.
  const std::string dataset = published + "/dataset/train.csv";
  EXPECT_EQ(ReadLines(dataset).size(), 1000u);
  EXPECT_GE(ModifiedAt(dataset), started);
  for (int trial = 1; trial <= 6; ++trial) {
    const std::string model = fmt::format("{}/model-{}.json", published, trial);
    json parsed = json::parse(ReadFile(model), nullptr, false);
    ASSERT_TRUE(parsed.is_object()) << model;
    EXPECT_EQ(parsed["lr"], trial % 3 == 1 ? 0.1 : trial % 3 == 2 ? 0.03 : 0.01) << model;
    EXPECT_EQ(parsed["layers"], trial <= 3 ? 2 : 4) << model;
    EXPECT_GE(ModifiedAt(model), started) << model;
  }
  EXPECT_THAT(Entries(published + "/.drover-staging"), ::testing::IsEmpty());
}

// A job that checkpoints after every step and fails twice: each retry resumes where the last
// checkpoint left off, with DROVER_RESUME=1 and the same checkpoint directory.
TEST_F(Workflow, RetriesResumeFromTheLastCheckpoint) {
  auto server = StartServer("data", "4xH100-80GB");
  ASSERT_TRUE(server->ok());
  api::ApiClient client = server->Client();
  const std::string steps = dir_.Sub("steps.log");
  auto ids = Submit(client, fmt::format(R"(kind: Job
name: resumable
resources: {{cpu: 100m, memory: 64Mi, gpus: 1}}
checkpoint_dir: {0}
resume: true
retry: {{max_attempts: 3}}
script: |
  set -e
  step=0
  if [ "$DROVER_RESUME" = 1 ]; then step=$(cat "$DROVER_CHECKPOINT_DIR/step"); fi
  echo "attempt $DROVER_ATTEMPT resume ${{DROVER_RESUME:-0}} from $step" >> {1}
  while [ "$step" -lt 10 ]; do
    step=$((step + 1))
    echo "attempt $DROVER_ATTEMPT step $step" >> {1}
    echo "$step" > "$DROVER_CHECKPOINT_DIR/step.tmp"
    mv "$DROVER_CHECKPOINT_DIR/step.tmp" "$DROVER_CHECKPOINT_DIR/step"
    touch "$DROVER_CHECKPOINT_DIR/.drover-checkpoint"
    if [ "$DROVER_ATTEMPT" = 1 ] && [ "$step" = 3 ]; then exit 1; fi
    if [ "$DROVER_ATTEMPT" = 2 ] && [ "$step" = 6 ]; then exit 1; fi
  done
)",
                                        dir_.Sub("checkpoints"), steps));
  ASSERT_EQ(ids.size(), 1u);
  ASSERT_EQ(WaitForTerminal(client, ids[0]), "succeeded") << GetJob(client, ids[0]).dump(2);

  // Every step ran once, in order: attempts 2 and 3 continued instead of starting from 0.
  EXPECT_THAT(
      ReadLines(steps),
      ElementsAre("attempt 1 resume 0 from 0", "attempt 1 step 1", "attempt 1 step 2",
                  "attempt 1 step 3", "attempt 2 resume 1 from 3", "attempt 2 step 4",
                  "attempt 2 step 5", "attempt 2 step 6", "attempt 3 resume 1 from 6",
                  "attempt 3 step 7", "attempt 3 step 8", "attempt 3 step 9", "attempt 3 step 10"));

  json job = GetJob(client, ids[0]);
  ASSERT_EQ(job["attempts"].size(), 3u) << job.dump(2);
  for (int i = 0; i < 3; ++i) {
    const json& attempt = job["attempts"][i];
    EXPECT_EQ(attempt["number"], i + 1);
    EXPECT_EQ(attempt.value("resumed", false), i > 0) << attempt.dump(2);
    // Each attempt checkpointed itself (a marker left by an earlier attempt does not count).
    EXPECT_GE(attempt.value("last_checkpoint_at", std::int64_t{0}),
              attempt["placed_at"].get<std::int64_t>())
        << attempt.dump(2);
  }
  for (int i = 0; i < 2; ++i) {
    const json& attempt = job["attempts"][i];
    EXPECT_EQ(attempt["outcome"], "requeued") << attempt.dump(2);  // retried
    EXPECT_THAT(attempt["outcome_reason"].get<std::string>(), HasSubstr("exit 1"));
    // Its successor resumed: only the GPU time after its last checkpoint was lost (1 GPU).
    const std::int64_t lost_ms = attempt["finished_at"].get<std::int64_t>() -
                                 attempt["last_checkpoint_at"].get<std::int64_t>();
    EXPECT_GE(lost_ms, 0) << attempt.dump(2);
    EXPECT_DOUBLE_EQ(attempt["lost_gpu_seconds"].get<double>(),
                     static_cast<double>(lost_ms) / 1000.0)
        << attempt.dump(2);
    EXPECT_LE(attempt["lost_gpu_seconds"].get<double>(), attempt["gpu_seconds"].get<double>())
        << attempt.dump(2);
  }
  EXPECT_EQ(job["attempts"][2]["outcome"], "succeeded");
  EXPECT_EQ(job["attempts"][2]["lost_gpu_seconds"], 0.0) << job["attempts"][2].dump(2);

  // The transitions say why each retry happened and that it resumed.
  std::vector<std::string> retries;
  for (const json& t : job["transitions"]) {
    if (t["to_state"] == "ready" && t["from_state"] != "pending") retries.push_back(t["cause"]);
  }
  ASSERT_EQ(retries.size(), 2u) << job["transitions"].dump(2);
  for (int i = 0; i < 2; ++i) {
    EXPECT_THAT(retries[i], HasSubstr(fmt::format("attempt {} failed", i + 1)));
    EXPECT_THAT(retries[i], HasSubstr("exit 1"));
    EXPECT_THAT(retries[i], HasSubstr("resuming from its checkpoint"));
  }
}

// A killed attempt publishes nothing and leaves no staging behind; a successful one publishes
// the complete file, and the next replaces it in one step: a reader always sees one of the two
// complete files.
TEST_F(Workflow, OnlyASuccessfulAttemptPublishesItsOutput) {
  auto server = StartServer("data", "4xH100-80GB");
  ASSERT_TRUE(server->ok());
  api::ApiClient client = server->Client();
  const std::string out_dir = dir_.Sub("out");
  fs::create_directories(out_dir);
  const std::string result = out_dir + "/result.txt";
  const std::string started = dir_.Sub("started");

  auto job_writing = [&](const std::string& name, const std::string& script) {
    return fmt::format(R"(kind: Job
name: {0}
resources: {{cpu: 100m, memory: 64Mi}}
outputs:
  - {{name: result, path: {1}}}
script: |
{2})",
                       name, result, script);
  };

  // Killed after writing part of its output.
  auto killed =
      Submit(client, job_writing("killed", fmt::format(R"(  echo partial > "$DROVER_OUTPUT_RESULT"
  echo "$DROVER_OUTPUT_RESULT" > {0}
  sleep 300
)",
                                                       started)));
  ASSERT_EQ(killed.size(), 1u);
  ASSERT_TRUE(WaitUntil([&] { return ReadLines(started).size() == 1; }))
      << GetJob(client, killed[0]).dump(2);
  const std::string staged = ReadLines(started)[0];
  EXPECT_EQ(staged,
            fmt::format("{}/.drover-staging/job-{}.attempt-1/result.txt", out_dir, killed[0]));
  EXPECT_EQ(ReadFile(staged), "partial\n");
  ASSERT_TRUE(client.Post(fmt::format("/v1/jobs/{}/cancel", killed[0]), "", "application/json"));
  ASSERT_EQ(WaitForTerminal(client, killed[0]), "cancelled");
  EXPECT_FALSE(fs::exists(result));
  EXPECT_TRUE(WaitUntil([&] { return !fs::exists(fs::path(staged).parent_path()); }))
      << "the killed attempt's staging directory is still there";
  EXPECT_FALSE(fs::exists(result));
  EXPECT_TRUE(GetJob(client, killed[0])["outputs"].empty()) << GetJob(client, killed[0]).dump(2);

  // Two complete versions, each written in two parts with a pause in between.
  const std::string first(64 * 1024, 'a');
  const std::string second(64 * 1024, 'b');
  auto write_in_parts = [&](char c) {
    return fmt::format(R"(  head -c 32768 /dev/zero | tr '\0' '{0}' > "$DROVER_OUTPUT_RESULT"
  sleep 0.5
  head -c 32768 /dev/zero | tr '\0' '{0}' >> "$DROVER_OUTPUT_RESULT"
)",
                       c);
  };
  auto one = Submit(client, job_writing("first", write_in_parts('a')));
  ASSERT_EQ(one.size(), 1u);
  ASSERT_EQ(WaitForTerminal(client, one[0]), "succeeded") << GetJob(client, one[0]).dump(2);
  EXPECT_EQ(ReadFile(result), first);
  EXPECT_EQ(GetJob(client, one[0])["outputs"]["result"], result);

  // While the second runs and publishes, a reader finds the first or the second, never a part
  // of either and never nothing.
  std::atomic<bool> stop{false};
  std::map<std::string, int> seen;
  int other = 0;
  std::thread reader([&] {
    while (!stop.load()) {
      std::string text = ReadFile(result);
      if (text == first) {
        seen["first"]++;
      } else if (text == second) {
        seen["second"]++;
      } else {
        ++other;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(1));  // leave the CPUs to the job
    }
  });
  auto two = Submit(client, job_writing("second", write_in_parts('b')));
  std::string state = two.size() == 1u ? WaitForTerminal(client, two[0]) : "";
  stop = true;
  reader.join();
  ASSERT_EQ(two.size(), 1u);
  ASSERT_EQ(state, "succeeded") << GetJob(client, two[0]).dump(2);
  EXPECT_EQ(ReadFile(result), second);
  EXPECT_EQ(other, 0) << "a reader saw a partial or missing file";
  EXPECT_GT(seen["first"], 0);
  // Nothing is left in staging for any of the three jobs.
  EXPECT_TRUE(WaitUntil([&] { return Entries(out_dir + "/.drover-staging").empty(); }))
      << ::testing::PrintToString(Entries(out_dir + "/.drover-staging"));
  EXPECT_THAT(Entries(out_dir), ::testing::UnorderedElementsAre(".drover-staging", "result.txt"));
}

// A 5-trial sweep with concurrency 2 (and GPUs for 4): at most two trials run at once, and two
// do. Each trial logs its start and end to one file; the file's order is the order of events.
TEST_F(Workflow, ASweepRunsAtMostConcurrencyTrialsAtOnce) {
  auto server = StartServer("data", "4xH100-80GB");
  ASSERT_TRUE(server->ok());
  api::ApiClient client = server->Client();
  const std::string events = dir_.Sub("events.log");
  auto ids = Submit(client, fmt::format(R"(kind: Pipeline
name: sweep
stages:
  - name: trial
    matrix:
      grid: {{i: [1, 2, 3, 4, 5]}}
    concurrency: 2
    resources: {{cpu: 100m, memory: 64Mi, gpus: 1}}
    script: |
      echo "start ${{{{ trial }}}} i=${{{{ matrix.i }}}}" >> {0}
      sleep 1.5
      echo "end ${{{{ trial }}}}" >> {0}
)",
                                        events));
  ASSERT_EQ(ids.size(), 5u);
  for (std::int64_t id : ids) {
    EXPECT_EQ(WaitForTerminal(client, id, std::chrono::milliseconds(60'000)), "succeeded")
        << GetJob(client, id).dump(2);
  }

  int running = 0;
  int most = 0;
  std::set<std::string> started, ended;
  for (const std::string& line : ReadLines(events)) {
    std::vector<std::string> words = Words(line);
    ASSERT_GE(words.size(), 2u) << line;
    if (words[0] == "start") {
      EXPECT_TRUE(started.insert(words[1]).second) << "trial " << words[1] << " started twice";
      EXPECT_EQ(words[2], "i=" + words[1]) << line;
      most = std::max(most, ++running);
    } else {
      EXPECT_TRUE(ended.insert(words[1]).second) << line;
      --running;
    }
  }
  EXPECT_EQ(started, (std::set<std::string>{"1", "2", "3", "4", "5"}));
  EXPECT_EQ(ended, started);
  EXPECT_LE(most, 2) << ReadFile(events);
  EXPECT_EQ(most, 2) << ReadFile(events);
}

// A job whose input path is missing waits (holding nothing) and says for what; once the path
// exists it runs.
TEST_F(Workflow, AJobWaitsForItsInputPath) {
  auto server = StartServer("data", "4xH100-80GB");
  ASSERT_TRUE(server->ok());
  api::ApiClient client = server->Client();
  const std::string marker = dir_.Sub("marker");
  auto ids = Submit(client, fmt::format(R"(kind: Job
name: consumer
resources: {{cpu: 100m, memory: 64Mi, gpus: 1}}
inputs:
  - path: {0}
script: cat {0}
)",
                                        marker));
  ASSERT_EQ(ids.size(), 1u);
  const std::int64_t id = ids[0];
  ASSERT_EQ(WaitForState(client, id, {"waiting"}), "waiting") << GetJob(client, id).dump(2);
  EXPECT_TRUE(WaitUntil([&] {
    return GetJob(client, id)["message"] == fmt::format("waiting for input {}", marker);
  })) << GetJob(client, id).dump(2);
  EXPECT_EQ(GetJob(client, id)["state"], "waiting");

  WriteFile(marker, "ready\n");
  ASSERT_EQ(WaitForTerminal(client, id), "succeeded") << GetJob(client, id).dump(2);
  json job = GetJob(client, id);
  auto transitions = Transitions(job);
  ASSERT_GE(transitions.size(), 2u) << job["transitions"].dump(2);
  EXPECT_EQ(transitions[0], std::make_pair(std::string("pending"), std::string("waiting")))
      << job["transitions"].dump(2);
  EXPECT_EQ(transitions[1], std::make_pair(std::string("waiting"), std::string("ready")))
      << job["transitions"].dump(2);
  for (const json& t : job["transitions"]) {
    if (t["from_state"] == "waiting") {
      EXPECT_EQ(t["cause"], "inputs present");
      EXPECT_EQ(job["timeline"]["ready"], t["at"]);  // the timeline shows when it became ready
    }
  }
}

// Dependency conditions: a stage on {b: failed} runs after b fails, a stage on b (succeeded)
// is skipped with the reason.
TEST_F(Workflow, ConditionsRunCleanupAndSkipTheRest) {
  auto server = StartServer("data", "4xH100-80GB");
  ASSERT_TRUE(server->ok());
  api::ApiClient client = server->Client();
  auto ids = Submit(client, fmt::format(R"(kind: Pipeline
name: conditions
stages:
  - name: b
    resources: {{cpu: 100m, memory: 64Mi}}
    script: exit 3
  - name: cleanup
    depends_on: [{{b: failed}}]
    resources: {{cpu: 100m, memory: 64Mi}}
    script: echo cleaned > {0}/cleaned
  - name: c
    depends_on: [b]
    resources: {{cpu: 100m, memory: 64Mi}}
    script: echo ran > {0}/c-ran
)",
                                        dir_.path()));
  ASSERT_EQ(ids.size(), 3u);
  std::map<std::string, json> stage;
  for (std::int64_t id : ids) {
    WaitForTerminal(client, id);
    json job = GetJob(client, id);
    stage[job["name"].get<std::string>()] = job;
  }
  ASSERT_EQ(stage.size(), 3u);
  EXPECT_EQ(stage["b"]["state"], "failed") << stage["b"].dump(2);
  EXPECT_THAT(stage["b"]["message"].get<std::string>(), HasSubstr("exit 3"));
  EXPECT_EQ(stage["cleanup"]["state"], "succeeded") << stage["cleanup"].dump(2);
  EXPECT_EQ(ReadFile(dir_.Sub("cleaned")), "cleaned\n");
  EXPECT_EQ(stage["c"]["state"], "skipped") << stage["c"].dump(2);
  EXPECT_EQ(stage["c"]["message"], "dependency 'b' failed; this job needed it to succeed");
  EXPECT_THAT(Transitions(stage["c"]),
              ElementsAre(std::make_pair(std::string("pending"), std::string("skipped"))));
  EXPECT_EQ(stage["c"]["attempts"].size(), 0u) << stage["c"].dump(2);
  EXPECT_FALSE(fs::exists(dir_.Sub("c-ran")));
}

}  // namespace
}  // namespace drover::integration
