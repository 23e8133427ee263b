#pragma once

// FakeRuntime: a WorkerRuntime that runs nothing. It records what it was asked to do and
// reports the events a test gives it.

#include <mutex>
#include <utility>
#include <vector>

#include "drover/agent/runtime.h"

namespace drover::testing {

// Launch and Stop succeed and are recorded; Adopt adopts every worker (as a restarted server
// finds supervisors that outlived it); Poll returns the events given to Report since the last
// Poll. Thread-safe: the plane calls it from its loop while the test reads and reports.
class FakeRuntime final : public agent::WorkerRuntime {
 public:
  Status Launch(const model::LaunchSpec& spec) override;
  Status Stop(const model::WorkerKey& key, const model::StopRequest& request) override;
  // Adopts all of `keys`: returns none to relaunch.
  std::vector<model::WorkerKey> Adopt(const std::vector<model::WorkerKey>& keys) override;
  std::vector<model::WorkerEvent> Poll() override;

  // Queues `event` for the next Poll.
  void Report(model::WorkerEvent event);
  // What Launch and Stop were called with, in order.
  std::vector<model::LaunchSpec> Launched() const;
  std::vector<std::pair<model::WorkerKey, model::StopRequest>> Stopped() const;

 private:
  mutable std::mutex mu_;
  std::vector<model::LaunchSpec> launched_;
  std::vector<std::pair<model::WorkerKey, model::StopRequest>> stopped_;
  std::vector<model::WorkerEvent> events_;
};

}  // namespace drover::testing
