// GET /v1/events against a real server (docs/api.md, "Events"): a job's transitions arrive live
// and in order; a resume with Last-Event-ID loses and repeats nothing; another team's jobs stay
// out of a stream under private_data; a reader that never reads is dropped without slowing the
// health check or submissions; the per-token cap answers JSON 429; `drover get -w` and
// `drover ls -w` redraw on events.

#include <arpa/inet.h>
#include <fmt/format.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <string>
#include <vector>

#include "tests/integration/harness.h"

namespace drover::integration {
namespace {

using nlohmann::json;
using ::testing::HasSubstr;

struct Frame {
  std::string id, type;
  json data;
};

// A client of GET /v1/events over a plain socket, so that a test decides when it reads (or that
// it never does) and how small its receive buffer is.
class EventReader {
 public:
  EventReader(const std::string& url, const std::string& token, const std::string& query,
              const std::string& last_event_id = "", int receive_buffer = 0) {
    const int port = std::stoi(url.substr(url.rfind(':') + 1));
    fd_ = ::socket(AF_INET, SOCK_STREAM, 0);
    if (receive_buffer > 0) {
      ::setsockopt(fd_, SOL_SOCKET, SO_RCVBUF, &receive_buffer, sizeof(receive_buffer));
    }
    sockaddr_in address{};
    address.sin_family = AF_INET;
    address.sin_port = htons(static_cast<std::uint16_t>(port));
    ::inet_pton(AF_INET, "127.0.0.1", &address.sin_addr);
    EXPECT_EQ(::connect(fd_, reinterpret_cast<sockaddr*>(&address), sizeof(address)), 0);
    std::string request = fmt::format(
        "GET /v1/events{} HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer {}\r\n", query, token);
    if (!last_event_id.empty()) request += "Last-Event-ID: " + last_event_id + "\r\n";
    request += "\r\n";
    EXPECT_EQ(::send(fd_, request.data(), request.size(), MSG_NOSIGNAL),
              static_cast<ssize_t>(request.size()));
  }
  ~EventReader() { Close(); }
  void Close() {
    if (fd_ >= 0) ::close(fd_);
    fd_ = -1;
  }

  // Reads until `done()` holds, the server closes the stream or the deadline passes; done().
  bool ReadUntil(const std::function<bool()>& done,
                 std::chrono::milliseconds deadline = kDeadline) {
    const auto end = std::chrono::steady_clock::now() + deadline;
    while (!done() && !closed_ && std::chrono::steady_clock::now() < end) {
      pollfd watched{fd_, POLLIN, 0};
      if (::poll(&watched, 1, 100) <= 0) continue;
      char buffer[16 << 10];
      const ssize_t n = ::recv(fd_, buffer, sizeof(buffer), 0);
      if (n <= 0) {
        closed_ = true;
        break;
      }
      raw_.append(buffer, static_cast<std::size_t>(n));
      Parse();
    }
    return done();
  }
  bool closed() const { return closed_; }
  int status() const {
    return raw_.size() > 12 && raw_.starts_with("HTTP/1.1 ") ? std::stoi(raw_.substr(9, 3)) : 0;
  }
  std::string body() const {
    const std::size_t at = raw_.find("\r\n\r\n");
    return at == std::string::npos ? "" : raw_.substr(at + 4);
  }
  const std::vector<Frame>& frames() const { return frames_; }
  // The frames of job events about job `job`.
  std::vector<Frame> JobFrames(std::int64_t job) const {
    std::vector<Frame> out;
    for (const Frame& frame : frames_) {
      if (frame.type == "job" && frame.data.value("job_id", std::int64_t{0}) == job) {
        out.push_back(frame);
      }
    }
    return out;
  }
  // The ids of job, decision and node events, in order.
  std::vector<std::string> EventIds() const {
    std::vector<std::string> ids;
    for (const Frame& frame : frames_) {
      if (frame.type == "job" || frame.type == "decision" || frame.type == "node") {
        ids.push_back(frame.id);
      }
    }
    return ids;
  }

 private:
  void Parse() {
    const std::size_t head = raw_.find("\r\n\r\n");
    if (head == std::string::npos) return;
    std::size_t at = std::max(parsed_, head + 4);
    std::size_t end;
    while ((end = raw_.find("\n\n", at)) != std::string::npos) {
      Frame frame;
      for (const std::string& line : Lines(raw_.substr(at, end - at))) {
        if (line.starts_with("id: ")) frame.id = line.substr(4);
        if (line.starts_with("event: ")) frame.type = line.substr(7);
        if (line.starts_with("data: ")) frame.data = json::parse(line.substr(6), nullptr, false);
      }
      if (!frame.type.empty()) frames_.push_back(std::move(frame));
      at = end + 2;
    }
    parsed_ = at;
  }
  static std::vector<std::string> Lines(const std::string& text) {
    std::vector<std::string> lines;
    std::size_t start = 0;
    while (start <= text.size()) {
      std::size_t end = text.find('\n', start);
      if (end == std::string::npos) end = text.size();
      lines.push_back(text.substr(start, end - start));
      start = end + 1;
    }
    return lines;
  }

  int fd_ = -1;
  std::string raw_;
  std::size_t parsed_ = 0;
  bool closed_ = false;
  std::vector<Frame> frames_;
};

bool Opened(const EventReader& reader) {
  return !reader.frames().empty() && reader.frames().front().type == "open";
}

class Events : public IntegrationTest {};

const std::string kQuickJob = "kind: Job\nname: quick\nscript: 'true'\n";

TEST_F(Events, AClientSeesAJobsTransitionsLiveInOrder) {
  auto server = StartServer("data", "1xH100-80GB");
  ASSERT_TRUE(server->ok());
  api::ApiClient client = server->Client();
  EventReader reader(server->url(), server->token(), "?types=job");
  ASSERT_TRUE(reader.ReadUntil([&] { return Opened(reader); }));
  EXPECT_EQ(reader.status(), 200);
  const std::int64_t job = Submit(client, kQuickJob).at(0);
  ASSERT_TRUE(reader.ReadUntil([&] {
    std::vector<Frame> frames = reader.JobFrames(job);
    return !frames.empty() && frames.back().data.value("to_state", "") == "succeeded";
  })) << reader.body();
  // Each transition starts where the one before ended, from pending to succeeded, ids rising.
  std::vector<Frame> frames = reader.JobFrames(job);
  EXPECT_EQ(frames.front().data.value("from_state", ""), "pending");
  for (std::size_t i = 1; i < frames.size(); ++i) {
    EXPECT_EQ(frames[i].data.value("from_state", ""), frames[i - 1].data.value("to_state", ""))
        << i;
    EXPECT_LT(std::stoull(frames[i - 1].id), std::stoull(frames[i].id));
  }
  // The same transitions as the job's record.
  json record = GetJob(client, job);
  ASSERT_EQ(record["transitions"].size(), frames.size());
}

TEST_F(Events, ANodeCordonedArrivesAsANodeEvent) {
  auto server = StartServer("data", "1xH100-80GB");
  ASSERT_TRUE(server->ok());
  api::ApiClient client = server->Client();
  const std::string node = client.Get("/v1/nodes")->json["nodes"][0].value("name", "");
  EventReader reader(server->url(), server->token(), "?types=node");
  ASSERT_TRUE(reader.ReadUntil([&] { return Opened(reader); }));
  auto cordoned = client.Post("/v1/nodes/" + node + "/cordon", "", "application/json");
  ASSERT_TRUE(cordoned) << cordoned.error().ToString();
  ASSERT_TRUE(reader.ReadUntil([&] { return reader.frames().size() >= 2; }));
  EXPECT_EQ(reader.frames()[1].type, "node");
  EXPECT_EQ(reader.frames()[1].data.value("node", ""), node);
  EXPECT_EQ(reader.frames()[1].data.value("change", ""), "cordoned");
}

TEST_F(Events, AResumeWithLastEventIdLosesNothingAndRepeatsNothing) {
  auto server = StartServer("data", "1xH100-80GB");
  ASSERT_TRUE(server->ok());
  api::ApiClient client = server->Client();
  EventReader whole(server->url(), server->token(), "");
  ASSERT_TRUE(whole.ReadUntil([&] { return Opened(whole); }));
  EventReader first(server->url(), server->token(), "");
  ASSERT_TRUE(first.ReadUntil([&] { return Opened(first); }));
  const std::int64_t a = Submit(client, kQuickJob).at(0);
  ASSERT_TRUE(first.ReadUntil([&] { return !first.JobFrames(a).empty(); }));
  first.Close();  // mid-stream: job a is still moving
  const std::string last = first.EventIds().back();
  const std::int64_t b = Submit(client, kQuickJob).at(0);
  EXPECT_EQ(WaitForTerminal(client, a), "succeeded");
  EXPECT_EQ(WaitForTerminal(client, b), "succeeded");
  ASSERT_TRUE(whole.ReadUntil([&] {
    std::vector<Frame> frames = whole.JobFrames(b);
    return !frames.empty() && frames.back().data.value("to_state", "") == "succeeded";
  }));
  const std::vector<std::string> all = whole.EventIds();
  EventReader resumed(server->url(), server->token(), "", last);
  ASSERT_TRUE(resumed.ReadUntil([&] {
    return !resumed.EventIds().empty() && resumed.EventIds().back() == all.back();
  })) << resumed.body();
  EXPECT_EQ(resumed.frames().front().type, "open");
  // What the first stream had and what the resumed one sent are exactly the whole stream.
  std::vector<std::string> joined = first.EventIds();
  for (const std::string& id : resumed.EventIds()) joined.push_back(id);
  auto from = std::find(all.begin(), all.end(), joined.front());
  ASSERT_NE(from, all.end());
  EXPECT_EQ(joined, std::vector<std::string>(from, all.end()));
  // An id from before this server's first event starts with reset.
  EventReader stale(server->url(), server->token(), "?since=5");
  ASSERT_TRUE(stale.ReadUntil([&] { return !stale.frames().empty(); }));
  EXPECT_EQ(stale.frames().front().type, "reset");
}

TEST_F(Events, AnotherTeamsJobsStayOutOfAStreamUnderPrivateData) {
  WriteFile(dir_.path() + "/policy.yaml", kPrivateTeamsPolicy);
  auto server = StartServer("data", "1xH100-80GB", {"--policy", dir_.path() + "/policy.yaml"});
  ASSERT_TRUE(server->ok());
  api::ApiClient admin = server->Client();
  const std::string alice_token = CreateMemberToken(admin, "alice", "team-a");
  const std::string bob_token = CreateMemberToken(admin, "bob", "team-b");
  api::ApiClient alice(server->url());
  alice.SetBearer(alice_token);
  api::ApiClient bob(server->url());
  bob.SetBearer(bob_token);
  EventReader bobs(server->url(), bob_token, "");
  ASSERT_TRUE(bobs.ReadUntil([&] { return Opened(bobs); }));
  // alice and bob are no accounts here: their jobs fail to start, which is as many events.
  const std::int64_t hidden = Submit(alice, kQuickJob).at(0);
  EXPECT_TRUE(IsTerminalState(WaitForTerminal(admin, hidden)));
  const std::int64_t own = Submit(bob, kQuickJob).at(0);
  ASSERT_TRUE(bobs.ReadUntil([&] {
    std::vector<Frame> frames = bobs.JobFrames(own);
    return !frames.empty() && IsTerminalState(frames.back().data.value("to_state", ""));
  }));
  for (const Frame& frame : bobs.frames()) {
    EXPECT_NE(frame.data.value("job_id", std::int64_t{0}), hidden) << frame.type << " " << frame.id;
  }
  // Asking for the hidden job's events is refused as GET /v1/jobs/{id} refuses it.
  EventReader asked(server->url(), bob_token, fmt::format("?job={}", hidden));
  ASSERT_TRUE(asked.ReadUntil([&] { return asked.body().find('}') != std::string::npos; }));
  auto direct = bob.Get(fmt::format("/v1/jobs/{}", hidden));
  ASSERT_FALSE(direct);
  json error = json::parse(asked.body(), nullptr, false);
  EXPECT_EQ(error.value("code", ""), ErrorCodeName(direct.error().code)) << asked.body();
  EXPECT_EQ(asked.status(), direct.error().code == ErrorCode::kNotFound ? 404 : 403);
}

TEST_F(Events, ARevokedTokensStreamEndsAtOnceWithRevoked) {
  auto server = StartServer("data", "1xH100-80GB");
  ASSERT_TRUE(server->ok());
  api::ApiClient admin = server->Client();
  const std::string carol_token = CreateMemberToken(admin, "carol", "team-c");
  EventReader carols(server->url(), carol_token, "");
  EventReader admins(server->url(), server->token(), "?types=job");
  ASSERT_TRUE(carols.ReadUntil([&] { return Opened(carols); }));
  ASSERT_TRUE(admins.ReadUntil([&] { return Opened(admins); }));
  auto tokens = admin.Get("/v1/tokens");
  ASSERT_TRUE(tokens) << tokens.error().message;
  std::string carol_id;
  for (const json& record : tokens->json.at("tokens")) {
    if (record.value("user", "") == "carol") carol_id = record.value("id", "");
  }
  ASSERT_FALSE(carol_id.empty()) << tokens->body;
  ASSERT_TRUE(admin.Post(fmt::format("/v1/tokens/{}/revoke", carol_id), "", "application/json"));
  // No event is published: the revocation itself wakes and ends the stream.
  ASSERT_TRUE(carols.ReadUntil([&] { return carols.closed(); }));
  ASSERT_FALSE(carols.frames().empty());
  EXPECT_EQ(carols.frames().back().type, "revoked");
  // Another token's stream carries on.
  const std::int64_t job = Submit(admin, kQuickJob).at(0);
  EXPECT_TRUE(admins.ReadUntil([&] { return !admins.JobFrames(job).empty(); }));
  EXPECT_FALSE(admins.closed());
}

TEST_F(Events, AnIdleStreamEndsWithExpiredWhenItsTokenExpires) {
  // Heartbeats every 200 ms: the front reads the idle stream then, so it ends soon after the
  // token's expiry although no event is published.
  auto server = StartServer("data", "1xH100-80GB", {"--event-heartbeat", "200ms"});
  api::ApiClient admin = server->Client();
  auto created = admin.Post(
      "/v1/tokens",
      json{{"user", "dave"}, {"team", "team-d"}, {"role", "member"}, {"expires_in_ms", 4'000}}
          .dump(),
      "application/json");
  ASSERT_TRUE(created) << created.error().ToString();
  EventReader daves(server->url(), created->json.value("token", ""), "");
  EventReader admins(server->url(), server->token(), "?types=job");
  ASSERT_TRUE(daves.ReadUntil([&] { return Opened(daves); }));
  ASSERT_TRUE(admins.ReadUntil([&] { return Opened(admins); }));
  ASSERT_TRUE(daves.ReadUntil([&] { return daves.closed(); }));
  ASSERT_FALSE(daves.frames().empty());
  EXPECT_EQ(daves.frames().back().type, "expired");
  // A token without an expiry carries on.
  const std::int64_t job = Submit(admin, kQuickJob).at(0);
  EXPECT_TRUE(admins.ReadUntil([&] { return !admins.JobFrames(job).empty(); }));
  EXPECT_FALSE(admins.closed());
}

TEST_F(Events, AStalledReaderIsDroppedWithoutSlowingOthers) {
  auto server =
      StartServer("data", "1xH100-80GB", {"--event-ring", "16", "--event-stream-buffer", "4096"});
  ASSERT_TRUE(server->ok());
  api::ApiClient client = server->Client();
  // Never read after its first frame, with the smallest receive buffer the kernel allows.
  EventReader stalled(server->url(), server->token(), "", "", 1024);
  ASSERT_TRUE(stalled.ReadUntil([&] { return Opened(stalled); }));
  EventReader live(server->url(), server->token(), "?types=job");
  ASSERT_TRUE(live.ReadUntil([&] { return Opened(live); }));
  std::vector<std::int64_t> jobs;
  for (int i = 0; i < 40; ++i) {
    const auto before = std::chrono::steady_clock::now();
    auto health = client.Get("/v1/health");
    ASSERT_TRUE(health) << health.error().ToString();
    jobs.push_back(Submit(client, kQuickJob).at(0));
    // A generous bound for a loaded 2-core machine: a stall would be the write timeout (30 s).
    EXPECT_LT(std::chrono::steady_clock::now() - before, std::chrono::seconds(10));
    // The live reader keeps up meanwhile.
    live.ReadUntil([] { return false; }, std::chrono::milliseconds(10));
  }
  for (std::int64_t job : jobs) EXPECT_EQ(WaitForTerminal(client, job), "succeeded");
  ASSERT_TRUE(live.ReadUntil([&] {
    std::vector<Frame> frames = live.JobFrames(jobs.back());
    return !frames.empty() && frames.back().data.value("to_state", "") == "succeeded";
  }));
  // The stalled reader, reading at last, finds its stream closed well before the write timeout.
  EXPECT_TRUE(
      stalled.ReadUntil([&] { return stalled.closed(); }, std::chrono::milliseconds(20'000)))
      << stalled.frames().size() << " frames";
  EXPECT_LT(stalled.EventIds().size(), live.EventIds().size() * 4);
}

TEST_F(Events, TheStreamCapPerTokenAnswersJson429) {
  auto server = StartServer("data", "1xH100-80GB", {"--max-event-streams-per-token", "2"});
  ASSERT_TRUE(server->ok());
  EventReader one(server->url(), server->token(), "");
  EventReader two(server->url(), server->token(), "");
  ASSERT_TRUE(one.ReadUntil([&] { return Opened(one); }));
  ASSERT_TRUE(two.ReadUntil([&] { return Opened(two); }));
  EventReader three(server->url(), server->token(), "");
  ASSERT_TRUE(three.ReadUntil([&] { return three.body().find('}') != std::string::npos; }));
  EXPECT_EQ(three.status(), 429);
  json error = json::parse(three.body(), nullptr, false);
  EXPECT_EQ(error.value("code", ""), "resource_exhausted") << three.body();
  EXPECT_THAT(error.value("message", ""), HasSubstr("--max-event-streams-per-token"));
  // A closed stream frees its place.
  one.Close();
  ASSERT_TRUE(WaitUntil([&] {
    EventReader again(server->url(), server->token(), "");
    again.ReadUntil([&] { return again.status() != 0; }, std::chrono::milliseconds(2'000));
    return again.status() == 200;
  }));
}

TEST_F(Events, GetWatchRedrawsUntilTheJobEndsAndLsWatchShowsNewJobs) {
  auto server = StartServer("data", "1xH100-80GB");
  ASSERT_TRUE(server->ok());
  api::ApiClient client = server->Client();
  const std::int64_t job = Submit(client, "kind: Job\nname: slowish\nscript: 'sleep 1'\n").at(0);
  CommandResult watched =
      RunDrover({"--server", server->url(), "get", "-w", std::to_string(job)}, dir_.path());
  EXPECT_EQ(watched.exit_code, 0) << watched.err;
  EXPECT_THAT(watched.out, HasSubstr("succeeded"));

  ChildProcess ls({DroverBinary(), "--server", server->url(), "ls", "-w"}, dir_.path() + "/ls.out",
                  dir_.path() + "/ls.err");
  ASSERT_TRUE(WaitUntil([&] { return ls.Stdout().find("slowish") != std::string::npos; }))
      << ls.Stderr();
  Submit(client, "kind: Job\nname: later-one\nscript: 'true'\n");
  EXPECT_TRUE(WaitUntil([&] { return ls.Stdout().find("later-one") != std::string::npos; }))
      << ls.Stderr();
  EXPECT_TRUE(ls.Running());
  ls.KillGroup();
}

}  // namespace
}  // namespace drover::integration
