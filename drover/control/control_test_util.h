#pragma once

// Builders and a fixture for controller tests. Test-only; header-only so the library does not
// carry it.

#include <gtest/gtest.h>

#include <cstdint>
#include <string>
#include <variant>
#include <vector>

#include "drover/control/controller.h"
#include "drover/sched/sched_test_util.h"

namespace drover::control::testing {

using sched::testing::kGi;

// When a test's story begins.
inline constexpr TimeMs kT0 = 1'000'000;

// A node named `name` with `gpus` H100s of 80Gi, `cpu_millis` and `memory_bytes`; every GPU in
// `topology_group` ("": ungrouped).
inline model::Node GpuNode(const std::string& name, int gpus, std::int64_t cpu_millis = 64'000,
                           std::int64_t memory_bytes = 512 * kGi,
                           const std::string& topology_group = "") {
  model::Node node = sched::testing::MakeNode(name, gpus, "H100", cpu_millis, memory_bytes);
  for (model::Gpu& gpu : node.gpus) gpu.topology_group = topology_group;
  return node;
}

// A job `name` of `workers` workers, each with `gpus` GPUs, 1 CPU and 1Gi memory, in the
// default queue.
inline model::JobSpec Spec(const std::string& name, int gpus = 0, int workers = 1) {
  model::JobSpec spec;
  spec.name = name;
  spec.command = {"true"};
  spec.requirements.per_worker = {1000, 1 * kGi, gpus};
  spec.workers = spec.min_workers = workers;
  return spec;
}

// The same in `queue`.
inline model::JobSpec Spec(const std::string& name, const std::string& queue, int gpus,
                           int workers = 1) {
  model::JobSpec spec = Spec(name, gpus, workers);
  spec.queue = queue;
  return spec;
}

// The effects of type `E` (LaunchWorker, StopWorker) of `step`, in order.
template <typename E>
std::vector<E> EffectsOf(const Step& step) {
  std::vector<E> out;
  for (const Effect& effect : step.effects) {
    if (const auto* e = std::get_if<E>(&effect)) out.push_back(*e);
  }
  return out;
}

inline std::vector<LaunchWorker> Launches(const Step& step) {
  return EffectsOf<LaunchWorker>(step);
}

inline std::vector<StopWorker> Stops(const Step& step) { return EffectsOf<StopWorker>(step); }

inline model::WorkerEvent Started(JobId job, int attempt, int rank, TimeMs at) {
  return {{job, attempt, rank}, model::WorkerEvent::Kind::kStarted, at, {}};
}

// Worker (job, attempt, rank) exited with `code` at `at`.
inline model::WorkerEvent Exited(JobId job, int attempt, int rank, int code, TimeMs at) {
  model::ExitStatus exit;
  exit.exit_code = code;
  return {{job, attempt, rank}, model::WorkerEvent::Kind::kExited, at, exit};
}

// Worker (job, attempt, rank) killed by SIGTERM at `at`; the caller marks why (cancelled,
// timed_out).
inline model::WorkerEvent Killed(JobId job, int attempt, int rank, TimeMs at) {
  model::ExitStatus exit;
  exit.signal = 15;
  return {{job, attempt, rank}, model::WorkerEvent::Kind::kExited, at, exit};
}

// Worker (job, attempt, rank) stopped by SIGTERM at `at` to make room for another job, as its
// agent reports it after a preempting StopWorker.
inline model::WorkerEvent Preempted(JobId job, int attempt, int rank, TimeMs at) {
  model::WorkerEvent event = Killed(job, attempt, rank, at);
  event.exit.preempted = true;
  return event;
}

// A controller and the calls tests make of it, each answering with its Step.
class ControllerFixture : public ::testing::Test {
 protected:
  // Submits `specs` for alice under submission key `key`; the jobs' ids.
  std::vector<JobId> Submit(std::vector<model::JobSpec> specs, TimeMs now = kT0,
                            const std::string& key = "") {
    Step step;
    auto result = controller_.Submit(std::move(specs), key, "alice", now, step);
    EXPECT_TRUE(result) << result.error().ToString();
    return result->ids;
  }

  Step Schedule(TimeMs now) {
    Step step;
    controller_.Schedule(now, step);
    return step;
  }

  Step Event(const model::WorkerEvent& event) {
    Step step;
    controller_.OnWorkerEvent(event, step);
    return step;
  }

  model::JobState State(JobId id) { return controller_.Find(id)->state; }

  Controller controller_;
};

}  // namespace drover::control::testing
