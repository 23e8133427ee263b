#pragma once

// The autoscaler of a service (docs/inference.md, "Autoscaling"): a pure function from the
// latest load signal, the current desired count, the bounds and the delays to the next desired
// count. No clock reads (now is passed in), no state of its own: what it remembers between calls
// (since when the signal has asked for a change) is in AutoscaleState, which the caller keeps.
//
// Algorithm: each known signal asks for a count: the gateway's load W = ceil((in_flight +
// waiting) / target_in_flight_per_replica), the backend saturation S = ceil(gauge summed over
// the replicas / saturation.target_per_replica); the larger, clamped to [min, max] (to
// [max(min, 1), max] while min is 0), is wanted. Wanted > desired: once it has been asked for
// continuously for scale_up_delay, desired becomes it (the largest seen during the delay is not
// remembered: the latest decides). Wanted < desired: likewise after scale_down_delay. A missing
// or stale load signal (older than kLoadSignalStaleMs, or none yet) and a missing saturation sum
// are unknown: without any known signal nothing scales down (a gateway that stopped reporting
// says nothing about load) and both timers clear. Whatever the signal, desired is kept within
// [min, max] at once (a spec change).
//
// Scale to zero (min 0): a fresh load signal with nothing in flight, waiting or sent in its
// window is idle; idle continuously for scale_to_zero_after, desired becomes 0. At zero, a
// fresh signal with a request in flight or waiting (the gateway buffers it) makes desired 1 at
// once, whatever scale_up_delay: a waiting request cannot be served until a replica exists.

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
  TimeMs idle_since = 0;  // since when the load signal has been idle (scale to zero)

  friend bool operator==(const AutoscaleState&, const AutoscaleState&) = default;
};

struct AutoscaleInput {
  int desired = 0;  // the current desired count
  int min = 0;
  int max = 1;
  model::AutoscalingSpec spec;              // not enabled(): autoscaling off, desired = min
  std::optional<model::LoadSignal> signal;  // the latest, if any
  // The saturation gauge summed over the replicas whose latest scrape is recent; unset when
  // none is (or the spec has no saturation).
  std::optional<double> saturation;
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
