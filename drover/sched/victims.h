#pragma once

// Preemption's choice of victims (engine.h, step 4) as a pure function: which running jobs a
// blocked job stops to make room, and what each loses. The engine supplies the policy (which
// running job the preemptor may take from, and whether a set of victims frees enough) as two
// predicates; the rules every victim obeys and the order of choice live here.

#include <functional>
#include <optional>
#include <span>
#include <vector>

#include "drover/common/clock.h"
#include "drover/sched/engine.h"

namespace drover::sched {

// Why the preemptor may take a running job's resources (model::Decision::reason).
enum class VictimReason {
  kPriority,  // a lower priority (or a later LAS queue) in the preemptor's own leaf queue
  kReclaim,   // another queue borrowing what the preemptor's queue lent
};

struct Victim {
  const RunningJob* job = nullptr;  // points into SelectVictims' `running`
  double lost_gpu_seconds = 0.0;    // LostGpuSeconds(*job, now)
  VictimReason reason = VictimReason::kPriority;
};

struct VictimSelection {
  int candidates = 0;           // running jobs that could have been victims
  std::vector<Victim> victims;  // the chosen set, cheapest first; empty when none suffices
};

struct VictimRules {
  TimeMs now = 0;
  DurationMs min_run_time = 0;  // model::Policy::min_run_time
  // Why the preemptor may take `job`'s resources, or nullopt if it may not (another queue not
  // borrowing, an equal or higher priority, already stopping). Asked only about jobs that pass
  // SelectVictims' own rules. Required.
  std::function<std::optional<VictimReason>(const RunningJob& job)> reason;
  // True if the preemptor would be admitted and fit once `victims` have released what they
  // hold. Called first with growing prefixes of the cheapest-first order (each one victim
  // longer than the last), then with subsets of the set found. Required.
  std::function<bool(std::span<const RunningJob* const> victims)> frees_enough;
};

// True if `job` passes the rules every victim obeys, whatever the policy: interruptible, with
// placed workers, and run longer than 0 ms and at least `min_run_time` by `now` (below).
bool MayBeVictim(const RunningJob& job, TimeMs now, DurationMs min_run_time);

// Chooses victims among `running`.
//
// A candidate is a running job that is interruptible (spec->interruptible), holds placed
// workers (an external job never is one), has run longer than 0 ms and at least
// rules.min_run_time by rules.now (so a job started at this very instant is never a victim,
// whatever min_run_time says: otherwise a victim requeued and placed again at once could be
// preempted again at once, forever, without time passing), and for which rules.reason gives a
// reason.
//
// Ordering rule: candidates are taken cheapest first: the least work lost since their last
// checkpoint (LostGpuSeconds), then the lower priority, then the later start, then the lower
// job id; so equal inputs always give the same victims in the same order. Candidates are added
// in that order until rules.frees_enough holds; then victims it does not need are dropped, the
// costliest first, as long as the rest still frees enough (at least one victim stays).
//
// Returns the candidates' count and the victims kept, in the order above. When even every
// candidate together does not free enough (or there is no candidate), victims is empty: the
// preemptor preempts nothing. Pointers in the result point into `running`.
VictimSelection SelectVictims(std::span<const RunningJob> running, const VictimRules& rules);

// GPU-seconds a running job loses if stopped now: its GPUs (charge->amounts["gpu"] in
// milli-GPUs; none without a charge) times the time since its last checkpoint (or its start).
double LostGpuSeconds(const RunningJob& job, TimeMs now);

}  // namespace drover::sched
