#include "drover/sched/autoscaler.h"

#include <gtest/gtest.h>

namespace drover::sched {
namespace {

AutoscaleInput Input(int desired, std::int64_t in_flight, TimeMs now) {
  AutoscaleInput in;
  in.desired = desired;
  in.min = 1;
  in.max = 4;
  in.spec.target_in_flight_per_replica = 8;
  in.spec.scale_up_delay_ms = 10'000;
  in.spec.scale_down_delay_ms = 60'000;
  in.signal = model::LoadSignal{.in_flight = in_flight, .received_at = now};
  in.now = now;
  return in;
}

TEST(Autoscale, ScalesUpOnlyAfterTheUpDelay) {
  AutoscaleInput in = Input(1, 20, 1'000);
  AutoscaleDecision first = Autoscale(in);
  EXPECT_FALSE(first.changed);
  EXPECT_EQ(first.desired, 1);
  EXPECT_EQ(first.state.up_since, 1'000);
  in.state = first.state;
  in.now = in.signal->received_at = 10'999;
  EXPECT_FALSE(Autoscale(in).changed);
  in.now = in.signal->received_at = 11'000;
  AutoscaleDecision up = Autoscale(in);
  EXPECT_TRUE(up.changed);
  EXPECT_EQ(up.desired, 3);  // ceil(20 / 8)
  EXPECT_EQ(up.state, AutoscaleState{});
  EXPECT_NE(up.reason.find("in flight 20"), std::string::npos) << up.reason;
  EXPECT_NE(up.reason.find("1 -> 3"), std::string::npos) << up.reason;
}

TEST(Autoscale, ExactlyAtTargetKeepsTheCount) {
  AutoscaleInput in = Input(2, 16, 1'000);
  AutoscaleDecision d = Autoscale(in);
  EXPECT_FALSE(d.changed);
  EXPECT_EQ(d.state, AutoscaleState{});
  in.signal->in_flight = 17;  // one over: asks for 3
  EXPECT_EQ(Autoscale(in).state.up_since, 1'000);
}

TEST(Autoscale, NeverExceedsMaxNorGoesBelowMin) {
  AutoscaleInput in = Input(1, 1'000, 1'000);
  in.spec.scale_up_delay_ms = 0;
  EXPECT_EQ(Autoscale(in).desired, 4);
  in = Input(3, 0, 1'000);
  in.spec.scale_down_delay_ms = 0;
  EXPECT_EQ(Autoscale(in).desired, 1);
}

TEST(Autoscale, ScalesDownOnlyAfterTheDownDelay) {
  AutoscaleInput in = Input(4, 8, 1'000);
  AutoscaleDecision first = Autoscale(in);
  EXPECT_FALSE(first.changed);
  EXPECT_EQ(first.state.down_since, 1'000);
  in.state = first.state;
  in.now = in.signal->received_at = 60'999;
  EXPECT_FALSE(Autoscale(in).changed);
  in.now = in.signal->received_at = 61'000;
  AutoscaleDecision down = Autoscale(in);
  EXPECT_EQ(down.desired, 1);
  EXPECT_TRUE(down.changed);
}

TEST(Autoscale, ALoadDipRestartsTheUpTimer) {
  AutoscaleInput in = Input(1, 20, 1'000);
  in.state = Autoscale(in).state;
  in.now = in.signal->received_at = 5'000;
  in.signal->in_flight = 8;  // back at target: the request for more is withdrawn
  in.state = Autoscale(in).state;
  EXPECT_EQ(in.state, AutoscaleState{});
  in.now = in.signal->received_at = 12'000;
  in.signal->in_flight = 20;
  AutoscaleDecision d = Autoscale(in);
  EXPECT_FALSE(d.changed);
  EXPECT_EQ(d.state.up_since, 12'000);
}

TEST(Autoscale, AStaleOrMissingSignalNeverScalesDown) {
  AutoscaleInput in = Input(4, 0, 1'000);
  in.spec.scale_down_delay_ms = 0;
  in.now = 1'000 + kLoadSignalStaleMs + 1;
  AutoscaleDecision stale = Autoscale(in);
  EXPECT_FALSE(stale.changed);
  EXPECT_EQ(stale.desired, 4);
  in.signal.reset();
  EXPECT_FALSE(Autoscale(in).changed);
  in.now = 1'000 + kLoadSignalStaleMs;  // at the bound: still fresh
  in.signal = model::LoadSignal{.received_at = 1'000};
  EXPECT_EQ(Autoscale(in).desired, 1);
}

TEST(Autoscale, KeepsDesiredWithinChangedBoundsAtOnce) {
  AutoscaleInput in = Input(6, 0, 1'000);
  in.signal.reset();
  AutoscaleDecision d = Autoscale(in);
  EXPECT_EQ(d.desired, 4);
  EXPECT_TRUE(d.changed);
  in.desired = 0;
  EXPECT_EQ(Autoscale(in).desired, 1);
}

TEST(Autoscale, OffMeansMin) {
  AutoscaleInput in = Input(3, 100, 1'000);
  in.spec.target_in_flight_per_replica = 0;
  EXPECT_EQ(Autoscale(in).desired, 1);
}

TEST(Autoscale, ScalesToZeroOnlyAfterTheIdleDelayWithNoRequestAtAll) {
  AutoscaleInput in = Input(2, 0, 1'000);
  in.min = 0;
  in.spec.scale_down_delay_ms = 0;
  in.spec.scale_to_zero_after_ms = 30'000;
  in.signal->requests = 3;  // nothing in flight, but requests were sent in the window
  AutoscaleDecision busy = Autoscale(in);
  EXPECT_EQ(busy.desired, 1) << "min 0 scales down to one replica while requests come";
  EXPECT_EQ(busy.state.idle_since, 0);
  in.desired = 1;
  in.signal->requests = 0;
  AutoscaleDecision quiet = Autoscale(in);
  EXPECT_FALSE(quiet.changed);
  EXPECT_EQ(quiet.state.idle_since, 1'000);
  in.state = quiet.state;
  in.now = in.signal->received_at = 30'999;
  EXPECT_FALSE(Autoscale(in).changed);
  in.now = in.signal->received_at = 31'000;
  AutoscaleDecision zero = Autoscale(in);
  EXPECT_EQ(zero.desired, 0);
  EXPECT_NE(zero.reason.find("no request for 30000 ms"), std::string::npos) << zero.reason;
}

TEST(Autoscale, AnyRequestRestartsTheIdleDelay) {
  AutoscaleInput in = Input(1, 0, 1'000);
  in.min = 0;
  in.spec.scale_to_zero_after_ms = 30'000;
  in.state = Autoscale(in).state;
  in.now = in.signal->received_at = 20'000;
  in.signal->requests = 1;
  in.state = Autoscale(in).state;
  EXPECT_EQ(in.state.idle_since, 0);
  in.now = in.signal->received_at = 40'000;
  in.signal->requests = 0;
  AutoscaleDecision d = Autoscale(in);
  EXPECT_FALSE(d.changed);
  EXPECT_EQ(d.state.idle_since, 40'000);
}

TEST(Autoscale, AWaitingRequestScalesFromZeroAtOnceWhateverTheUpDelay) {
  AutoscaleInput in = Input(0, 0, 1'000);
  in.min = 0;
  in.spec.scale_up_delay_ms = 60'000;
  EXPECT_FALSE(Autoscale(in).changed) << "no demand keeps zero";
  in.signal.reset();
  EXPECT_FALSE(Autoscale(in).changed) << "no signal keeps zero";
  in.signal = model::LoadSignal{.waiting = 1, .received_at = 1'000};
  AutoscaleDecision d = Autoscale(in);
  EXPECT_TRUE(d.changed);
  EXPECT_EQ(d.desired, 1);
  EXPECT_NE(d.reason.find("waiting 1 at zero replicas"), std::string::npos) << d.reason;
  in.now = 1'000 + kLoadSignalStaleMs + 1;  // a stale report of demand starts nothing
  EXPECT_FALSE(Autoscale(in).changed);
}

TEST(Autoscale, SaturationAsksForReplicasByItsTargetAndTheLargerSignalWins) {
  AutoscaleInput in = Input(1, 4, 1'000);  // in flight asks for 1
  in.spec.scale_up_delay_ms = 0;
  in.spec.saturation = model::SaturationSpec{.target_per_replica = 2};
  in.saturation = 5.0;  // ceil(5 / 2) = 3
  AutoscaleDecision d = Autoscale(in);
  EXPECT_EQ(d.desired, 3);
  EXPECT_NE(d.reason.find("vllm:num_requests_waiting 5 at target 2 per replica asks for 3"),
            std::string::npos)
      << d.reason;
  in.signal->in_flight = 32;  // asks for 4, the max
  EXPECT_EQ(Autoscale(in).desired, 4);
}

TEST(Autoscale, SaturationAloneScalesAndItsAbsenceIsUnknown) {
  AutoscaleInput in = Input(3, 0, 1'000);
  in.signal.reset();
  in.spec.target_in_flight_per_replica = 0;
  in.spec.scale_up_delay_ms = 0;
  in.spec.scale_down_delay_ms = 0;
  in.spec.saturation = model::SaturationSpec{.target_per_replica = 4};
  EXPECT_FALSE(Autoscale(in).changed) << "no scrape yet: unknown, never scales down";
  in.saturation = 0.0;
  EXPECT_EQ(Autoscale(in).desired, 1);
  in.saturation = 1e300;  // bounded, no overflow
  EXPECT_EQ(Autoscale(in).desired, 4);
}

}  // namespace
}  // namespace drover::sched
