#pragma once

// The gateway's routing core (docs/inference.md, "Routing" and "Failover and budgets"): pure,
// deterministic given its random generator and the times passed in, no I/O. Not thread-safe: the
// gateway calls it from its one event thread only.
//
// - A model routes to an ordered list of backends (failover tiers). A backend is a set of
//   endpoints (a service's ready replicas, a static list, or one external provider URL), with a
//   cost per 1k tokens.
// - Within a backend an endpoint is chosen by least outstanding requests with the power of two
//   choices (two distinct available endpoints drawn at random, the one with fewer requests in
//   flight wins), or, in prefix-affinity mode, by consistent hashing of the prompt's prefix with
//   bounded load: walking the hash ring from the key, the first available endpoint whose
//   outstanding + 1 is at most ceil((1 + epsilon) * (total outstanding + 1) / endpoints) wins, so
//   repeat prefixes stay on one replica until it carries more than (1 + epsilon) x the mean.
// - Each endpoint has a circuit breaker (closed, open, half-open) fed by passive health (5xx,
//   connect errors, timeouts) and active probes.
// - Across backends: the first (or, when the request allows it, the cheapest) backend with an
//   available endpoint. A failed attempt may be retried on another endpoint or the next backend
//   while the model's retry budget allows: retries within a sliding window stay below
//   min_retries_per_window + retry_ratio x requests.

#include <cstdint>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include "drover/common/clock.h"

namespace drover::gateway {

// The breaker's settings, with defaults (docs/inference.md lists them).
struct BreakerOptions {
  // Consecutive failures that open a closed breaker.
  int failure_threshold = 3;
  // How long an open breaker refuses requests before it lets one probe through (half-open);
  // doubled each time the half-open probe fails, up to max_open_ms, and reset when one succeeds.
  DurationMs open_ms = 5 * kMillisPerSecond;
  DurationMs max_open_ms = 60 * kMillisPerSecond;
};

// One endpoint's circuit breaker. Closed: every request passes; failure_threshold consecutive
// failures open it. Open: none passes until its open period has passed, then it is half-open:
// one request passes; its success closes the breaker, its failure opens it again for twice the
// last period (at most max_open_ms). An active probe that fails counts as a failure when closed
// and restarts the open period when open, so a dead endpoint gets no real request; a probe that
// succeeds changes nothing (an engine may answer /health and still fail its completions: only a
// real request closes the breaker).
class CircuitBreaker {
 public:
  enum class State { kClosed, kOpen, kHalfOpen };

  CircuitBreaker() = default;
  explicit CircuitBreaker(BreakerOptions options) : options_(options) {}
  // Whether a request may be sent now (no change of state).
  bool Available(TimeMs now) const;
  // A request is sent now (after Available): an open breaker whose time is up turns half-open
  // and holds its one probe.
  void OnSent(TimeMs now);
  void OnSuccess();
  void OnFailure(TimeMs now);
  // An active probe of /health failed.
  void OnProbeFailure(TimeMs now);
  State state(TimeMs now) const;
  int consecutive_failures() const { return failures_; }

 private:
  BreakerOptions options_;
  State state_ = State::kClosed;
  int failures_ = 0;
  TimeMs open_until_ = 0;
  DurationMs open_for_ = 0;  // the current open period
  bool probe_in_flight_ = false;
};

const char* BreakerStateName(CircuitBreaker::State state);

// Retries allowed over a sliding window: at most min_retries + ratio x requests (counted in
// one-second buckets over window_ms), so a failing backend sees at most that many extra
// requests.
struct RetryBudgetOptions {
  double ratio = 0.2;
  int min_retries = 3;
  DurationMs window_ms = 10 * kMillisPerSecond;
};

class RetryBudget {
 public:
  explicit RetryBudget(RetryBudgetOptions options = {});
  void OnRequest(TimeMs now);
  // True, and counts the retry, when the budget allows one more now.
  bool TryRetry(TimeMs now);

 private:
  struct Bucket {
    TimeMs second = -1;
    int requests = 0;
    int retries = 0;
  };
  Bucket& BucketAt(TimeMs now);

  RetryBudgetOptions options_;
  std::vector<Bucket> buckets_;
};

enum class Policy { kLeastOutstanding, kPrefixAffinity };

struct Endpoint {
  std::string url;   // http://HOST:PORT (no path)
  std::string name;  // for metrics and logs: the replica's job id or the URL
  int outstanding = 0;
  CircuitBreaker breaker;
  std::int64_t requests = 0;  // sent to it, for tests and the load signal
};

struct Backend {
  std::string name;
  double cost_per_1k_tokens = 0;
  std::vector<Endpoint> endpoints;
};

struct RouteOptions {
  Policy policy = Policy::kLeastOutstanding;
  // Prefix affinity: the load bound's epsilon (no endpoint above (1 + epsilon) x the mean).
  double epsilon = 0.25;
  // Points of each endpoint on the hash ring.
  int virtual_nodes = 64;
};

// Where one attempt goes: an index into Router::backends() and the endpoint's URL (stable
// across SetEndpoints, which may reorder or drop endpoints while attempts are in flight).
struct Pick {
  int backend = -1;
  std::string url;
  bool operator==(const Pick&) const = default;
};

// The routing state of one model: its backends in failover order, their endpoints' load and
// health, and the model's retry budget.
class Router {
 public:
  Router(std::vector<Backend> backends, RouteOptions options, BreakerOptions breaker,
         RetryBudgetOptions budget, std::uint64_t seed);

  // The endpoint for an attempt: the first backend in order (by cost, lowest first and ties in
  // order, when `cheapest`) with an available endpoint not in `tried`, and in it the endpoint the
  // policy picks for `prefix`. nullopt when none is available. Counts nothing: call OnSent.
  std::optional<Pick> Choose(const std::string& prefix, bool cheapest,
                             const std::vector<Pick>& tried, TimeMs now);
  // The attempt was sent (outstanding + 1, breaker's probe held).
  void OnSent(const Pick& pick, TimeMs now);
  // The attempt ended (outstanding - 1); `healthy` false for 5xx, connect errors and timeouts.
  void OnDone(const Pick& pick, bool healthy, TimeMs now);
  void OnProbe(const Pick& pick, bool healthy, TimeMs now);

  // A new request (counted by the retry budget).
  void OnRequest(TimeMs now) { budget_.OnRequest(now); }
  bool TryRetry(TimeMs now) { return budget_.TryRetry(now); }

  // Replaces backend `index`'s endpoints with those at `urls` (names alongside), keeping the
  // state of endpoints whose URL stays. A removed endpoint's attempts still in flight end with
  // OnDone on a pick that no longer matches, which is ignored.
  void SetEndpoints(int index, const std::vector<std::string>& urls,
                    const std::vector<std::string>& names);

  const std::vector<Backend>& backends() const { return backends_; }
  const Endpoint* Find(const Pick& pick) const;

 private:
  std::optional<int> PickLeastOutstanding(const Backend& backend, const std::vector<int>& eligible);
  std::optional<int> PickByPrefix(const Backend& backend, const std::vector<int>& eligible,
                                  const std::string& prefix) const;
  Endpoint* Mutable(const Pick& pick);

  std::vector<Backend> backends_;
  RouteOptions options_;
  BreakerOptions breaker_options_;
  RetryBudget budget_;
  std::mt19937_64 random_;
};

// The hash of the ring's points and of prompt prefixes: 64-bit FNV-1a, then murmur3's fmix64
// finalizer. FNV-1a alone mixes a string's last bytes into the low bits only, so keys that differ
// at their end ("http://h:8001#3", "prefix 12") would cluster on the ring.
std::uint64_t RingHash(const std::string& text);

}  // namespace drover::gateway
