// ApiClient with a list of servers (docs/operations.md "Two servers on PostgreSQL"): a standby's
// leader hint is followed when it names a listed server, and never to a server outside the list
// (the bearer token goes only to servers the user configured); an event stream moves on.

#include "drover/api/client.h"

#include <gtest/gtest.h>
#include <httplib.h>

#include <atomic>
#include <chrono>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

namespace drover::api {
namespace {

// An HTTP server on a free loopback port, on a thread of its own, that counts the requests it
// answered and remembers the last Authorization header.
class TestServer {
 public:
  TestServer() {
    port_ = server_.bind_to_any_port("127.0.0.1");
    thread_ = std::thread([this] { server_.listen_after_bind(); });
    while (!server_.is_running()) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  ~TestServer() {
    server_.stop();
    thread_.join();
  }

  // Answers GET /v1/jobs with 200 {"jobs": []}.
  void ServeJobs() {
    server_.Get("/v1/jobs", [this](const httplib::Request& request, httplib::Response& response) {
      Count(request);
      response.set_content(R"({"jobs": []})", "application/json");
    });
  }
  // Answers GET /v1/jobs as a standby whose leader is `leader` (docs/api.md "Standby").
  void ServeStandby(const std::string& leader) {
    server_.Get("/v1/jobs",
                [this, leader](const httplib::Request& request, httplib::Response& response) {
                  Count(request);
                  response.status = 503;
                  response.set_header("X-Drover-Leader", leader);
                  response.set_content(R"({"code": "standby", "message": "a standby", )"
                                       R"("details": [], "leader": ")" +
                                           leader + "\"}",
                                       "application/json");
                });
  }

  // Answers GET /v1/events with `frames` (Server-Sent Events) and ends the stream, keeping the
  // Last-Event-ID it was sent.
  void ServeEvents(const std::string& frames) {
    server_.Get("/v1/events",
                [this, frames](const httplib::Request& request, httplib::Response& response) {
                  Count(request);
                  {
                    std::lock_guard<std::mutex> lock(mu_);
                    last_event_id_ = request.get_header_value("Last-Event-ID");
                  }
                  response.set_content(frames, "text/event-stream");
                });
  }

  std::string url() const { return "http://127.0.0.1:" + std::to_string(port_); }
  std::string last_event_id() const {
    std::lock_guard<std::mutex> lock(mu_);
    return last_event_id_;
  }
  int requests() const { return requests_.load(); }
  bool saw_token() const { return saw_token_.load(); }

 private:
  void Count(const httplib::Request& request) {
    ++requests_;
    if (request.has_header("Authorization")) saw_token_ = true;
  }

  httplib::Server server_;
  int port_ = 0;
  std::thread thread_;
  std::atomic<int> requests_{0};
  std::atomic<bool> saw_token_{false};
  mutable std::mutex mu_;
  std::string last_event_id_;
};

TEST(ApiClientServerList, FollowsAStandbysLeaderHintToAListedServerBeforeTheNextOne) {
  TestServer leader, other, standby;
  leader.ServeJobs();
  other.ServeJobs();
  standby.ServeStandby(leader.url() + "/");  // the same server, written with a trailing '/'
  ApiClient client(standby.url() + "," + other.url() + "," + leader.url());
  auto jobs = client.Get("/v1/jobs");
  ASSERT_TRUE(jobs.has_value()) << jobs.error().ToString();
  EXPECT_EQ(client.base_url(), leader.url());
  EXPECT_EQ(other.requests(), 0) << "the hint was not followed: the list was walked in order";
  EXPECT_EQ(leader.requests(), 1);
}

TEST(ApiClientServerList, NeverFollowsAHintOutsideItsListNorSendsItsTokenThere) {
  TestServer leader, elsewhere, standby;
  leader.ServeJobs();
  elsewhere.ServeJobs();
  standby.ServeStandby(elsewhere.url());  // a hostile or misconfigured standby
  ApiClient client(standby.url() + "," + leader.url());
  client.SetBearer("secret-token");
  auto jobs = client.Get("/v1/jobs");
  ASSERT_TRUE(jobs.has_value()) << jobs.error().ToString();
  EXPECT_EQ(client.base_url(), leader.url());
  EXPECT_EQ(elsewhere.requests(), 0);
  EXPECT_FALSE(elsewhere.saw_token());
  EXPECT_TRUE(leader.saw_token());
}

TEST(ApiClientServerList, AsksEachServerAtMostOncePerCallWhenAllAreStandbys) {
  TestServer first, second;
  first.ServeStandby(second.url());
  second.ServeStandby(first.url());  // two standbys naming each other: no ping-pong
  ApiClient client(first.url() + "," + second.url());
  auto jobs = client.Get("/v1/jobs");
  ASSERT_FALSE(jobs.has_value());
  EXPECT_EQ(jobs.error().code, ErrorCode::kUnavailable);
  EXPECT_EQ(first.requests(), 1);
  EXPECT_EQ(second.requests(), 1);
}

// The streams' end cannot tell a server that ended them from one that died (they are
// close-delimited): with one server that is the end; with several, the stream moves on and
// resumes after the last event it delivered.
TEST(ApiClientServerList, AStreamThatEndsResumesOnTheNextServerAfterItsLastEvent) {
  TestServer old_leader, new_leader;
  old_leader.ServeEvents("id: 7\nevent: job\ndata: {}\n\n");
  new_leader.ServeEvents("id: 100\nevent: reset\ndata: {}\n\nid: 101\nevent: job\ndata: {}\n\n");
  ApiClient client(old_leader.url() + "," + new_leader.url(), 10'000);
  std::vector<std::string> seen;
  Status streamed = client.Events("/v1/events", "", [&](const StreamEvent& event) {
    seen.push_back(event.id + " " + event.type);
    return seen.size() < 3;
  });
  ASSERT_TRUE(streamed.has_value()) << streamed.error().ToString();
  EXPECT_EQ(seen, (std::vector<std::string>{"7 job", "100 reset", "101 job"}));
  EXPECT_EQ(new_leader.last_event_id(), "7");
}

TEST(ApiClientServerList, WithOneServerAStreamThatEndsIsTheEnd) {
  TestServer server;
  server.ServeEvents("id: 7\nevent: job\ndata: {}\n\n");
  ApiClient client(server.url(), 10'000);
  std::vector<std::string> seen;
  Status streamed = client.Events("/v1/events", "", [&](const StreamEvent& event) {
    seen.push_back(event.type);
    return true;
  });
  ASSERT_TRUE(streamed.has_value()) << streamed.error().ToString();
  EXPECT_EQ(seen, std::vector<std::string>{"job"});
  EXPECT_EQ(server.requests(), 1);
}

}  // namespace
}  // namespace drover::api
