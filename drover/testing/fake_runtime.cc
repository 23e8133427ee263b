#include "drover/testing/fake_runtime.h"

namespace drover::testing {

Status FakeRuntime::Launch(const model::LaunchSpec& spec) {
  std::lock_guard lock(mu_);
  launched_.push_back(spec);
  return OkStatus();
}

Status FakeRuntime::Stop(const model::WorkerKey& key, const model::StopRequest& request) {
  std::lock_guard lock(mu_);
  stopped_.emplace_back(key, request);
  return OkStatus();
}

std::vector<model::WorkerKey> FakeRuntime::Adopt(const std::vector<model::WorkerKey>&) {
  return {};
}

std::vector<model::WorkerEvent> FakeRuntime::Poll() {
  std::lock_guard lock(mu_);
  return std::exchange(events_, {});
}

void FakeRuntime::Report(model::WorkerEvent event) {
  std::lock_guard lock(mu_);
  events_.push_back(std::move(event));
}

std::vector<model::LaunchSpec> FakeRuntime::Launched() const {
  std::lock_guard lock(mu_);
  return launched_;
}

std::vector<std::pair<model::WorkerKey, model::StopRequest>> FakeRuntime::Stopped() const {
  std::lock_guard lock(mu_);
  return stopped_;
}

}  // namespace drover::testing
