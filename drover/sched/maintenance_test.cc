// Maintenance windows and cordons (maintenance.h) in the engine: placement, backfill, the EASY
// reservation and the start-time projection.

#include "drover/sched/maintenance.h"

#include <gtest/gtest.h>

#include "drover/sched/engine.h"
#include "drover/sched/engine_test_util.h"
#include "drover/sched/estimate.h"
#include "drover/sched/sched_test_util.h"

namespace drover::sched {
namespace {

using testing::kHour;
using testing::kMinute;
using testing::MakeJob;
using testing::MakeNode;
using testing::Pending;
using testing::PlacedIds;
using testing::VerdictOf;
using testing::World;

model::JobSpec Limited(int gpus, std::optional<DurationMs> timeout) {
  model::JobSpec spec = MakeJob(gpus);
  spec.timeout = timeout;
  return spec;
}

TEST(RunsInto, AJobRunsIntoAWindowItWouldStillRunAt) {
  const NodeWindow window{NodeId("n1"), 2 * kHour, 3 * kHour};
  EXPECT_FALSE(RunsInto(window, 0, kHour));                 // ends before it begins
  EXPECT_FALSE(RunsInto(window, kHour, kHour));             // ends exactly as it begins
  EXPECT_TRUE(RunsInto(window, kHour, kHour + 1));          // one millisecond into it
  EXPECT_TRUE(RunsInto(window, 0, std::nullopt));           // no time limit: it may run forever
  EXPECT_TRUE(RunsInto(window, 2 * kHour, kMinute));        // starts inside it
  EXPECT_FALSE(RunsInto(window, 3 * kHour, std::nullopt));  // the window is over
  const NodeWindow cordon{NodeId("n1"), 0, kNeverEnds};
  EXPECT_TRUE(RunsInto(cordon, 5 * kHour, kMinute));
  // A window far ahead does not overflow start + limit.
  EXPECT_FALSE(RunsInto(NodeWindow{NodeId("n1"), kNeverEnds - 1, kNeverEnds}, kHour, kHour));
}

TEST(Maintenance, OnlyJobsThatEndBeforeTheWindowArePlacedOnItsNode) {
  World world(model::Policy{});
  world.AddNode(MakeNode("n1", 8));
  world.maintenance() = {NodeWindow{NodeId("n1"), 2 * kHour, 4 * kHour}};
  const auto& short_job = world.Spec(Limited(2, kHour), "default");
  const auto& long_job = world.Spec(Limited(2, 3 * kHour), "default");
  const auto& endless = world.Spec(Limited(2, std::nullopt), "default");
  CycleOutput out = world.Cycle(
      0, {Pending(1, short_job, 0, 0), Pending(2, long_job, 0, 1), Pending(3, endless, 0, 2)});
  EXPECT_EQ(PlacedIds(out), std::vector<JobId>{JobId(1)});
  ASSERT_NE(VerdictOf(out, 2), nullptr);
  ASSERT_NE(VerdictOf(out, 3), nullptr);
}

TEST(Maintenance, NothingIsPlacedDuringTheWindowAndEverythingAfterIt) {
  World world(model::Policy{});
  world.AddNode(MakeNode("n1", 8));
  world.maintenance() = {NodeWindow{NodeId("n1"), kHour, 2 * kHour}};
  const auto& short_job = world.Spec(Limited(1, kMinute), "default");
  EXPECT_TRUE(PlacedIds(world.Cycle(kHour + kMinute, {Pending(1, short_job, 0, 0)})).empty());
  const auto& endless = world.Spec(Limited(1, std::nullopt), "default");
  EXPECT_EQ(PlacedIds(world.Cycle(2 * kHour, {Pending(2, endless, 0, 0)})),
            std::vector<JobId>{JobId(2)});
}

TEST(Maintenance, ACordonIsAWindowThatNeverEndsAndOtherNodesStillTakeJobs) {
  World world(model::Policy{});
  world.AddNode(MakeNode("n1", 8));
  world.AddNode(MakeNode("n2", 8));
  world.maintenance() = {NodeWindow{NodeId("n1"), 0, kNeverEnds}};
  const auto& a = world.Spec(Limited(8, kMinute), "default");
  const auto& b = world.Spec(Limited(8, kMinute), "default");
  CycleOutput out = world.Cycle(0, {Pending(1, a, 0, 0), Pending(2, b, 0, 1)});
  ASSERT_EQ(out.placed.size(), 1u);
  EXPECT_EQ(out.placed[0].placement.workers[0].node, NodeId("n2"));
  const Verdict* held = VerdictOf(out, 2);
  ASSERT_NE(held, nullptr);
  EXPECT_NE(held->message.find("cordoned, taking no new jobs: n1"), std::string::npos)
      << held->message;
}

// Backfill: a job that fits now next to the reservation is still held off a node whose window
// it would run into, and the reservation is not made on a node its holder would run into a
// window on.
TEST(Maintenance, BackfillAndTheReservationAvoidTheWindow) {
  World world(model::Policy{});
  world.AddNode(MakeNode("n1", 8));
  world.AddNode(MakeNode("n2", 8));
  // n1: 6 GPUs busy for an hour; n2: 6 GPUs busy for two hours.
  world.Run(10, world.Spec(Limited(6, kHour), "default"), 0);
  world.Run(11, world.Spec(Limited(6, 2 * kHour), "default"), 0);
  // n1 goes into maintenance from 90 minutes to 5 hours.
  world.maintenance() = {NodeWindow{NodeId("n1"), 90 * kMinute, 5 * kHour}};
  model::JobSpec big_spec = Limited(8, kHour);
  const auto& big = world.Spec(big_spec, "default");
  // Without the window, big would reserve n1 at 1h; n1's window begins 30 minutes later, so its
  // reservation is n2 at 2h.
  const auto& backfill_short = world.Spec(Limited(2, 30 * kMinute), "default");
  const auto& backfill_long = world.Spec(Limited(2, 80 * kMinute), "default");
  CycleOutput out = world.Cycle(0, {Pending(1, big, 0, 0), Pending(2, backfill_long, 0, 1),
                                    Pending(3, backfill_short, 0, 2)});
  ASSERT_TRUE(out.reservation.has_value());
  EXPECT_EQ(out.reservation->start, 2 * kHour);
  EXPECT_EQ(out.reservation->nodes, std::vector<NodeId>{NodeId("n2")});
  // Job 2 (80 minutes) fits on n1 before its window (ends 1h20 < 1h30), outside the reservation.
  // Job 3 (30 minutes) backfills ahead of the reservation.
  std::vector<JobId> placed = PlacedIds(out);
  EXPECT_EQ(placed, (std::vector<JobId>{JobId(2), JobId(3)}));
  for (const PlacedJob& job : out.placed) {
    if (job.placement.job == JobId(2)) {
      EXPECT_EQ(job.placement.workers[0].node, NodeId("n1"));
    }
  }
}

TEST(Maintenance, ALongJobDoesNotBackfillOntoANodeWhoseWindowItWouldRunInto) {
  World world(model::Policy{});
  world.AddNode(MakeNode("n1", 8));
  world.Run(10, world.Spec(Limited(6, kHour), "default"), 0);
  world.maintenance() = {NodeWindow{NodeId("n1"), 3 * kHour, 4 * kHour}};
  const auto& fits_before = world.Spec(Limited(2, 2 * kHour), "default");
  const auto& runs_into = world.Spec(Limited(2, 4 * kHour), "default");
  CycleOutput out = world.Cycle(0, {Pending(1, runs_into, 0, 0), Pending(2, fits_before, 0, 1)});
  EXPECT_EQ(PlacedIds(out), std::vector<JobId>{JobId(2)});
}

TEST(Maintenance, TheEstimateWaitsForTheWindowToEnd) {
  World world(model::Policy{});
  world.AddNode(MakeNode("n1", 8));
  const std::vector<NodeWindow> windows = {NodeWindow{NodeId("n1"), 0, 3 * kHour}};
  const model::JobSpec spec = Limited(8, kHour);
  EstimateLayers layers;
  layers.maintenance = windows;
  StartEstimate estimate =
      EstimateStart(world.cluster(), world.running(), JobId(1), spec, kHour, layers);
  EXPECT_EQ(estimate.at, std::optional<TimeMs>(3 * kHour)) << estimate.basis;
}

}  // namespace
}  // namespace drover::sched
