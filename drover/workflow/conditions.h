#pragma once

// Dependency conditions (docs/workflows.md, "Dependency conditions"): whether a pending job
// waits, is released (towards waiting/ready) or is skipped, given its upstreams' states.
// Pure; the controller gathers the states and applies the verdict.

#include <span>
#include <string>
#include <vector>

#include "drover/model/job.h"
#include "drover/model/job_spec.h"

namespace drover::workflow {

// An upstream (a job, or a sweep stage judged as a whole) as a dependency sees it.
enum class UpstreamState {
  kUnfinished,
  kSucceeded,
  kFailed,  // failed, timed out or cancelled
  kSkipped,
};
// One job's state as an upstream.
UpstreamState StateOf(model::JobState state);

// A sweep stage's state from its trials' states: unfinished while any trial is not terminal;
// then succeeded when at least one trial succeeded (so trials cancelled by early stopping, which
// always follows a success, never count against it), skipped when every trial was skipped,
// failed otherwise. An empty span is unfinished (no trial known yet).
UpstreamState AggregateStage(std::span<const model::JobState> trial_states);

// True when `condition` holds for an upstream in `state` (which is terminal).
bool Holds(model::DependencyCondition condition, UpstreamState state);
// True when `condition` can no longer hold: the upstream is terminal and the condition does not
// hold for it (`done` never fails).
bool CannotHold(model::DependencyCondition condition, UpstreamState state);

// What a pending job waits for its upstream to do under `condition`: "succeed", "fail",
// "finish", "be skipped".
std::string_view AwaitedAs(model::DependencyCondition condition);

struct JudgedDependency {
  model::Dependency dependency;  // the name is the upstream job or stage
  UpstreamState upstream = UpstreamState::kUnfinished;
};

struct DependencyVerdict {
  enum class Kind {
    kWait,     // some upstream is unfinished, and every condition may still hold
    kRelease,  // every upstream is terminal and every condition holds
    kSkip,     // some condition can no longer hold; skip the job (terminal)
  };
  Kind kind = Kind::kWait;
  // kWait: "waiting for 'prep' to succeed, job 12 to finish" (the unfinished upstreams, each
  // with what it is awaited to do); kSkip: names the first failing dependency in order, e.g.
  // "dependency 'train' failed; this job needed it to succeed", "dependency job 12 succeeded; this
  // job needed it to fail"; kRelease: "".
  std::string reason;

  friend bool operator==(const DependencyVerdict&, const DependencyVerdict&) = default;
};

// Judges the dependencies of one job, in the order of its depends_on. A job is skipped as soon as
// one condition can no longer hold, even while other upstreams run: skipping then propagates
// down a pipeline without waiting. No dependencies: kRelease.
DependencyVerdict Judge(std::span<const JudgedDependency> dependencies);

}  // namespace drover::workflow
