#include "drover/sched/autoscaler.h"

#include <fmt/format.h>

#include <algorithm>

namespace drover::sched {

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
  if (input.spec.target_in_flight_per_replica <= 0) {
    return take(input.min, fmt::format("autoscaling off: replicas.min is {}", input.min));
  }
  const bool known = input.signal && input.now - input.signal->received_at <= kLoadSignalStaleMs &&
                     input.signal->received_at <= input.now;
  if (!known) {
    if (bounded != input.desired) {
      return take(bounded,
                  fmt::format("no recent load signal; kept within [{}, {}]", input.min, input.max));
    }
    out.state = AutoscaleState{};
    return out;
  }
  const std::int64_t load = input.signal->in_flight + input.signal->waiting;
  const std::int64_t target = input.spec.target_in_flight_per_replica;
  const std::int64_t asked = (load + target - 1) / target;
  const int wanted = static_cast<int>(std::clamp<std::int64_t>(asked, input.min, input.max));
  const std::string why = fmt::format(
      "in flight {} + waiting {} at target {} per replica asks for {} (bounds [{}, {}])",
      input.signal->in_flight, input.signal->waiting, target, asked, input.min, input.max);
  // Asking for a change: it is taken once asked for the whole delay; meanwhile desired stays
  // within the bounds and the timer runs on.
  auto after_delay = [&](TimeMs since_before, DurationMs delay, bool up) {
    const TimeMs since = since_before != 0 ? since_before : input.now;
    if (input.now - since >= delay) return take(wanted, why);
    AutoscaleDecision waiting = take(bounded, why);
    waiting.state = up ? AutoscaleState{since, 0} : AutoscaleState{0, since};
    return waiting;
  };
  if (wanted > bounded)
    return after_delay(input.state.up_since, input.spec.scale_up_delay_ms, true);
  if (wanted < bounded) {
    return after_delay(input.state.down_since, input.spec.scale_down_delay_ms, false);
  }
  return take(bounded, why);
}

}  // namespace drover::sched
