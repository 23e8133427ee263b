#include "drover/server/service_prober.h"

#include <httplib.h>

#include <algorithm>
#include <atomic>
#include <chrono>

namespace drover::server {

ProbeResult RunProbe(const ProbeTarget& target) {
  ProbeResult result{target, false, ""};
  try {
    httplib::Client client(target.host, target.port);
    const auto timeout = std::chrono::milliseconds(target.timeout_ms);
    client.set_connection_timeout(timeout);
    client.set_read_timeout(timeout);
    client.set_write_timeout(timeout);
    httplib::Result reply = client.Get(target.path);
    if (!reply) {
      result.outcome = "no answer (" + httplib::to_string(reply.error()) + ")";
      return result;
    }
    result.ok = reply->status >= 200 && reply->status < 300;
    result.outcome = "HTTP " + std::to_string(reply->status);
  } catch (const std::exception& e) {
    result.outcome = e.what();
  }
  return result;
}

ServiceProber::ServiceProber(Due due, Report report, DurationMs period_ms, int max_parallel)
    : due_(std::move(due)),
      report_(std::move(report)),
      period_ms_(period_ms),
      max_parallel_(std::max(1, max_parallel)) {}

ServiceProber::~ServiceProber() { Stop(); }

void ServiceProber::Start() {
  thread_ = std::thread([this] { Loop(); });
}

void ServiceProber::Stop() {
  {
    std::lock_guard lock(mu_);
    stopping_ = true;
  }
  wake_.notify_all();
  if (thread_.joinable()) thread_.join();
}

std::vector<ProbeResult> ServiceProber::RunAll(const std::vector<ProbeTarget>& targets) const {
  std::vector<ProbeResult> results(targets.size());
  std::atomic<std::size_t> next{0};
  auto work = [&] {
    for (std::size_t i; (i = next.fetch_add(1)) < targets.size();) {
      results[i] = RunProbe(targets[i]);
    }
  };
  const std::size_t threads = std::min(targets.size(), static_cast<std::size_t>(max_parallel_));
  std::vector<std::thread> pool;
  for (std::size_t t = 1; t < threads; ++t) pool.emplace_back(work);
  work();
  for (std::thread& thread : pool) thread.join();
  return results;
}

void ServiceProber::Loop() {
  while (true) {
    {
      std::unique_lock lock(mu_);
      wake_.wait_for(lock, std::chrono::milliseconds(period_ms_), [&] { return stopping_; });
      if (stopping_) return;
    }
    std::vector<ProbeTarget> targets = due_();
    if (targets.empty()) continue;
    report_(RunAll(targets));
  }
}

}  // namespace drover::server
