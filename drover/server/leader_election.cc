#include "drover/server/leader_election.h"

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <chrono>
#include <utility>

namespace drover::server {

LeaderElection::LeaderElection(std::unique_ptr<store::PostgresLease> lease, std::string holder,
                               std::string url, LeaseOptions options)
    : lease_(std::move(lease)),
      holder_(std::move(holder)),
      url_(std::move(url)),
      options_(options) {}

LeaderElection::~LeaderElection() { Stop(); }

bool LeaderElection::WaitOrStopped() {
  MutexLock lock(mu_);
  wake_.wait_for(lock, std::chrono::milliseconds(options_.renew_every),
                 [&]() REQUIRES(mu_) { return stopped_; });
  return stopped_;
}

std::optional<std::int64_t> LeaderElection::Campaign(
    const std::function<bool()>& stopping, const std::function<void(const std::string&)>& standby) {
  while (!stopping()) {
    auto taken = lease_->TryAcquire(holder_, url_, options_.duration);
    if (!taken) {
      spdlog::warn("leader lease: {}; trying again", taken.error().message);
    } else if (*taken) {
      spdlog::info("leader lease taken: epoch {}", **taken);
      return *taken;
    } else if (auto current = lease_->Current(); current && *current) {
      standby((*current)->url);
    }
    if (WaitOrStopped()) return std::nullopt;
  }
  return std::nullopt;
}

void LeaderElection::KeepRenewing(std::int64_t epoch,
                                  std::function<void(const std::string&)> on_lost,
                                  std::function<void(const std::string&)> on_lapsed) {
  epoch_ = epoch;
  {
    // Taken by Campaign just before: its try started no later than now.
    MutexLock lock(mu_);
    renewed_at_ = std::chrono::steady_clock::now();
  }
  renewer_ = std::thread([this, on_lost = std::move(on_lost)] { RenewUntilStopped(on_lost); });
  watchdog_ =
      std::thread([this, on_lapsed = std::move(on_lapsed)] { WatchUntilStopped(on_lapsed); });
}

void LeaderElection::RenewUntilStopped(const std::function<void(const std::string&)>& on_lost) {
  while (!WaitOrStopped()) {
    bool lapsed = false;
    {
      MutexLock lock(mu_);
      lapsed = lapsed_;
    }
    if (lapsed) {
      // Self-fenced: the lease is released (a standby takes over at its next try) as soon as
      // the database answers, and the server steps down.
      Status released = lease_->Release(epoch_);
      if (!released) {
        spdlog::warn("leader lease epoch {}: {}; trying again", epoch_, released.error().message);
        continue;
      }
      on_lost(fmt::format("the leader lease of epoch {} lapsed unrenewed", epoch_));
      return;
    }
    const auto started = std::chrono::steady_clock::now();
    auto renewed = lease_->Renew(epoch_, options_.duration);
    if (!renewed) {
      spdlog::warn("leader lease epoch {}: {}; trying again", epoch_, renewed.error().message);
    } else if (!*renewed) {
      on_lost(fmt::format("the leader lease of epoch {} was taken by a newer epoch", epoch_));
      return;
    } else {
      MutexLock lock(mu_);
      renewed_at_ = started;
    }
  }
}

void LeaderElection::WatchUntilStopped(const std::function<void(const std::string&)>& on_lapsed) {
  // The lease expires `duration` after its renewal reached the database, by the database's
  // clock; one renew interval less, counted from before the renewal was sent, leaves a margin
  // for the clocks' rates and for stopping.
  const auto trusted_for = std::chrono::milliseconds(options_.duration - options_.renew_every);
  MutexLock lock(mu_);
  while (!stopped_) {
    const auto until = renewed_at_ + trusted_for;
    if (std::chrono::steady_clock::now() >= until) {
      lapsed_ = true;
      lock.unlock();
      on_lapsed(
          fmt::format("the leader lease of epoch {} was not renewed for {} ms (the database "
                      "unreachable, or this process paused); it may expire before the next "
                      "renewal",
                      epoch_, trusted_for.count()));
      return;
    }
    wake_.wait_until(lock, until);
  }
}

void LeaderElection::Stop() {
  {
    MutexLock lock(mu_);
    if (stopped_) return;
    stopped_ = true;
  }
  wake_.notify_all();
  if (renewer_.joinable()) renewer_.join();
  if (watchdog_.joinable()) watchdog_.join();
  if (epoch_ > 0) {
    Status released = lease_->Release(epoch_);
    if (!released) spdlog::warn("leader lease: {}", released.error().message);
  }
}

}  // namespace drover::server
