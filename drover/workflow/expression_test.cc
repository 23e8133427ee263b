#include "drover/workflow/expression.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <map>

namespace drover::workflow {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

// Values for the references of these tests; others have none.
std::optional<std::string> Values(const Reference& ref) {
  static const std::map<std::string, std::string> kOutputs = {{"train.accuracy", "0.93\n"},
                                                              {"train.model", "/out/model-2"},
                                                              {"check.ok", "true"},
                                                              {"check.label", "cat"},
                                                              {"check.zero", "0"}};
  switch (ref.kind) {
    case Reference::Kind::kMatrix:
      if (ref.param == "lr") return "0.01";
      return std::nullopt;
    case Reference::Kind::kTrial:
      return "3";
    case Reference::Kind::kStageOutput:
      if (auto it = kOutputs.find(ref.stage + "." + ref.output); it != kOutputs.end()) {
        return it->second;
      }
      return std::nullopt;
  }
  return std::nullopt;
}

TEST(Expression, FindsReferences) {
  auto refs =
      FindReferences("--lr ${{ matrix.lr }} out-${{trial}} ${{  stages.pre-1.outputs.data }}");
  ASSERT_TRUE(refs) << refs.error().ToString();
  ASSERT_EQ(refs->size(), 3u);
  EXPECT_EQ((*refs)[0].kind, Reference::Kind::kMatrix);
  EXPECT_EQ((*refs)[0].param, "lr");
  EXPECT_EQ((*refs)[0].text, "${{ matrix.lr }}");
  EXPECT_EQ((*refs)[0].offset, 5u);
  EXPECT_EQ((*refs)[1].kind, Reference::Kind::kTrial);
  EXPECT_EQ((*refs)[2].kind, Reference::Kind::kStageOutput);
  EXPECT_EQ((*refs)[2].stage, "pre-1");
  EXPECT_EQ((*refs)[2].output, "data");
  EXPECT_THAT(*FindReferences("no templates, $HOME and {{ x }}"), ElementsAre());
}

TEST(Expression, ReportsMalformedReferences) {
  EXPECT_EQ(FindReferences("a ${{ matrix.lr").error().message,
            "unterminated template '${{ matrix.lr': close it with }}");
  EXPECT_EQ(FindReferences("${{ stage.a.outputs.b }}").error().message,
            "unknown reference 'stage.a.outputs.b' in ${{ stage.a.outputs.b }}; expected "
            "matrix.NAME, trial or stages.STAGE.outputs.NAME");
  EXPECT_EQ(FindReferences("${{ stages.a.output.b }}").error().message,
            "expected stages.STAGE.outputs.NAME in ${{ stages.a.output.b }}, found "
            "'stages.a.output.b'");
  EXPECT_THAT(FindReferences("${{ matrix.1x }}").error().message,
              HasSubstr("invalid parameter name '1x'"));
}

TEST(Expression, RendersAndKeepsWhatTheLookupKeeps) {
  EXPECT_EQ(*Render("lr=${{ matrix.lr }} t=${{ trial }}", Values), "lr=0.01 t=3");
  // At parse time stage outputs stay for the launch.
  auto keep_stages = [](const Reference& ref) -> std::optional<std::string> {
    if (ref.kind == Reference::Kind::kStageOutput) return ref.text;
    return Values(ref);
  };
  EXPECT_EQ(*Render("${{ stages.x.outputs.y }}/${{ trial }}", keep_stages),
            "${{ stages.x.outputs.y }}/3");
  EXPECT_EQ(Render("${{ matrix.bs }}", Values).error().message, "no value for ${{ matrix.bs }}");
}

bool Eval(std::string_view text) {
  Result<bool> r = EvaluateCondition(text, Values);
  EXPECT_TRUE(r) << text << ": " << r.error().message;
  return r.value_or(false);
}

std::string EvalError(std::string_view text) {
  Result<bool> r = EvaluateCondition(text, Values);
  EXPECT_FALSE(r) << text;
  return r ? "" : r.error().message;
}

TEST(Expression, EvaluatesConditions) {
  EXPECT_TRUE(Eval("${{ stages.train.outputs.accuracy }} >= 0.9"));
  EXPECT_FALSE(Eval("${{ stages.train.outputs.accuracy }}>0.95"));
  EXPECT_TRUE(Eval("${{ stages.train.outputs.accuracy }} == 0.930"));  // numerically
  EXPECT_TRUE(Eval("${{ stages.check.outputs.label }} == 'cat'"));
  EXPECT_TRUE(Eval("${{ stages.check.outputs.label }} != \"dog\""));
  EXPECT_TRUE(Eval("${{ stages.check.outputs.ok }}"));
  EXPECT_FALSE(Eval("${{ stages.check.outputs.zero }}"));
  EXPECT_FALSE(Eval("${{ stages.check.outputs.label }}"));
  EXPECT_TRUE(Eval("${{ trial }} < 4"));
  EXPECT_TRUE(Eval("true"));
  EXPECT_FALSE(Eval("false"));
  EXPECT_TRUE(Eval("-1 <= +2"));
}

TEST(Expression, ReportsConditionErrors) {
  EXPECT_EQ(EvalError(""), "the condition is empty");
  EXPECT_EQ(EvalError("${{ trial }} = 3"), "'=' is not an operator; write == to compare");
  EXPECT_EQ(EvalError("${{ trial }} is 3"),
            "expected an operator (==, !=, <, <=, >, >=) after '${{ trial }}', found 'is 3'");
  EXPECT_EQ(EvalError("${{ trial }} <"), "expected an operand after '<'");
  EXPECT_EQ(EvalError("accuracy > 3"),
            "expected a template ${{ ... }}, a number, a quoted string, true or false, found "
            "'accuracy > 3'");
  EXPECT_EQ(EvalError("1 < 2 < 3"),
            "unexpected '< 3' after the comparison; a condition compares two operands");
  EXPECT_EQ(EvalError("'abc < 2"), "unterminated string 'abc < 2: close it with '");
  EXPECT_EQ(EvalError("${{ stages.check.outputs.label }} < 0.5"),
            "cannot compare 'cat' < '0.5': < needs two numbers");
  EXPECT_EQ(EvalError("${{ stages.gone.outputs.x }} > 1"),
            "no value for ${{ stages.gone.outputs.x }}");
}

TEST(Expression, ParsesNumbersStrictly) {
  EXPECT_EQ(ParseNumber("0.5"), 0.5);
  EXPECT_EQ(ParseNumber(" 1e-3\n"), 1e-3);
  EXPECT_EQ(ParseNumber("+2"), 2);
  for (std::string_view bad : {"", "1.2.3", "inf", "nan", "0x10", "+-1", "++1", "1 2", "-"}) {
    EXPECT_EQ(ParseNumber(bad), std::nullopt) << bad;
  }
}

}  // namespace
}  // namespace drover::workflow
