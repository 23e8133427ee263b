#include "drover/testing/fake_runtime.h"

namespace drover::testing {

Status FakeRuntime::Launch(const model::LaunchSpec& spec) {
  MutexLock lock(mu_);
  if (block_launches_) {
    blocked_ = spec;
    launch_blocked_.notify_all();
    launch_released_.wait(lock, [this]() REQUIRES(mu_) { return !block_launches_; });
  }
  launched_.push_back(spec);
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
  return std::exchange(events_, {});
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

void FakeRuntime::ReleaseLaunches() {
  MutexLock lock(mu_);
  block_launches_ = false;
  launch_released_.notify_all();
}

void FakeRuntime::FailLaunches(Error error) {
  MutexLock lock(mu_);
  launch_error_ = std::move(error);
}

}  // namespace drover::testing
