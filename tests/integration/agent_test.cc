// A remote `drover agent` process serving a node to a `drover server` over HTTP.

#include <fmt/format.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <string>

#include "tests/integration/harness.h"

namespace drover::integration {
namespace {

using nlohmann::json;

class RemoteAgent : public IntegrationTest {};

TEST_F(RemoteAgent, RunsAJobThatNeedsItsGpus) {
  auto server = StartServer("server", "0");
  ASSERT_TRUE(server->ok());
  std::unique_ptr<ChildProcess> agent = StartAgent(*server, "remote-1", "2xA100-40GB");
  api::ApiClient client = server->Client();
  json remote;
  bool registered = WaitUntil([&] {
    remote = GetNode(client, "remote-1");
    return remote.is_object() && remote["remote"].get<bool>();
  });
  ASSERT_TRUE(registered) << "agent output:\n" << agent->Stdout() << agent->Stderr();
  EXPECT_EQ(remote["state"], "ready");
  EXPECT_EQ(remote["gpus"].size(), 2u);

  const std::string proof = dir_.Sub("ran-remotely");
  auto ids = Submit(client, fmt::format(R"(kind: Job
name: remote-job
resources:
  cpu: 100m
  memory: 64Mi
  gpus: 1
  gpu_model: A100
script: |
  echo "$DROVER_JOB_ID $CUDA_VISIBLE_DEVICES" > {0}.tmp && mv {0}.tmp {0}
)",
                                        proof));
  ASSERT_EQ(ids.size(), 1u);
  ASSERT_EQ(WaitForTerminal(client, ids[0]), "succeeded")
      << GetJob(client, ids[0]).dump(2) << "\nagent output:\n"
      << agent->Stdout() << agent->Stderr() << "\nserver:\n"
      << server->Log();
  json job = GetJob(client, ids[0]);
  ASSERT_EQ(job["attempts"].size(), 1u);
  ASSERT_EQ(job["attempts"][0]["workers"].size(), 1u);
  EXPECT_EQ(job["attempts"][0]["workers"][0]["node"], "remote-1");
  std::vector<std::string> lines = ReadLines(proof);
  ASSERT_EQ(lines.size(), 1u) << "the job's script did not run";
  const int gpu = job["attempts"][0]["workers"][0]["gpus"][0].get<int>();
  EXPECT_EQ(lines[0], fmt::format("{} {}", ids[0], gpu));
}

// A value output of a job on a remote agent reaches the server with the worker's exit: the
// worker writes it in its folder on the agent's node, which the server never reads (before
// 2026-12-06 it staged under the server's data folder, and the server read it there: a node
// without that folder on a shared file system failed every such job).
TEST_F(RemoteAgent, AValueOutputReachesTheServerWithTheWorkersExit) {
  auto server = StartServer("server", "0");
  ASSERT_TRUE(server->ok());
  std::unique_ptr<ChildProcess> agent = StartAgent(*server, "remote-1", "1xA100-40GB");
  api::ApiClient client = server->Client();
  ASSERT_TRUE(WaitUntil([&] { return GetNode(client, "remote-1").is_object(); }))
      << agent->Stdout() << agent->Stderr();
  auto ids = Submit(client, R"(kind: Job
name: evaluate
resources: {cpu: 100m, memory: 64Mi, gpus: 1, gpu_model: A100}
outputs: [{name: accuracy}]
script: echo 0.97 > "$DROVER_OUTPUT_ACCURACY"
)");
  ASSERT_EQ(ids.size(), 1u);
  ASSERT_EQ(WaitForTerminal(client, ids[0]), "succeeded")
      << GetJob(client, ids[0]).dump(2) << "\nagent output:\n"
      << agent->Stdout() << agent->Stderr();
  const json job = GetJob(client, ids[0]);
  EXPECT_EQ(job["attempts"][0]["workers"][0]["node"], "remote-1");
  EXPECT_EQ(job["outputs"]["accuracy"], "0.97");
  // Where it was written: the agent's worker folder, not the server's.
  const std::string server_side = fmt::format("{}/outputs/job-{}", dir_.Sub("server"), ids[0]);
  EXPECT_FALSE(std::filesystem::exists(server_side)) << server_side;
  bool in_agents_folder = false;
  for (const auto& entry : std::filesystem::recursive_directory_iterator(dir_.Sub("remote-1"))) {
    if (entry.path().filename() == "accuracy") in_agents_folder = true;
  }
  EXPECT_TRUE(in_agents_folder);
}

}  // namespace
}  // namespace drover::integration
