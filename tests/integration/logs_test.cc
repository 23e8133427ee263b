// Logs from anywhere and drover inside a job (issue 18): `drover logs` reads a worker's output
// the same way whichever node it ran on (remote agents ship theirs to the server), `logs -f`
// waits for a job that has not started, `logs -o json` prints JSON Lines, and a job's own process
// finds `drover` on its PATH (and in $DROVER_BIN) with the server and its token set.

#include <fmt/format.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include "tests/integration/harness.h"

namespace drover::integration {
namespace {

using nlohmann::json;
using ::testing::HasSubstr;

class Logs : public IntegrationTest {
 protected:
  // `drover ARGS...` against `server`, running in the background (stdout and stderr in files).
  std::unique_ptr<ChildProcess> StartDrover(const ServerProcess& server,
                                            std::vector<std::string> args) {
    const std::string base = dir_.Sub("cli-bg-" + std::to_string(++started_));
    args.insert(args.begin(), {DroverBinary(), "--server", server.url()});
    return std::make_unique<ChildProcess>(args, base + ".out", base + ".err");
  }
  CommandResult Drover(const ServerProcess& server, std::vector<std::string> args) {
    args.insert(args.begin(), {"--server", server.url()});
    return RunDrover(args, dir_.path());
  }

  int started_ = 0;
};

// Each line of `text` parsed as JSON (JSON Lines); a line that does not parse fails the test.
std::vector<json> JsonLines(const std::string& text) {
  std::vector<json> objects;
  std::istringstream lines(text);
  for (std::string line; std::getline(lines, line);) {
    json parsed = json::parse(line, nullptr, false);
    EXPECT_FALSE(parsed.is_discarded()) << "not JSON: " << line;
    objects.push_back(parsed);
  }
  return objects;
}

TEST_F(Logs, AJobRunsDroverFromItsOwnProcess) {
  auto server = StartServer("data", "4xH100-80GB");
  ASSERT_TRUE(server->ok());
  api::ApiClient client = server->Client();
  // `drover` by name, as docs/workflows.md shows it; no --server, --token or job id.
  auto ids = Submit(client, R"(kind: Job
name: inside
resources:
  cpu: 100m
  memory: 64Mi
script: |
  drover report --began && drover checkpoint && "$DROVER_BIN" report --progress 0.5
)");
  ASSERT_EQ(ids.size(), 1u);
  ASSERT_EQ(WaitForTerminal(client, ids[0]), "succeeded")
      << GetJob(client, ids[0]).dump(2)
      << Drover(*server, {"logs", std::to_string(ids[0]), "--stderr"}).out;
  CommandResult get = Drover(*server, {"-o", "json", "get", std::to_string(ids[0])});
  ASSERT_EQ(get.exit_code, 0) << get.err;
  const json job = json::parse(get.out, nullptr, false);
  const json& attempt = job["attempts"][0];
  EXPECT_GT(attempt.value("useful_work_at", std::int64_t{0}), 0) << get.out;
  EXPECT_GT(attempt.value("last_checkpoint_at", std::int64_t{0}), 0) << get.out;
  EXPECT_EQ(attempt["progress"], 0.5) << get.out;
}

TEST_F(Logs, ARemoteWorkersOutputIsReadAndFollowedThroughTheServer) {
  auto server = StartServer("server", "0");
  ASSERT_TRUE(server->ok());
  std::unique_ptr<ChildProcess> agent = StartAgent(*server, "remote-1", "2xA100-40GB");
  api::ApiClient client = server->Client();
  ASSERT_TRUE(WaitUntil([&] {
    json node = GetNode(client, "remote-1");
    return node.is_object() && node["remote"].get<bool>();
  })) << agent->Stdout()
      << agent->Stderr();

  const std::string go = dir_.Sub("go");
  auto ids = Submit(client, fmt::format(R"(kind: Job
name: remote-talker
resources:
  cpu: 100m
  memory: 64Mi
  gpus: 1
  gpu_model: A100
script: |
  echo first line
  echo to stderr >&2
  drover report --began >/dev/null
  while [ ! -e {} ]; do sleep 0.05; done
  echo last line
)",
                                        go));
  ASSERT_EQ(ids.size(), 1u);
  const std::string id = std::to_string(ids[0]);
  ASSERT_EQ(WaitForState(client, ids[0], {"running"}), "running");
  EXPECT_EQ(GetJob(client, ids[0])["attempts"][0]["workers"][0]["node"], "remote-1");

  // Followed while it runs: the first line arrives before the job ends.
  std::unique_ptr<ChildProcess> follow = StartDrover(*server, {"logs", "-f", id});
  ASSERT_TRUE(WaitUntil([&] { return follow->Stdout() == "first line\n"; }))
      << follow->Stdout() << follow->Stderr()
      << ProcessLogs(server.get(), {{"agent", agent.get()}});
  EXPECT_TRUE(follow->Running());
  WriteFile(go, "");
  ASSERT_EQ(follow->Wait(), 0) << follow->Stderr();
  EXPECT_EQ(follow->Stdout(), "first line\nlast line\n");
  ASSERT_EQ(WaitForTerminal(client, ids[0]), "succeeded");
  EXPECT_GT(GetJob(client, ids[0])["attempts"][0].value("useful_work_at", std::int64_t{0}), 0);

  CommandResult err = Drover(*server, {"logs", id, "--stderr"});
  EXPECT_EQ(err.exit_code, 0) << err.err;
  EXPECT_EQ(err.out, "to stderr\n");
  CommandResult tail = Drover(*server, {"logs", id, "--tail", "1"});
  EXPECT_EQ(tail.out, "last line\n") << tail.err;

  CommandResult as_json = Drover(*server, {"-o", "json", "logs", id});
  ASSERT_EQ(as_json.exit_code, 0) << as_json.err;
  std::vector<json> chunks = JsonLines(as_json.out);
  ASSERT_EQ(chunks.size(), 1u) << as_json.out;
  EXPECT_EQ(chunks[0]["data"], "first line\nlast line\n");
  EXPECT_EQ(chunks[0]["job"], ids[0]);
  EXPECT_EQ(chunks[0]["attempt"], 1);
  EXPECT_EQ(chunks[0]["stream"], "stdout");
  EXPECT_EQ(chunks[0]["offset"], 0);
  EXPECT_EQ(chunks[0]["next_offset"], 21);
  EXPECT_EQ(chunks[0]["finished"], true);
  EXPECT_EQ(chunks[0]["state"], "succeeded");
}

TEST_F(Logs, FollowingAPendingJobWaitsForItToStart) {
  auto server = StartServer("data", "1xH100-80GB");
  ASSERT_TRUE(server->ok());
  api::ApiClient client = server->Client();
  const std::string go = dir_.Sub("go");
  const std::string gpu_job = R"(kind: Job
name: {}
resources:
  cpu: 100m
  memory: 64Mi
  gpus: 1
script: |
  {}
)";
  auto holder =
      Submit(client, fmt::format(fmt::runtime(gpu_job), "holder",
                                 fmt::format("while [ ! -e {} ]; do sleep 0.05; done", go)));
  ASSERT_EQ(holder.size(), 1u);
  ASSERT_EQ(WaitForState(client, holder[0], {"running"}), "running");
  auto waiter =
      Submit(client, fmt::format(fmt::runtime(gpu_job), "waiter", "echo hello from the waiter"));
  auto never = Submit(client, fmt::format(fmt::runtime(gpu_job), "never", "echo never"));
  ASSERT_EQ(waiter.size(), 1u);
  ASSERT_EQ(never.size(), 1u);
  ASSERT_EQ(WaitForState(client, waiter[0], {"ready"}), "ready");  // waiting for the GPU

  // Without -f: nothing yet, said on stderr, and no error.
  CommandResult now = Drover(*server, {"logs", std::to_string(waiter[0])});
  EXPECT_EQ(now.exit_code, 0) << now.err;
  EXPECT_EQ(now.out, "");
  EXPECT_THAT(now.err,
              HasSubstr(fmt::format("job {} has not started yet (ready); no output", waiter[0])));
  CommandResult now_json = Drover(*server, {"-o", "json", "logs", std::to_string(waiter[0])});
  std::vector<json> chunks = JsonLines(now_json.out);
  ASSERT_EQ(chunks.size(), 1u) << now_json.out << now_json.err;
  EXPECT_EQ(chunks[0]["started"], false);
  EXPECT_EQ(chunks[0]["finished"], false);
  EXPECT_EQ(chunks[0]["data"], "");

  std::unique_ptr<ChildProcess> follow =
      StartDrover(*server, {"logs", "-f", std::to_string(waiter[0])});
  ASSERT_TRUE(WaitUntil([&] {
    return follow->Stderr().find(fmt::format(
               "job {} has not started yet (ready); waiting for it to start", waiter[0])) !=
           std::string::npos;
  })) << follow->Stderr();
  EXPECT_TRUE(follow->Running());

  // A job that ends without starting: -f prints what there is (nothing) and exits.
  ASSERT_TRUE(client.Post(fmt::format("/v1/jobs/{}/cancel", never[0]), "", "application/json"));
  ASSERT_EQ(WaitForTerminal(client, never[0]), "cancelled");
  CommandResult ended = Drover(*server, {"logs", "-f", std::to_string(never[0])});
  EXPECT_EQ(ended.exit_code, 0) << ended.err;
  EXPECT_EQ(ended.out, "");
  EXPECT_THAT(ended.err,
              HasSubstr(fmt::format("job {} ended (cancelled) without starting", never[0])));

  WriteFile(go, "");
  ASSERT_EQ(follow->Wait(), 0) << follow->Stderr();
  EXPECT_EQ(follow->Stdout(), "hello from the waiter\n");
  EXPECT_EQ(WaitForTerminal(client, waiter[0]), "succeeded");
}

TEST_F(Logs, FollowingAsJsonPrintsOneObjectPerChunk) {
  auto server = StartServer("data", "1xH100-80GB");
  ASSERT_TRUE(server->ok());
  api::ApiClient client = server->Client();
  const std::string go = dir_.Sub("go");
  auto ids = Submit(client, fmt::format(R"(kind: Job
name: chunks
resources:
  cpu: 100m
  memory: 64Mi
script: |
  echo one
  while [ ! -e {} ]; do sleep 0.05; done
  echo two
)",
                                        go));
  ASSERT_EQ(ids.size(), 1u);
  std::unique_ptr<ChildProcess> follow =
      StartDrover(*server, {"-o", "json", "logs", "-f", std::to_string(ids[0])});
  ASSERT_TRUE(WaitUntil([&] { return follow->Stdout().find("\n") != std::string::npos; }))
      << follow->Stderr();
  WriteFile(go, "");
  ASSERT_EQ(follow->Wait(), 0) << follow->Stderr();
  std::vector<json> chunks = JsonLines(follow->Stdout());
  ASSERT_GE(chunks.size(), 2u) << follow->Stdout();
  std::string data;
  for (const json& chunk : chunks) {
    EXPECT_EQ(chunk["offset"], static_cast<std::int64_t>(data.size())) << chunk.dump();
    data += chunk["data"].get<std::string>();
    EXPECT_EQ(chunk["next_offset"], static_cast<std::int64_t>(data.size())) << chunk.dump();
  }
  EXPECT_EQ(data, "one\ntwo\n");
  EXPECT_EQ(chunks.front()["data"], "one\n");
  EXPECT_EQ(chunks.back()["finished"], true);
}

}  // namespace
}  // namespace drover::integration
