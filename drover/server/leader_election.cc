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
                                  std::function<void(const std::string&)> on_lost) {
  epoch_ = epoch;
  renewer_ = std::thread([this, on_lost = std::move(on_lost)] {
    while (!WaitOrStopped()) {
      auto renewed = lease_->Renew(epoch_, options_.duration);
      if (!renewed) {
        spdlog::warn("leader lease epoch {}: {}; trying again", epoch_, renewed.error().message);
      } else if (!*renewed) {
        on_lost(fmt::format("the leader lease of epoch {} was taken by a newer epoch", epoch_));
        return;
      }
    }
  });
}

void LeaderElection::Stop() {
  {
    MutexLock lock(mu_);
    if (stopped_) return;
    stopped_ = true;
  }
  wake_.notify_all();
  if (renewer_.joinable()) renewer_.join();
  if (epoch_ > 0) {
    Status released = lease_->Release(epoch_);
    if (!released) spdlog::warn("leader lease: {}", released.error().message);
  }
}

}  // namespace drover::server
