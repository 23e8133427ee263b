#include "drover/sched/autoscaler.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cmath>
#include <vector>

namespace drover::sched {
namespace {

// ceil(value / target) as a replica count, bounded so that a huge value cannot overflow.
std::int64_t ReplicasFor(double value, double target) {
  const double asked = std::ceil(std::max(0.0, value) / target);
  return static_cast<std::int64_t>(std::min(asked, static_cast<double>(model::kMaxReplicas)));
}

}  // namespace

AutoscaleDecision Autoscale(const AutoscaleInput& input) {
  AutoscaleDecision out{input.desired, input.state, false, ""};
  const int bounded = std::clamp(input.desired, input.min, input.max);
  auto take = [&](int desired, std::string reason) {
    out.desired = desired;
    out.state = AutoscaleState{};
    out.changed = desired != input.desired;
    if (out.changed) out.reason = fmt::format("{}: {} -> {}", reason, input.desired, desired);
    return out;
  };
  const model::AutoscalingSpec& spec = input.spec;
  if (!spec.enabled()) {
    return take(input.min, fmt::format("autoscaling off: replicas.min is {}", input.min));
  }
  const std::optional<model::LoadSignal>& signal = input.signal;
  const bool fresh = signal && input.now - signal->received_at <= kLoadSignalStaleMs &&
                     signal->received_at <= input.now;
  const bool load_known = fresh && spec.target_in_flight_per_replica > 0;
  const bool saturation_known = spec.saturation && input.saturation;
  const std::int64_t demand = fresh ? signal->in_flight + signal->waiting : 0;

  // At zero (min 0): only a request in flight or waiting starts a replica, at once.
  if (bounded == 0) {
    if (demand > 0) {
      return take(1, fmt::format("in flight {} + waiting {} at zero replicas: scale from zero",
                                 signal->in_flight, signal->waiting));
    }
    out.state = AutoscaleState{};
    return out;
  }
  if (!load_known && !saturation_known) {
    if (bounded != input.desired) {
      return take(bounded,
                  fmt::format("no recent load signal; kept within [{}, {}]", input.min, input.max));
    }
    out.state = AutoscaleState{};
    return out;
  }

  // Scale to zero: idle (nothing in flight, waiting or sent) for scale_to_zero_after.
  const bool idle = input.min == 0 && fresh && demand == 0 && signal->requests == 0 &&
                    input.saturation.value_or(0) <= 0;
  const TimeMs idle_since = !idle                         ? 0
                            : input.state.idle_since != 0 ? input.state.idle_since
                                                          : input.now;
  if (idle && input.now - idle_since >= spec.scale_to_zero_after_ms) {
    return take(0, fmt::format("no request for {} ms (scale_to_zero_after {} ms)",
                               input.now - idle_since, spec.scale_to_zero_after_ms));
  }

  std::int64_t asked = 0;
  std::vector<std::string> signals;
  if (load_known) {
    const std::int64_t load = signal->in_flight + signal->waiting;
    const std::int64_t w =
        ReplicasFor(static_cast<double>(load), spec.target_in_flight_per_replica);
    asked = std::max(asked, w);
    signals.push_back(fmt::format("in flight {} + waiting {} at target {} per replica asks for {}",
                                  signal->in_flight, signal->waiting,
                                  spec.target_in_flight_per_replica, w));
  }
  if (saturation_known) {
    const std::int64_t s = ReplicasFor(*input.saturation, spec.saturation->target_per_replica);
    asked = std::max(asked, s);
    signals.push_back(fmt::format("{} {} at target {} per replica asks for {}",
                                  spec.saturation->metric, *input.saturation,
                                  spec.saturation->target_per_replica, s));
  }
  const int lower = std::max(input.min, 1);
  const int wanted = static_cast<int>(std::clamp<std::int64_t>(asked, lower, input.max));
  const std::string why =
      fmt::format("{} (bounds [{}, {}])", fmt::join(signals, "; "), input.min, input.max);
  auto with_idle = [&](AutoscaleDecision decision) {
    decision.state.idle_since = idle_since;
    return decision;
  };
  // Asking for a change: it is taken once asked for the whole delay; meanwhile desired stays
  // within the bounds and the timer runs on.
  auto after_delay = [&](TimeMs since_before, DurationMs delay, bool up) {
    const TimeMs since = since_before != 0 ? since_before : input.now;
    if (input.now - since >= delay) return with_idle(take(wanted, why));
    AutoscaleDecision waiting = take(bounded, why);
    waiting.state = up ? AutoscaleState{since, 0, 0} : AutoscaleState{0, since, 0};
    return with_idle(waiting);
  };
  if (wanted > bounded) return after_delay(input.state.up_since, spec.scale_up_delay_ms, true);
  if (wanted < bounded) return after_delay(input.state.down_since, spec.scale_down_delay_ms, false);
  return with_idle(take(bounded, why));
}

}  // namespace drover::sched
