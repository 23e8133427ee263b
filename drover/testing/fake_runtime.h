#pragma once

// FakeRuntime: a WorkerRuntime that runs nothing. It records what it was asked to do and
// reports the events a test gives it.

#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <map>
#include <optional>
#include <utility>
#include <vector>

#include "drover/agent/runtime.h"
#include "drover/common/thread_annotations.h"

namespace drover::testing {

// Launch and Stop succeed and are recorded; Adopt adopts every worker (as a restarted server
// finds supervisors that outlived it); Poll returns the events given to Report since the last
// Poll. A test may make launches block until it releases them (what the plane does while a
// launch is in progress) or fail. Thread-safe: the plane calls it from its loop and its effects
// runner while the test reads, reports and releases.
class FakeRuntime final : public agent::WorkerRuntime {
 public:
  Status Launch(const model::LaunchSpec& spec) override EXCLUDES(mu_);
  Status Stop(const model::WorkerKey& key, const model::StopRequest& request) override
      EXCLUDES(mu_);
  // Adopts all of `keys`: returns none to relaunch.
  std::vector<model::WorkerKey> Adopt(const std::vector<model::WorkerKey>& keys) override;
  std::vector<model::WorkerEvent> Poll() override EXCLUDES(mu_);

  // Queues `event` for the next Poll.
  void Report(model::WorkerEvent event) EXCLUDES(mu_);
  // How many times Poll was called.
  int Polls() const EXCLUDES(mu_);
  // What Launch and Stop were called with, in order (a launch once it is no longer blocked).
  std::vector<model::LaunchSpec> Launched() const EXCLUDES(mu_);
  std::vector<std::pair<model::WorkerKey, model::StopRequest>> Stopped() const EXCLUDES(mu_);

  // From now on, each Launch waits, before it records anything, until ReleaseLaunches.
  void BlockLaunches() EXCLUDES(mu_);
  // Waits (without a deadline) until a Launch is waiting under BlockLaunches; returns its spec.
  model::LaunchSpec WaitForBlockedLaunch() EXCLUDES(mu_);
  // Waits until `count` launches are waiting under BlockLaunches at the same time and returns
  // their specs (in the order they arrived), or returns nullopt once `watchdog` has passed
  // (launches carried out one after another never get there: a test fails instead of hanging).
  std::optional<std::vector<model::LaunchSpec>> WaitForBlockedLaunches(
      std::size_t count, std::chrono::milliseconds watchdog) EXCLUDES(mu_);
  // Lets the waiting launches, and every later one, proceed.
  void ReleaseLaunches() EXCLUDES(mu_);
  // From now on, each Launch is recorded and returns `error` (as a supervisor that cannot be
  // spawned).
  void FailLaunches(Error error) EXCLUDES(mu_);
  // The same for the launches of `job` only.
  void FailLaunchesOf(JobId job, Error error) EXCLUDES(mu_);

 private:
  mutable Mutex mu_;
  std::condition_variable_any launch_blocked_;   // blocked_ was set
  std::condition_variable_any launch_released_;  // block_launches_ was cleared
  std::vector<model::LaunchSpec> launched_ GUARDED_BY(mu_);
  std::vector<std::pair<model::WorkerKey, model::StopRequest>> stopped_ GUARDED_BY(mu_);
  std::vector<model::WorkerEvent> events_ GUARDED_BY(mu_);
  int polls_ GUARDED_BY(mu_) = 0;
  bool block_launches_ GUARDED_BY(mu_) = false;
  std::optional<model::LaunchSpec> blocked_ GUARDED_BY(mu_);  // the latest launch that waited
  std::vector<model::LaunchSpec> waiting_ GUARDED_BY(mu_);    // the launches waiting now
  std::optional<Error> launch_error_ GUARDED_BY(mu_);
  std::map<JobId, Error> job_launch_errors_ GUARDED_BY(mu_);
};

}  // namespace drover::testing
