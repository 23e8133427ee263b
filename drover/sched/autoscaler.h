#pragma once

// The autoscaler of a service (docs/inference.md, "Autoscaling"): a pure function from the
// latest load signal, the current desired count, the bounds and the delays to the next desired
// count. No clock reads (now is passed in), no state of its own: what it remembers between calls
// (since when the signal has asked for a change) is in AutoscaleState, which the caller keeps.
//
// Algorithm: the signal asks for W = ceil((in_flight + waiting) / target) replicas, clamped to
// [min, max]. W > desired: once W has been asked for continuously for scale_up_delay, desired
// becomes W (the largest W seen during the delay is not remembered: the latest decides). W <
// desired: likewise after scale_down_delay. A missing or stale signal (older than
// kLoadSignalStaleMs, or none yet) is unknown: it never scales down (a gateway that stopped
// reporting says nothing about load) and clears both timers. Whatever the signal, desired is
// kept within [min, max] at once (a spec change).

#include <cstdint>
#include <optional>
#include <string>

#include "drover/common/clock.h"
#include "drover/model/service.h"

namespace drover::sched {

// A signal older than this is treated as unknown: a gateway posts about every second, so three
// missed reports mean it is gone or cut off.
inline constexpr DurationMs kLoadSignalStaleMs = 5 * kMillisPerSecond;

// Since when the signal has asked for more (up_since) or fewer (down_since) replicas than
// desired; 0 = not asking.
struct AutoscaleState {
  TimeMs up_since = 0;
  TimeMs down_since = 0;

  friend bool operator==(const AutoscaleState&, const AutoscaleState&) = default;
};

struct AutoscaleInput {
  int desired = 0;  // the current desired count
  int min = 0;
  int max = 1;
  model::AutoscalingSpec spec;              // target 0: autoscaling off, desired = min
  std::optional<model::LoadSignal> signal;  // the latest, if any
  AutoscaleState state;
  TimeMs now = 0;
};

struct AutoscaleDecision {
  int desired = 0;
  AutoscaleState state;
  bool changed = false;  // desired != input.desired
  // Why, in one sentence naming the signal, e.g. "in flight 40 + waiting 3 over target 8 per
  // replica asks for 6 replicas (max 4): 2 -> 4"; empty when nothing changed.
  std::string reason;
};

AutoscaleDecision Autoscale(const AutoscaleInput& input);

}  // namespace drover::sched
