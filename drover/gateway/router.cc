#include "drover/gateway/router.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <numeric>

namespace drover::gateway {

bool CircuitBreaker::Available(TimeMs now) const {
  switch (state_) {
    case State::kClosed:
      return true;
    case State::kOpen:
      return now >= open_until_;
    case State::kHalfOpen:
      return !probe_in_flight_;
  }
  return false;
}

void CircuitBreaker::OnSent(TimeMs now) {
  if (state_ == State::kOpen && now >= open_until_) state_ = State::kHalfOpen;
  if (state_ == State::kHalfOpen) probe_in_flight_ = true;
}

void CircuitBreaker::OnSuccess() {
  state_ = State::kClosed;
  failures_ = 0;
  open_for_ = 0;
  probe_in_flight_ = false;
}

void CircuitBreaker::OnFailure(TimeMs now) {
  ++failures_;
  probe_in_flight_ = false;
  if (state_ == State::kHalfOpen) {
    open_for_ = std::min(options_.max_open_ms, std::max(options_.open_ms, open_for_ * 2));
  } else if (state_ == State::kClosed && failures_ >= options_.failure_threshold) {
    open_for_ = options_.open_ms;
  } else if (state_ != State::kOpen) {
    return;
  }
  state_ = State::kOpen;
  open_until_ = now + open_for_;
}

void CircuitBreaker::OnProbeFailure(TimeMs now) {
  if (state_ == State::kOpen) {
    open_until_ = std::max(open_until_, now + open_for_);
  } else if (state_ == State::kClosed) {
    OnFailure(now);
  }
}

CircuitBreaker::State CircuitBreaker::state(TimeMs now) const {
  if (state_ == State::kOpen && now >= open_until_) return State::kHalfOpen;
  return state_;
}

const char* BreakerStateName(CircuitBreaker::State state) {
  switch (state) {
    case CircuitBreaker::State::kClosed:
      return "closed";
    case CircuitBreaker::State::kOpen:
      return "open";
    case CircuitBreaker::State::kHalfOpen:
      return "half-open";
  }
  return "closed";
}

RetryBudget::RetryBudget(RetryBudgetOptions options)
    : options_(options),
      buckets_(
          static_cast<std::size_t>(std::max<DurationMs>(1, options.window_ms / kMillisPerSecond))) {
}

RetryBudget::Bucket& RetryBudget::BucketAt(TimeMs now) {
  const TimeMs second = now / kMillisPerSecond;
  Bucket& bucket = buckets_[static_cast<std::size_t>(second) % buckets_.size()];
  if (bucket.second != second) bucket = Bucket{second, 0, 0};
  return bucket;
}

void RetryBudget::OnRequest(TimeMs now) { ++BucketAt(now).requests; }

bool RetryBudget::TryRetry(TimeMs now) {
  Bucket& current = BucketAt(now);
  const TimeMs oldest = now / kMillisPerSecond - static_cast<TimeMs>(buckets_.size()) + 1;
  int requests = 0;
  int retries = 0;
  for (const Bucket& bucket : buckets_) {
    if (bucket.second < oldest) continue;
    requests += bucket.requests;
    retries += bucket.retries;
  }
  if (retries + 1 > options_.min_retries + options_.ratio * requests) return false;
  ++current.retries;
  return true;
}

std::uint64_t RingHash(const std::string& text) {
  std::uint64_t hash = 14695981039346656037ull;
  for (unsigned char c : text) {
    hash ^= c;
    hash *= 1099511628211ull;
  }
  hash ^= hash >> 33;
  hash *= 0xff51afd7ed558ccdull;
  hash ^= hash >> 33;
  hash *= 0xc4ceb9fe1a85ec53ull;
  hash ^= hash >> 33;
  return hash;
}

Router::Router(std::vector<Backend> backends, RouteOptions options, BreakerOptions breaker,
               RetryBudgetOptions budget, std::uint64_t seed)
    : backends_(std::move(backends)),
      options_(options),
      breaker_options_(breaker),
      budget_(budget),
      random_(seed) {
  for (Backend& backend : backends_) {
    for (Endpoint& endpoint : backend.endpoints) endpoint.breaker = CircuitBreaker(breaker);
  }
}

std::optional<Pick> Router::Choose(const std::string& prefix, bool cheapest,
                                   const std::vector<Pick>& tried, TimeMs now) {
  std::vector<int> order(backends_.size());
  std::iota(order.begin(), order.end(), 0);
  if (cheapest) {
    std::stable_sort(order.begin(), order.end(), [&](int a, int b) {
      return backends_[a].cost_per_1k_tokens < backends_[b].cost_per_1k_tokens;
    });
  }
  for (int index : order) {
    const Backend& backend = backends_[index];
    std::vector<int> eligible;
    for (int i = 0; i < static_cast<int>(backend.endpoints.size()); ++i) {
      const Endpoint& endpoint = backend.endpoints[i];
      if (!endpoint.breaker.Available(now)) continue;
      if (std::find(tried.begin(), tried.end(), Pick{index, endpoint.url}) != tried.end()) {
        continue;
      }
      eligible.push_back(i);
    }
    if (eligible.empty()) continue;
    const std::optional<int> chosen = options_.policy == Policy::kPrefixAffinity
                                          ? PickByPrefix(backend, eligible, prefix)
                                          : PickLeastOutstanding(backend, eligible);
    if (chosen) return Pick{index, backend.endpoints[*chosen].url};
  }
  return std::nullopt;
}

std::optional<int> Router::PickLeastOutstanding(const Backend& backend,
                                                const std::vector<int>& eligible) {
  if (eligible.size() == 1) return eligible[0];
  std::uniform_int_distribution<std::size_t> first(0, eligible.size() - 1);
  std::uniform_int_distribution<std::size_t> second(0, eligible.size() - 2);
  const std::size_t a = first(random_);
  std::size_t b = second(random_);
  if (b >= a) ++b;
  const Endpoint& ea = backend.endpoints[eligible[a]];
  const Endpoint& eb = backend.endpoints[eligible[b]];
  return eb.outstanding < ea.outstanding ? eligible[b] : eligible[a];
}

std::optional<int> Router::PickByPrefix(const Backend& backend, const std::vector<int>& eligible,
                                        const std::string& prefix) const {
  // The ring of the eligible endpoints: virtual_nodes points each, hashed from the URL (so an
  // endpoint keeps its points when others come and go).
  std::vector<std::pair<std::uint64_t, int>> ring;
  ring.reserve(eligible.size() * static_cast<std::size_t>(options_.virtual_nodes));
  int total = 0;
  for (int i : eligible) {
    total += backend.endpoints[i].outstanding;
    for (int v = 0; v < options_.virtual_nodes; ++v) {
      ring.emplace_back(RingHash(backend.endpoints[i].url + "#" + std::to_string(v)), i);
    }
  }
  std::sort(ring.begin(), ring.end());
  const double bound =
      std::ceil((1 + options_.epsilon) * (total + 1) / static_cast<double>(eligible.size()));
  const std::uint64_t key = RingHash(prefix);
  auto start = std::lower_bound(ring.begin(), ring.end(), std::make_pair(key, -1));
  for (std::size_t step = 0; step < ring.size(); ++step) {
    const std::size_t at = (static_cast<std::size_t>(start - ring.begin()) + step) % ring.size();
    const int i = ring[at].second;
    if (backend.endpoints[i].outstanding + 1 <= bound) return i;
  }
  return std::nullopt;  // cannot happen: some endpoint is at or below the mean
}

Endpoint* Router::Mutable(const Pick& pick) {
  if (pick.backend < 0 || pick.backend >= static_cast<int>(backends_.size())) return nullptr;
  for (Endpoint& endpoint : backends_[pick.backend].endpoints) {
    if (endpoint.url == pick.url) return &endpoint;
  }
  return nullptr;
}

const Endpoint* Router::Find(const Pick& pick) const {
  return const_cast<Router*>(this)->Mutable(pick);
}

void Router::OnSent(const Pick& pick, TimeMs now) {
  Endpoint* endpoint = Mutable(pick);
  if (endpoint == nullptr) return;
  ++endpoint->outstanding;
  ++endpoint->requests;
  endpoint->breaker.OnSent(now);
}

void Router::OnDone(const Pick& pick, bool healthy, TimeMs now) {
  Endpoint* endpoint = Mutable(pick);
  if (endpoint == nullptr) return;
  endpoint->outstanding = std::max(0, endpoint->outstanding - 1);
  if (healthy) {
    endpoint->breaker.OnSuccess();
  } else {
    endpoint->breaker.OnFailure(now);
  }
}

void Router::OnProbe(const Pick& pick, bool healthy, TimeMs now) {
  Endpoint* endpoint = Mutable(pick);
  if (endpoint == nullptr) return;
  if (!healthy) endpoint->breaker.OnProbeFailure(now);
}

void Router::SetEndpoints(int index, const std::vector<std::string>& urls,
                          const std::vector<std::string>& names) {
  Backend& backend = backends_[index];
  std::map<std::string, Endpoint> old;
  for (Endpoint& endpoint : backend.endpoints) old.emplace(endpoint.url, std::move(endpoint));
  backend.endpoints.clear();
  for (std::size_t i = 0; i < urls.size(); ++i) {
    auto it = old.find(urls[i]);
    Endpoint endpoint = it != old.end() ? std::move(it->second) : Endpoint{};
    if (it == old.end()) endpoint.breaker = CircuitBreaker(breaker_options_);
    endpoint.url = urls[i];
    endpoint.name = i < names.size() ? names[i] : urls[i];
    backend.endpoints.push_back(std::move(endpoint));
  }
}

}  // namespace drover::gateway
