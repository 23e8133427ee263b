// Agents at scale (issue 15): an agent's long poll for commands is parked on the HTTP front's
// event thread, so hundreds of waiting agents hold no thread; a command queued for one node
// wakes that node's poll only, and a command whose reply was lost is sent again until the agent
// acknowledges it. The agents are raw loopback sockets; the control plane runs in-process.

#include <gtest/gtest.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstdint>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "drover/codec/json.h"
#include "drover/server/http_server.h"
#include "drover/store/store.h"
#include "drover/testing/fake_clock.h"
#include "drover/testing/loopback.h"
#include "drover/testing/threads.h"
#include "drover/testing/wait_until.h"

namespace drover::server {
namespace {

using nlohmann::json;
using testing::WaitUntil;

// A keep-alive HTTP connection to 127.0.0.1:`port` that sends GETs and reads whole responses.
class AgentSocket {
 public:
  // Its requests present `credential` (the node's, as the registration issued it).
  AgentSocket(int port, std::string credential)
      : fd_(testing::ConnectLoopback(port)), credential_(std::move(credential)) {}
  ~AgentSocket() {
    if (fd_ >= 0) ::close(fd_);
  }
  AgentSocket(const AgentSocket&) = delete;
  AgentSocket& operator=(const AgentSocket&) = delete;

  bool Get(const std::string& target) {
    const std::string request = "GET " + target + " HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer " +
                                credential_ + "\r\n\r\n";
    return fd_ >= 0 && ::send(fd_, request.data(), request.size(), MSG_NOSIGNAL) ==
                           static_cast<ssize_t>(request.size());
  }
  // The body of the next response, or nullopt when none is complete within `timeout_ms` (0:
  // only what has arrived already).
  std::optional<json> Read(int timeout_ms) {
    timeval tv{timeout_ms / 1000, timeout_ms % 1000 * 1000 + (timeout_ms == 0 ? 1 : 0)};
    ::setsockopt(fd_, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
    while (true) {
      std::size_t head = in_.find("\r\n\r\n");
      if (head != std::string::npos) {
        std::size_t at = in_.find("Content-Length: ");
        std::size_t length = std::stoul(in_.substr(at + 16));
        if (in_.size() >= head + 4 + length) {
          json body = json::parse(in_.substr(head + 4, length));
          in_.erase(0, head + 4 + length);
          return body;
        }
      }
      char buffer[4096];
      ssize_t n = ::recv(fd_, buffer, sizeof(buffer), 0);
      if (n <= 0) return std::nullopt;
      in_.append(buffer, static_cast<std::size_t>(n));
    }
  }

 private:
  int fd_;
  std::string credential_;
  std::string in_;
};

std::string Poll(int node, DurationMs wait_ms, std::int64_t epoch = 0, std::int64_t ack = 0) {
  return "/v1/agents/node-" + std::to_string(node) +
         "/commands?wait_ms=" + std::to_string(wait_ms) + "&epoch=" + std::to_string(epoch) +
         "&ack=" + std::to_string(ack);
}

// A first registration's caller on a server without a join token.
api::Caller Joined() {
  api::Caller caller;
  caller.joined = true;
  return caller;
}

TEST(AgentPolls, HundredsWaitWithoutThreadsAndACommandReachesItsAgent) {
  constexpr int kAgents = 300;
  testing::FakeClock clock;
  ControlPlaneOptions options;
  options.poll_interval_ms = 1;
  options.idle_cycle_ms = 10;
  ControlPlane plane(store::NewMemoryStore(), clock, options);
  std::vector<std::string> credentials;
  for (int i = 0; i < kAgents; ++i) {
    model::Node node;
    node.name = NodeId("node-" + std::to_string(i));
    node.cpu_millis = i == 0 ? 64'000 : 1'000;  // only node-0 fits the job below
    node.memory_bytes = std::int64_t{8} << 30;
    auto credential = plane.RegisterRemoteNode(node, Joined());
    ASSERT_TRUE(credential) << credential.error().ToString();
    credentials.push_back(*credential);
  }
  ASSERT_TRUE(plane.Start());
  HttpOptions http_options;
  http_options.agent_host = "127.0.0.1";
  http_options.agent_port = 0;
  auto http = HttpServer::Start(plane, "127.0.0.1", 0, http_options);
  ASSERT_TRUE(http) << http.error().ToString();
  const int threads_before = testing::CountThreads();

  std::vector<std::unique_ptr<AgentSocket>> agents;
  for (int i = 0; i < kAgents; ++i) {
    agents.push_back(std::make_unique<AgentSocket>((*http)->agent_port(), credentials[i]));
    ASSERT_TRUE(agents.back()->Get(Poll(i, api::kMaxLongPollMs)));
  }
  ASSERT_TRUE(WaitUntil([&] { return (*http)->Stats().parked == kAgents; }));
  // The server on main held a thread per waiting poll (up to 256 agent threads).
  EXPECT_LT(testing::CountThreads() - threads_before, 40);
  EXPECT_EQ(plane.Nodes().size(), static_cast<std::size_t>(kAgents));

  auto submitted = plane.Submit(
      "kind: Job\nname: big\nresources: {cpu: 32, memory: 64Mi}\ncommand: [\"true\"]\n",
      spec::ParseOptions{}, "", model::AdminIdentity("alice"));
  ASSERT_TRUE(submitted) << submitted.error().ToString();
  std::optional<json> reply = agents[0]->Read(/*timeout_ms=*/20'000);
  ASSERT_TRUE(reply);
  ASSERT_EQ((*reply)["commands"].size(), 1u);
  const json& launch = (*reply)["commands"][0];
  EXPECT_EQ(launch["kind"], "launch");
  auto spec = codec::LaunchSpecFromJson(launch["launch"]);
  ASSERT_TRUE(spec) << spec.error().ToString();
  EXPECT_EQ(spec->key.job, submitted->jobs.at(0).id);
  EXPECT_EQ((*http)->Stats().parked, kAgents - 1);  // the others still wait
  EXPECT_FALSE(agents[1]->Read(0));

  // Its reply "lost": a poll that acknowledges nothing gets the launch again, at once.
  const std::int64_t epoch = (*reply)["epoch"];
  ASSERT_TRUE(agents[0]->Get(Poll(0, api::kMaxLongPollMs)));
  std::optional<json> again = agents[0]->Read(20'000);
  ASSERT_TRUE(again);
  ASSERT_EQ((*again)["commands"].size(), 1u);
  EXPECT_EQ((*again)["commands"][0], launch);
  // Acknowledged: the next poll has nothing, and parks.
  ASSERT_TRUE(agents[0]->Get(Poll(0, api::kMaxLongPollMs, epoch, launch["seq"])));
  EXPECT_TRUE(WaitUntil([&] { return (*http)->Stats().parked == kAgents; }));
  (*http)->Stop();
  plane.Stop();
}

// A parked poll answers, empty, when its wait ends; its agent is heard from meanwhile.
TEST(AgentPolls, AParkedPollAnswersWhenItsWaitEnds) {
  testing::FakeClock clock;
  ControlPlane plane(store::NewMemoryStore(), clock, ControlPlaneOptions{});
  model::Node node;
  node.name = NodeId("node-0");
  node.cpu_millis = 1'000;
  node.memory_bytes = std::int64_t{1} << 30;
  auto credential = plane.RegisterRemoteNode(node, Joined());
  ASSERT_TRUE(credential) << credential.error().ToString();
  ASSERT_TRUE(plane.Start());
  auto http = HttpServer::Start(plane, "127.0.0.1", 0);
  ASSERT_TRUE(http) << http.error().ToString();
  AgentSocket agent((*http)->port(), *credential);
  ASSERT_TRUE(agent.Get(Poll(0, 200)));
  std::optional<json> reply = agent.Read(20'000);
  ASSERT_TRUE(reply);
  EXPECT_EQ((*reply)["commands"], json::array());
  EXPECT_GT((*reply)["epoch"].get<std::int64_t>(), 0);
  (*http)->Stop();
  plane.Stop();
}

}  // namespace
}  // namespace drover::server
