#pragma once

// EventHub: the server's live events (GET /v1/events; docs/api.md, "Events"; docs/architecture.md,
// "Live events"). The control plane publishes each job transition, scheduling decision and node
// change once, as it persists it; the hub keeps the newest in a ring of bounded size and every
// open stream reads the ring through a cursor of its own. Nothing is queued per stream, so a
// slow reader costs its cursor and its connection's send buffer, never memory that grows: once
// the ring has moved past the events a stream has not yet taken, the stream ends with a final
// `dropped` event (the client reconnects and reloads).
//
// A stream's first frame is `open`, or `reset` when the id to resume after is not resumable, with
// the id of the last event before the stream's first (so a client that reconnects before any
// event resumes from there, and a client that draws after `open` misses nothing).
//
// Event ids increase by one per event and start at the hub's creation time in milliseconds times
// 1024, so that an id from an earlier life of the server is older than any of this one: resuming
// after it (or after an id not yet given, or one the ring no longer holds) starts with a `reset`
// event, telling the client to reload what it shows, then carries on with the next event.
//
// Thread-safe: Publish from any thread (the control plane calls it under its lock: it formats
// one frame and appends it, O(1), no I/O); Open from the API's threads; each stream is read by
// the HTTP front's event thread. on_publish runs in each Publish under the hub's lock (so that
// once SetOnPublish(nullptr) returns it runs no more): it must be quick and not call the hub.

#include <cstddef>
#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>

#include "drover/api/request.h"
#include "drover/api/service.h"
#include "drover/common/clock.h"
#include "drover/common/result.h"
#include "drover/common/thread_annotations.h"
#include "drover/model/access.h"
#include "drover/model/policy.h"

namespace drover::server {

// Every bound of the hub, with its default; docs/api.md ("Events") lists the flags.
struct EventHubOptions {
  // Events kept for resuming (--event-ring): a stream further behind than this ends (`dropped`),
  // a resume from before it starts with `reset`. One event is a few hundred bytes.
  std::size_t ring_events = 4096;
  // Streams open at once on the server (--max-event-streams); 503 beyond.
  int max_streams = 256;
  // Streams open at once per token (--max-event-streams-per-token); 429 beyond.
  int max_streams_per_token = 8;
};

// One published event, before it is framed.
struct EventRecord {
  std::string type;  // one of api::kEventTypes
  // The job it is about (its owner, team and queue: who may view it); none for a node event.
  std::optional<model::Resource> job;
  nlohmann::json data;
};

class EventHub {
 public:
  // `clock`: the server's, outliving the hub. The first id is its time at creation, in ms, times
  // 1024; a stream reads it to end when its token expires.
  EventHub(const EventHubOptions& options, const Clock& clock);
  ~EventHub();
  EventHub(const EventHub&) = delete;
  EventHub& operator=(const EventHub&) = delete;

  // Appends `event` to the ring (dropping the oldest beyond ring_events) and runs on_publish.
  void Publish(EventRecord event) EXCLUDES(mu_);

  // A stream of the events `query` selects that `query.caller` may view under `policy` (a copy:
  // a policy reloaded later does not change an open stream's filter). kResourceExhausted when
  // the caller's token has max_streams_per_token streams open, kUnavailable at max_streams. The
  // stream may outlive the hub's callers but not the hub. `token_expires_at`: when the caller's
  // token expires (0: never); from then on the stream's next read sends a last `expired` frame
  // and ends (the HTTP front reads an idle stream at each heartbeat, so it ends within
  // --event-heartbeat of the expiry).
  Result<std::shared_ptr<api::StreamBody>> Open(const api::EventQuery& query,
                                                const model::Policy& policy,
                                                TimeMs token_expires_at) EXCLUDES(mu_);

  // Ends every open stream of token `token_id` (a revoked token's): each sends a last `revoked`
  // frame at its next read, which this wakes, and closes. Streams opened later are not affected
  // (a revoked token opens none).
  void EndStreamsOf(const std::string& token_id) EXCLUDES(mu_);

  // Called in every Publish (the HTTP front's wake of its streams, non-blocking); nullptr: none.
  // Not called after SetOnPublish returns with another.
  void SetOnPublish(std::function<void()> on_publish) EXCLUDES(mu_);

  // The id the next event gets.
  std::uint64_t next_id() const EXCLUDES(mu_);
  int open_streams() const EXCLUDES(mu_);

 private:
  class Stream;
  struct Framed {
    std::uint64_t id;
    EventRecord record;
    std::string frame;  // "id: N\nevent: TYPE\ndata: JSON\n\n"
  };

  void Close(const std::string& token) EXCLUDES(mu_);

  const EventHubOptions options_;
  const Clock& clock_;
  mutable Mutex mu_;
  std::deque<Framed> ring_ GUARDED_BY(mu_);  // ids consecutive, oldest first
  std::uint64_t next_id_ GUARDED_BY(mu_);
  const std::uint64_t first_id_;
  std::map<std::string, int> per_token_ GUARDED_BY(mu_);
  // Tokens whose open streams are to end (EndStreamsOf); a key leaves when its last stream closes.
  std::set<std::string> ending_ GUARDED_BY(mu_);
  int open_ GUARDED_BY(mu_) = 0;
  std::function<void()> on_publish_ GUARDED_BY(mu_);
};

}  // namespace drover::server
