#include "drover/testing/fake_runtime.h"

namespace drover::testing {

Status FakeRuntime::Launch(const model::LaunchSpec& spec) {
  MutexLock lock(mu_);
  if (block_launches_) {
    blocked_ = spec;
    waiting_.push_back(spec);
    launch_blocked_.notify_all();
    launch_released_.wait(lock, [this]() REQUIRES(mu_) { return !block_launches_; });
    std::erase_if(waiting_, [&](const model::LaunchSpec& s) { return s.key == spec.key; });
  }
  launched_.push_back(spec);
  if (auto it = job_launch_errors_.find(spec.key.job); it != job_launch_errors_.end()) {
    return tl::unexpected(it->second);
  }
  if (launch_error_) return tl::unexpected(*launch_error_);
  return OkStatus();
}

Status FakeRuntime::Stop(const model::WorkerKey& key, const model::StopRequest& request) {
  MutexLock lock(mu_);
  stopped_.emplace_back(key, request);
  return OkStatus();
}

std::vector<model::WorkerKey> FakeRuntime::Adopt(const std::vector<model::WorkerKey>&) {
  return {};
}

std::vector<model::WorkerEvent> FakeRuntime::Poll() {
  MutexLock lock(mu_);
  ++polls_;
  return std::exchange(events_, {});
}

int FakeRuntime::Polls() const {
  MutexLock lock(mu_);
  return polls_;
}

void FakeRuntime::Report(model::WorkerEvent event) {
  MutexLock lock(mu_);
  events_.push_back(std::move(event));
}

std::vector<model::LaunchSpec> FakeRuntime::Launched() const {
  MutexLock lock(mu_);
  return launched_;
}

std::vector<std::pair<model::WorkerKey, model::StopRequest>> FakeRuntime::Stopped() const {
  MutexLock lock(mu_);
  return stopped_;
}

void FakeRuntime::BlockLaunches() {
  MutexLock lock(mu_);
  block_launches_ = true;
  blocked_.reset();
}

model::LaunchSpec FakeRuntime::WaitForBlockedLaunch() {
  MutexLock lock(mu_);
  launch_blocked_.wait(lock, [this]() REQUIRES(mu_) { return blocked_.has_value(); });
  return *blocked_;
}

std::optional<std::vector<model::LaunchSpec>> FakeRuntime::WaitForBlockedLaunches(
    std::size_t count, std::chrono::milliseconds watchdog) {
  MutexLock lock(mu_);
  if (!launch_blocked_.wait_for(lock, watchdog,
                                [&]() REQUIRES(mu_) { return waiting_.size() >= count; })) {
    return std::nullopt;
  }
  return waiting_;
}

void FakeRuntime::ReleaseLaunches() {
  MutexLock lock(mu_);
  block_launches_ = false;
  launch_released_.notify_all();
}

void FakeRuntime::FailLaunches(Error error) {
  MutexLock lock(mu_);
  launch_error_ = std::move(error);
}

void FakeRuntime::FailLaunchesOf(JobId job, Error error) {
  MutexLock lock(mu_);
  job_launch_errors_.insert_or_assign(job, std::move(error));
}

}  // namespace drover::testing
