#include "drover/model/hold_layer.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <string>

namespace drover::model {
namespace {

using ::testing::ElementsAre;

TEST(HoldLayerNames, EveryLayerRoundTripsThroughItsName) {
  for (const NameEntry<HoldLayer>& entry : kHoldLayerNames.entries()) {
    EXPECT_EQ(kHoldLayerNames.Name(entry.value), entry.name);
    EXPECT_EQ(kHoldLayerNames.Parse(entry.name), entry.value) << entry.name;
  }
}

// The names are part of the API (GET /v1/jobs/{id}/explain) and of scripts that read it.
TEST(HoldLayerNames, KeepTheSpellingsTheApiHasAlwaysShown) {
  EXPECT_THAT(kHoldLayerNames.Choices(),
              ElementsAre("held", "dependency", "pipeline", "inputs", "backoff", "queue", "quota",
                          "concurrency limit", "fair share", "reservation", "gang size", "topology",
                          "taint", "node fit", "preempting", "executor", "running", "finished"));
  EXPECT_EQ(kHoldLayerNames.Parse("node-fit"), std::nullopt);
  EXPECT_EQ(kHoldLayerNames.Parse("Quota"), std::nullopt);
}

}  // namespace
}  // namespace drover::model
