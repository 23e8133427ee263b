#include "drover/server/event_hub.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <string>

#include "drover/testing/fake_clock.h"

namespace drover::server {
namespace {

constexpr TimeMs kNever = 0;  // a token that does not expire

using ::testing::HasSubstr;
using ::testing::Not;

model::Identity Member(std::string user, std::string team, std::string token) {
  model::Identity identity;
  identity.user = std::move(user);
  identity.team = std::move(team);
  identity.role = model::Role::kMember;
  identity.token_id = std::move(token);
  return identity;
}

EventRecord JobEvent(std::int64_t job, std::string owner, std::string team) {
  model::Resource resource{"job " + std::to_string(job), std::move(owner), std::move(team), "q",
                           JobId(job)};
  return EventRecord{"job", resource, {{"job", job}}};
}

EventRecord NodeEvent(std::string node) {
  return EventRecord{"node", std::nullopt, {{"node", node}, {"change", "cordoned"}}};
}

api::EventQuery QueryOf(model::Identity caller) {
  api::EventQuery query;
  query.caller = std::move(caller);
  return query;
}

std::string PullAll(api::StreamBody& stream) {
  std::string out;
  EXPECT_TRUE(stream.Pull(out, 1 << 20));
  return out;
}

// The ids of the job, decision and node frames in `text`, in order.
std::vector<std::uint64_t> Ids(const std::string& text) {
  std::vector<std::uint64_t> ids;
  for (std::size_t at = 0, end; (end = text.find("\n\n", at)) != std::string::npos; at = end + 2) {
    const std::string frame = text.substr(at, end - at);
    const bool event = frame.find("event: job\n") != std::string::npos ||
                       frame.find("event: decision\n") != std::string::npos ||
                       frame.find("event: node\n") != std::string::npos;
    if (event && frame.starts_with("id: ")) ids.push_back(std::stoull(frame.substr(4)));
  }
  return ids;
}

TEST(EventHub, AStreamSeesEventsPublishedAfterItOpenedInOrder) {
  drover::testing::FakeClock clock(1000);
  EventHub hub({}, clock);
  hub.Publish(JobEvent(1, "alice", "a"));  // before the stream: not sent
  auto stream = hub.Open(QueryOf(Member("alice", "a", "t1")), {}, kNever).value();
  EXPECT_EQ(PullAll(*stream), "id: 1024001\nevent: open\ndata: {}\n\n");  // after event 1
  hub.Publish(JobEvent(2, "alice", "a"));
  hub.Publish(JobEvent(3, "alice", "a"));
  const std::string out = PullAll(*stream);
  EXPECT_EQ(Ids(out), (std::vector<std::uint64_t>{1000 * 1024 + 2, 1000 * 1024 + 3}));
  EXPECT_THAT(out, HasSubstr("event: job\ndata: {\"job\":2}\n\n"));
  EXPECT_EQ(PullAll(*stream), "");  // nothing twice
}

TEST(EventHub, ResumeAfterAnIdSendsWhatFollowsItOnce) {
  drover::testing::FakeClock clock(7);
  EventHub hub({}, clock);
  auto first = hub.Open(QueryOf(Member("alice", "a", "t1")), {}, kNever).value();
  for (int i = 1; i <= 5; ++i) hub.Publish(JobEvent(i, "alice", "a"));
  std::vector<std::uint64_t> seen = Ids(PullAll(*first));
  ASSERT_EQ(seen.size(), 5u);
  api::EventQuery query = QueryOf(Member("alice", "a", "t1"));
  query.since = seen[2];
  auto resumed = hub.Open(query, {}, kNever).value();
  EXPECT_EQ(Ids(PullAll(*resumed)), (std::vector<std::uint64_t>{seen[3], seen[4]}));
}

TEST(EventHub, ResumeFromBeforeTheRingOrFromAnotherLifeStartsWithReset) {
  drover::testing::FakeClock clock(7);
  EventHub hub(EventHubOptions{.ring_events = 3}, clock);
  for (int i = 1; i <= 10; ++i) hub.Publish(JobEvent(i, "alice", "a"));
  for (std::uint64_t since :
       {std::uint64_t{7 * 1024 + 1}, std::uint64_t{5}, std::uint64_t{99 * 1024}}) {
    api::EventQuery query = QueryOf(Member("alice", "a", "t1"));
    query.since = since;
    auto stream = hub.Open(query, {}, kNever).value();
    const std::string out = PullAll(*stream);
    EXPECT_THAT(out, HasSubstr("event: reset\n")) << since;
    EXPECT_THAT(out, Not(HasSubstr("event: job\n"))) << since;  // it carries on from now
    hub.Publish(JobEvent(11, "alice", "a"));
    EXPECT_THAT(PullAll(*stream), HasSubstr("\"job\":11")) << since;
  }
}

TEST(EventHub, AStreamThatFallsBehindTheRingEndsWithDropped) {
  drover::testing::FakeClock clock(7);
  EventHub hub(EventHubOptions{.ring_events = 4}, clock);
  auto stream = hub.Open(QueryOf(Member("alice", "a", "t1")), {}, kNever).value();
  for (int i = 1; i <= 6; ++i) hub.Publish(JobEvent(i, "alice", "a"));
  std::string out;
  EXPECT_FALSE(stream->Pull(out, 1 << 20));
  EXPECT_THAT(out, HasSubstr("event: dropped\n"));
  EXPECT_THAT(out, Not(HasSubstr("event: job\n")));
  std::string after;
  EXPECT_FALSE(stream->Pull(after, 1 << 20));
  EXPECT_EQ(after, "");
}

TEST(EventHub, PullStopsNearItsBudgetAndCarriesOnNextTime) {
  drover::testing::FakeClock clock(7);
  EventHub hub({}, clock);
  auto stream = hub.Open(QueryOf(Member("alice", "a", "t1")), {}, kNever).value();
  PullAll(*stream);  // the open frame
  for (int i = 1; i <= 10; ++i) hub.Publish(JobEvent(i, "alice", "a"));
  std::string out;
  ASSERT_TRUE(stream->Pull(out, 1));
  EXPECT_EQ(Ids(out).size(), 1u);
  EXPECT_EQ(Ids(PullAll(*stream)).size(), 9u);
}

TEST(EventHub, ACallerSeesOnlyTheJobsItMayViewUnderPrivateData) {
  drover::testing::FakeClock clock(7);
  EventHub hub({}, clock);
  model::Policy policy;
  policy.private_data = true;
  auto bob = hub.Open(QueryOf(Member("bob", "b", "tb")), policy, kNever).value();
  hub.Publish(JobEvent(1, "alice", "a"));
  hub.Publish(JobEvent(2, "bob", "b"));
  hub.Publish(NodeEvent("n1"));
  const std::string out = PullAll(*bob);
  EXPECT_THAT(out, Not(HasSubstr("\"job\":1")));
  EXPECT_THAT(out, HasSubstr("\"job\":2"));
  EXPECT_THAT(out, HasSubstr("\"node\":\"n1\""));
}

TEST(EventHub, AJobsOwnTokenSeesThatJobAloneAndNoNodes) {
  drover::testing::FakeClock clock(7);
  EventHub hub({}, clock);
  model::Identity job_token = Member("alice", "a", "");
  job_token.job = JobId(2);
  auto stream = hub.Open(QueryOf(job_token), {}, kNever).value();
  hub.Publish(JobEvent(1, "alice", "a"));
  hub.Publish(JobEvent(2, "alice", "a"));
  hub.Publish(NodeEvent("n1"));
  const std::string out = PullAll(*stream);
  EXPECT_EQ(Ids(out).size(), 1u);
  EXPECT_THAT(out, HasSubstr("\"job\":2"));
}

TEST(EventHub, FiltersByJobAndType) {
  drover::testing::FakeClock clock(7);
  EventHub hub({}, clock);
  api::EventQuery query = QueryOf(Member("alice", "a", "t1"));
  query.job = JobId(2);
  auto by_job = hub.Open(query, {}, kNever).value();
  api::EventQuery nodes = QueryOf(Member("alice", "a", "t2"));
  nodes.types = {"node"};
  auto by_type = hub.Open(nodes, {}, kNever).value();
  hub.Publish(JobEvent(1, "alice", "a"));
  hub.Publish(JobEvent(2, "alice", "a"));
  hub.Publish(NodeEvent("n1"));
  const std::string job_out = PullAll(*by_job);
  EXPECT_EQ(Ids(job_out).size(), 1u);
  EXPECT_THAT(job_out, HasSubstr("\"job\":2"));
  const std::string type_out = PullAll(*by_type);
  EXPECT_EQ(Ids(type_out).size(), 1u);
  EXPECT_THAT(type_out, HasSubstr("\"node\":\"n1\""));
}

TEST(EventHub, StreamsAreBoundedPerTokenAndInTotalAndFreedWhenClosed) {
  drover::testing::FakeClock clock(7);
  EventHub hub(EventHubOptions{.max_streams = 3, .max_streams_per_token = 2}, clock);
  auto a1 = hub.Open(QueryOf(Member("alice", "a", "ta")), {}, kNever);
  auto a2 = hub.Open(QueryOf(Member("alice", "a", "ta")), {}, kNever);
  ASSERT_TRUE(a1 && a2);
  auto a3 = hub.Open(QueryOf(Member("alice", "a", "ta")), {}, kNever);
  ASSERT_FALSE(a3);
  EXPECT_EQ(a3.error().code, ErrorCode::kResourceExhausted);
  EXPECT_THAT(a3.error().message, HasSubstr("--max-event-streams-per-token"));
  auto b1 = hub.Open(QueryOf(Member("bob", "b", "tb")), {}, kNever);
  ASSERT_TRUE(b1);
  auto b2 = hub.Open(QueryOf(Member("bob", "b", "tb")), {}, kNever);
  ASSERT_FALSE(b2);
  EXPECT_EQ(b2.error().code, ErrorCode::kUnavailable);
  EXPECT_EQ(hub.open_streams(), 3);
  a1->reset();
  EXPECT_EQ(hub.open_streams(), 2);
  EXPECT_TRUE(hub.Open(QueryOf(Member("alice", "a", "ta")), {}, kNever));
}

TEST(EventHub, ARevokedTokensStreamsEndWithRevokedAndOthersCarryOn) {
  drover::testing::FakeClock clock(7);
  EventHub hub({}, clock);
  int wakes = 0;
  hub.SetOnPublish([&wakes] { ++wakes; });
  auto alice = hub.Open(QueryOf(Member("alice", "a", "ta")), {}, kNever).value();
  auto bob = hub.Open(QueryOf(Member("bob", "a", "tb")), {}, kNever).value();
  PullAll(*alice);
  PullAll(*bob);
  hub.EndStreamsOf("tb");
  EXPECT_EQ(wakes, 1);     // the front is woken to read the ending streams
  hub.EndStreamsOf("tc");  // no stream of that token: nothing to wake
  EXPECT_EQ(wakes, 1);
  hub.Publish(JobEvent(1, "alice", "a"));
  std::string ended;
  EXPECT_FALSE(bob->Pull(ended, 1 << 20));
  EXPECT_THAT(ended, HasSubstr("event: revoked\n"));
  EXPECT_THAT(ended, Not(HasSubstr("\"job\":1")));  // nothing after the revocation is sent
  EXPECT_EQ(Ids(PullAll(*alice)).size(), 1u);
  bob.reset();
  // The mark goes with the token's last stream.
  EXPECT_EQ(hub.open_streams(), 1);
  auto again = hub.Open(QueryOf(Member("bob", "a", "tb")), {}, kNever).value();
  EXPECT_THAT(PullAll(*again), HasSubstr("event: open\n"));
}

TEST(EventHub, AStreamEndsWithExpiredOnceItsTokenExpires) {
  drover::testing::FakeClock clock(1'000);
  EventHub hub({}, clock);
  auto alice =
      hub.Open(QueryOf(Member("alice", "a", "ta")), {}, /*token_expires_at=*/5'000).value();
  auto bob = hub.Open(QueryOf(Member("bob", "a", "tb")), {}, kNever).value();
  hub.Publish(JobEvent(1, "alice", "a"));
  EXPECT_EQ(Ids(PullAll(*alice)).size(), 1u);  // before the expiry: events flow
  clock.Set(4'999);
  std::string idle;
  EXPECT_TRUE(alice->Pull(idle, 0));  // the front's read at a heartbeat: still alive
  EXPECT_EQ(idle, "");
  clock.Set(5'000);
  std::string ended;
  EXPECT_FALSE(alice->Pull(ended, 0));  // ends at the first read at or after the expiry
  EXPECT_THAT(ended, HasSubstr("event: expired\n"));
  hub.Publish(JobEvent(2, "alice", "a"));
  std::string after;
  EXPECT_FALSE(alice->Pull(after, 1 << 20));
  EXPECT_EQ(after, "");                      // nothing after the expiry is sent
  EXPECT_EQ(Ids(PullAll(*bob)).size(), 2u);  // a token without expiry carries on
}

TEST(EventHub, TheRingKeepsNoMoreThanItsBound) {
  drover::testing::FakeClock clock(7);
  EventHub hub(EventHubOptions{.ring_events = 2}, clock);
  for (int i = 1; i <= 100; ++i) hub.Publish(JobEvent(i, "alice", "a"));
  api::EventQuery query = QueryOf(Member("alice", "a", "t1"));
  query.since = hub.next_id() - 3;  // the event before the two kept: still resumable
  auto stream = hub.Open(query, {}, kNever).value();
  const std::string out = PullAll(*stream);
  EXPECT_EQ(Ids(out).size(), 2u);
  EXPECT_THAT(out, Not(HasSubstr("reset")));
}

}  // namespace
}  // namespace drover::server
