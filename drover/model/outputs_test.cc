#include "drover/model/outputs.h"

#include <gtest/gtest.h>

namespace drover::model {
namespace {

TEST(StagingPathFor, StagesBesideTheDestinationPerAttempt) {
  EXPECT_EQ(StagingPathFor("/data/out/model", JobId(7), 2),
            "/data/out/.drover-staging/job-7.attempt-2/model");
  EXPECT_EQ(StagingPathFor("/data/out/model/", JobId(7), 2),
            "/data/out/.drover-staging/job-7.attempt-2/model");
  EXPECT_EQ(StagingPathFor("model.pt", JobId(3), 1), "./.drover-staging/job-3.attempt-1/model.pt");
}

TEST(StagedOutputs, PathOutputsStageBesideTheirPathAndValuesUnderTheValueRoot) {
  JobSpec spec;
  spec.outputs = {OutputSpec{"model", "/data/out/model"}, OutputSpec{"accuracy", ""}};
  std::vector<StagedOutput> staged = StagedOutputs(spec, JobId(12), 3, "/srv/drover/outputs");
  ASSERT_EQ(staged.size(), 2u);
  EXPECT_EQ(staged[0], (StagedOutput{"model", "/data/out/.drover-staging/job-12.attempt-3/model",
                                     "/data/out/model"}));
  EXPECT_EQ(staged[1],
            (StagedOutput{"accuracy", "/srv/drover/outputs/job-12/attempt-3/accuracy", ""}));
}

TEST(OutputVariable, IsTheUpperCaseName) {
  EXPECT_EQ(OutputVariable("model_v2"), "DROVER_OUTPUT_MODEL_V2");
}

}  // namespace
}  // namespace drover::model
