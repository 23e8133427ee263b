#include "drover/server/event_hub.h"

#include <fmt/format.h>

#include <algorithm>
#include <utility>

namespace drover::server {
namespace {

// An SSE frame; no id line when `id` is none (a `dropped` event, after which the client resumes
// from the last id it had).
std::string Frame(std::optional<std::uint64_t> id, std::string_view type,
                  const nlohmann::json& data) {
  std::string frame;
  if (id) frame = fmt::format("id: {}\n", *id);
  return frame + fmt::format("event: {}\ndata: {}\n\n", type, data.dump());
}

// The key streams are counted under: the token's public id (a user's name for an identity
// without one: tests, `drover run`).
std::string TokenKey(const model::Identity& identity) {
  return identity.token_id.empty() ? "user:" + identity.user : identity.token_id;
}

}  // namespace

// One client's stream: a cursor into the hub's ring and the filter of its query.
class EventHub::Stream final : public api::StreamBody {
 public:
  Stream(EventHub& hub, api::EventQuery query, model::Policy policy, std::string token,
         TimeMs token_expires_at, std::uint64_t cursor, bool reset)
      : hub_(hub),
        query_(std::move(query)),
        policy_(std::move(policy)),
        token_(std::move(token)),
        token_expires_at_(token_expires_at),
        cursor_(cursor),
        reset_(reset) {
    nodes_visible_ =
        !query_.job &&
        model::Visible(query_.caller, model::Verb::kView,
                       model::Resource{"the cluster", "", "", "", std::nullopt}, policy_);
  }
  ~Stream() override { hub_.Close(token_); }

  bool Pull(std::string& out, std::size_t max_bytes) override {
    if (ended_) return false;
    const std::size_t start = out.size();
    MutexLock lock(hub_.mu_);
    if (hub_.ending_.count(token_) != 0) {
      ended_ = true;
      out += Frame(std::nullopt, "revoked",
                   {{"message", "this stream's token was revoked; the server closes it"}});
      return false;
    }
    if (token_expires_at_ != 0 && hub_.clock_.Now() >= token_expires_at_) {
      ended_ = true;
      out += Frame(std::nullopt, "expired",
                   {{"message", "this stream's token has expired; the server closes it"}});
      return false;
    }
    if (!hub_.ring_.empty() && cursor_ + 1 < hub_.ring_.front().id) {
      ended_ = true;
      out += Frame(std::nullopt, "dropped",
                   {{"message", fmt::format("this stream fell more than {} events behind (the "
                                            "server's --event-ring); reconnect and reload",
                                            hub_.options_.ring_events)}});
      return false;
    }
    if (max_bytes == 0) return true;
    if (first_) {
      first_ = false;
      out += reset_ ? Frame(cursor_, "reset",
                            {{"message",
                              "the events after the id given are no longer kept (or it is not one "
                              "of this server's): reload, then read on"}})
                    : Frame(cursor_, "open", nlohmann::json::object());
    }
    if (hub_.ring_.empty()) return true;
    const std::uint64_t oldest = hub_.ring_.front().id;
    for (std::size_t i = cursor_ + 1 - oldest;
         i < hub_.ring_.size() && out.size() - start < max_bytes; ++i) {
      const Framed& event = hub_.ring_[i];
      cursor_ = event.id;
      if (Selects(event.record)) out += event.frame;
    }
    return true;
  }

  std::string Heartbeat() const override { return ": keep-alive\n\n"; }

 private:
  bool Selects(const EventRecord& record) const {
    if (!query_.types.empty() && query_.types.count(record.type) == 0) return false;
    if (!record.job) return nodes_visible_;
    if (query_.job && record.job->job != query_.job) return false;
    return model::Visible(query_.caller, model::Verb::kView, *record.job, policy_);
  }

  EventHub& hub_;
  const api::EventQuery query_;
  const model::Policy policy_;
  const std::string token_;
  const TimeMs token_expires_at_;  // 0: never
  bool nodes_visible_ = false;
  // The front's event thread alone reads and moves these (under hub_.mu_ for the ring).
  std::uint64_t cursor_;  // the last event id this stream has considered
  const bool reset_;
  bool first_ = true;  // the open or reset frame is still to send
  bool ended_ = false;
};

EventHub::EventHub(const EventHubOptions& options, const Clock& clock)
    : options_(options),
      clock_(clock),
      next_id_(static_cast<std::uint64_t>(std::max<TimeMs>(clock.Now(), 0)) * 1024 + 1),
      first_id_(next_id_) {}

EventHub::~EventHub() = default;

void EventHub::Publish(EventRecord event) {
  MutexLock lock(mu_);
  const std::uint64_t id = next_id_++;
  std::string frame = Frame(id, event.type, event.data);
  ring_.push_back(Framed{id, std::move(event), std::move(frame)});
  while (ring_.size() > std::max<std::size_t>(options_.ring_events, 1)) ring_.pop_front();
  if (on_publish_) on_publish_();
}

Result<std::shared_ptr<api::StreamBody>> EventHub::Open(const api::EventQuery& query,
                                                        const model::Policy& policy,
                                                        TimeMs token_expires_at) {
  std::string token = TokenKey(query.caller);
  MutexLock lock(mu_);
  if (open_ >= options_.max_streams) {
    return Unavailable(fmt::format(
        "the server has {} event streams open, its limit (--max-event-streams); try again later",
        open_));
  }
  int& mine = per_token_[token];
  if (mine >= options_.max_streams_per_token) {
    return ResourceExhausted(
        fmt::format("this token has {} event streams open, the limit per token "
                    "(--max-event-streams-per-token); close one first",
                    mine));
  }
  const std::uint64_t last = next_id_ - 1;
  std::uint64_t cursor = last;
  bool reset = false;
  if (query.since) {
    const std::uint64_t oldest = ring_.empty() ? next_id_ : ring_.front().id;
    if (*query.since + 1 >= oldest && *query.since <= last && *query.since + 1 >= first_id_) {
      cursor = *query.since;
    } else {
      reset = true;
    }
  }
  ++mine;
  ++open_;
  return std::shared_ptr<api::StreamBody>(
      new Stream(*this, query, policy, std::move(token), token_expires_at, cursor, reset));
}

void EventHub::Close(const std::string& token) {
  MutexLock lock(mu_);
  --open_;
  auto it = per_token_.find(token);
  if (it != per_token_.end() && --it->second <= 0) {
    per_token_.erase(it);
    ending_.erase(token);
  }
}

void EventHub::EndStreamsOf(const std::string& token_id) {
  MutexLock lock(mu_);
  if (per_token_.count(token_id) == 0) return;
  ending_.insert(token_id);
  if (on_publish_) on_publish_();
}

void EventHub::SetOnPublish(std::function<void()> on_publish) {
  MutexLock lock(mu_);
  on_publish_ = std::move(on_publish);
}

std::uint64_t EventHub::next_id() const {
  MutexLock lock(mu_);
  return next_id_;
}

int EventHub::open_streams() const {
  MutexLock lock(mu_);
  return open_;
}

}  // namespace drover::server
