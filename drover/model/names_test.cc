// The name tables: NameTable's lookups, and the spellings the model's enums are stored, sent and
// parsed under (changing one breaks stored snapshots, the API and spec files).

#include "drover/model/names.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "drover/model/cron.h"
#include "drover/model/decision.h"
#include "drover/model/executor.h"
#include "drover/model/job.h"
#include "drover/model/job_spec.h"
#include "drover/model/launch.h"
#include "drover/model/node.h"
#include "drover/model/policy.h"
#include "drover/model/resources.h"

namespace drover::model {
namespace {

using ::testing::ElementsAre;

enum class Color { kRed, kDarkGreen };
constexpr NameTable kColorNames{std::array{
    NameEntry{Color::kRed, "red"},
    NameEntry{Color::kDarkGreen, "dark-green"},
}};

TEST(NameTable, NamesParsesAndListsInDeclarationOrder) {
  static_assert(kColorNames.Name(Color::kDarkGreen) == "dark-green");
  static_assert(kColorNames.Parse("red") == Color::kRed);
  EXPECT_EQ(kColorNames.Parse("Red"), std::nullopt);
  EXPECT_EQ(kColorNames.Parse(""), std::nullopt);
  EXPECT_EQ(kColorNames.Name(static_cast<Color>(7)), "?");
  EXPECT_THAT(kColorNames.Choices(), ElementsAre("red", "dark-green"));
  EXPECT_EQ(kColorNames.ChoiceList(), "red, dark-green");
  EXPECT_THAT(kColorNames.Values(), ElementsAre(Color::kRed, Color::kDarkGreen));
}

TEST(NameTables, KeepTheStoredSpellings) {
  EXPECT_EQ(kJobStateNames.ChoiceList(),
            "pending, ready, admitted, placed, starting, running, succeeded, failed, cancelled, "
            "timed_out, waiting, skipped");
  EXPECT_EQ(kWorkerStateNames.ChoiceList(), "assigned, launched, running, exited");
  EXPECT_EQ(kFailureKindNames.ChoiceList(), "exit, node_lost, preempted, timeout");
  EXPECT_EQ(kDependencyConditionNames.ChoiceList(), "succeeded, failed, done, skipped");
  EXPECT_EQ(kPipelineAdmissionNames.ChoiceList(), "stagewise, whole");
  EXPECT_EQ(kConcurrencyPolicyNames.ChoiceList(), "allow, forbid, replace");
  EXPECT_EQ(kDecisionKindNames.ChoiceList(), "placed, reserved, preempted, evicted, scaled");
  EXPECT_EQ(kExecutorKindNames.ChoiceList(), "local, slurm, kubernetes");
  EXPECT_EQ(kGpuSharingNames.ChoiceList(), "exclusive, timeslice, mig");
  EXPECT_EQ(kTaintEffectNames.ChoiceList(), "NoSchedule, PreferNoSchedule, NoExecute");
  EXPECT_EQ(kTolerationOperatorNames.ChoiceList(), "Equal, Exists");
  EXPECT_EQ(kWorkerEventKindNames.ChoiceList(), "started, exited, checkpoint");
  EXPECT_EQ(kScoringNames.ChoiceList(),
            "binpack, spread, fragmentation, random, best-fit, dot-product, gpu-packing, "
            "gpu-clustering");
  EXPECT_EQ(kQueueOrderNames.ChoiceList(), "fair-share, fifo, sjf, las");
}

TEST(NameTables, NameFunctionsReadTheTables) {
  EXPECT_EQ(JobStateName(JobState::kTimedOut), "timed_out");
  EXPECT_EQ(ParseJobState("waiting"), JobState::kWaiting);
  EXPECT_EQ(ParseJobState("timed-out"), std::nullopt);
  EXPECT_EQ(ParseWorkerState("launched"), WorkerState::kLaunched);
  EXPECT_EQ(FailureKindName(FailureKind::kNodeLost), "node_lost");
  EXPECT_EQ(ParseDependencyCondition("done"), DependencyCondition::kDone);
  EXPECT_EQ(ParseConcurrencyPolicy("replace"), ConcurrencyPolicy::kReplace);
  EXPECT_EQ(DecisionKindName(Decision::Kind::kEvicted), "evicted");
  EXPECT_EQ(ParseExecutorKind("kubernetes"), ExecutorKind::kKubernetes);
  EXPECT_EQ(ParseGpuSharing("timeslice"), GpuSharing::kTimeslice);
  EXPECT_EQ(ParseGpuSharing("MIG"), std::nullopt);
  EXPECT_EQ(ParseTaintEffect("PreferNoSchedule"), TaintEffect::kPreferNoSchedule);
  EXPECT_EQ(ParseTaintEffect("noschedule"), std::nullopt);
  EXPECT_EQ(ParseScoring("best-fit"), Scoring::kBestFit);
  EXPECT_EQ(ParseScoring("bestfit"), std::nullopt);
  EXPECT_EQ(QueueOrderName(QueueOrder::kFairShare), "fair-share");
  EXPECT_THAT(kQueueOrderNames.Values(), ElementsAre(QueueOrder::kFairShare, QueueOrder::kFifo,
                                                     QueueOrder::kSjf, QueueOrder::kLas));
  EXPECT_EQ(kTaintEffectNames.AlternativeList(), "NoSchedule, PreferNoSchedule or NoExecute");
  EXPECT_EQ(kTolerationOperatorNames.AlternativeList(), "Equal or Exists");
}

TEST(IsTerminal, HoldsForTheFinishedStatesSkippedIncluded) {
  std::vector<std::string> finished;
  for (JobState state : kJobStateNames.Values()) {
    if (IsTerminal(state)) finished.emplace_back(JobStateName(state));
  }
  EXPECT_THAT(finished, ElementsAre("succeeded", "failed", "cancelled", "timed_out", "skipped"));
}

}  // namespace
}  // namespace drover::model
