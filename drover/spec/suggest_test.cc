#include "drover/spec/suggest.h"

#include <gtest/gtest.h>

namespace drover::spec {
namespace {

TEST(EditDistance, CountsInsertionsDeletionsSubstitutionsAndTranspositions) {
  EXPECT_EQ(EditDistance("gpus", "gpus"), 0u);
  EXPECT_EQ(EditDistance("gpu", "gpus"), 1u);
  EXPECT_EQ(EditDistance("gpsu", "gpus"), 1u);
  EXPECT_EQ(EditDistance("memroy", "memory"), 1u);
  EXPECT_EQ(EditDistance("", "abc"), 3u);
  EXPECT_EQ(EditDistance("kitten", "sitting"), 3u);
  EXPECT_EQ(EditDistance("Name", "name"), 0u);
}

TEST(Suggest, PicksTheClosestCandidateWithinTheLimit) {
  const std::vector<std::string> keys = {"cpu", "memory", "gpus", "gpu_memory", "gpu_model"};
  EXPECT_EQ(Suggest("gpu", keys), "gpus");
  EXPECT_EQ(Suggest("memroy", keys), "memory");
  EXPECT_EQ(Suggest("gpu_modle", keys), "gpu_model");
  EXPECT_EQ(Suggest("disk", keys), std::nullopt);
}

TEST(Suggest, BreaksTiesByCommonPrefix) {
  EXPECT_EQ(Suggest("gpu", {"cpu", "gpus"}), "gpus");
  EXPECT_EQ(Suggest("cpus", {"cpu", "gpus"}), "cpu");
}

TEST(Suggest, DoesNotSuggestForWordsShorterThanTheDistance) {
  EXPECT_EQ(Suggest("x", {"a", "b"}), std::nullopt);
  EXPECT_EQ(Suggest("ab", {"cd"}), std::nullopt);
}

TEST(DidYouMean, AsAnAsideAlwaysSaysWhatIsExpected) {
  const std::vector<std::string> goals = {"maximize", "minimize"};
  EXPECT_EQ(
      DidYouMean("maximise", goals, "expected maximize or minimize", HintForm::kAsideThenExpected),
      " (did you mean 'maximize'?); expected maximize or minimize");
  EXPECT_EQ(
      DidYouMean("best", goals, "expected maximize or minimize", HintForm::kAsideThenExpected),
      "; expected maximize or minimize");
}

TEST(DidYouMean, OtherwiseSaysWhatIsExpectedOnlyWithoutASuggestion) {
  const std::vector<std::string> params = {"lr", "batch"};
  EXPECT_EQ(
      DidYouMean("bacth", params, "the matrix has lr, batch", HintForm::kSuggestionOrExpected),
      "; did you mean 'batch'?");
  EXPECT_EQ(DidYouMean("seed", params, "the matrix has lr, batch", HintForm::kSuggestionOrExpected),
            "; the matrix has lr, batch");
  EXPECT_EQ(DidYouMean("seed", params, "", HintForm::kSuggestionOrExpected), "");
}

TEST(DidYouMean, SuggestsAnAliasOnlyWhenNoChoiceIsClose) {
  const std::vector<std::string> keys = {"command", "env"};
  const std::map<std::string, std::string> aliases = {{"cmd", "command"}, {"envs", "image"}};
  EXPECT_EQ(DidYouMean("cmd", keys, "expected one of: command, env",
                       HintForm::kSuggestionOrExpected, aliases),
            "; did you mean 'command'?");
  EXPECT_EQ(DidYouMean("envs", keys, "expected one of: command, env",
                       HintForm::kSuggestionOrExpected, aliases),
            "; did you mean 'env'?");
}

}  // namespace
}  // namespace drover::spec
