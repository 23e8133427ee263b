#pragma once

// Templates and `if` conditions (docs/workflows.md, "Expressions and templates").
//
// A template is `${{ REF }}` (spaces inside the braces optional) where REF is one of
//   matrix.P             a parameter of the stage's matrix (P: IsIdentifier)
//   trial                the trial's 1-based index
//   stages.S.outputs.N   output N of upstream stage S (in a job file: job S)
// The parser replaces the first two; the controller replaces the third at launch.
//
// A condition is `OPERAND [OP OPERAND]`: an operand is a template, a number, a quoted string
// ('...' or "...", no escapes) or one of the words true and false; OP is ==, !=, <, <=, >, >=.
// Two operands that both read as numbers compare as numbers, others as text (== and != only).
// A lone operand holds when its value is "true" or a non-zero number.

#include <cstddef>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "drover/common/result.h"

namespace drover::workflow {

struct Reference {
  enum class Kind { kMatrix, kTrial, kStageOutput };
  Kind kind = Kind::kTrial;
  std::string param;       // kMatrix
  std::string stage;       // kStageOutput
  std::string output;      // kStageOutput
  std::string text;        // the whole template as written, "${{ matrix.lr }}"
  std::size_t offset = 0;  // of the template in the string

  friend bool operator==(const Reference&, const Reference&) = default;
};

// The templates in `text`, in order. kInvalidArgument for an unterminated `${{` or an unknown
// reference ("unknown reference 'stage.a' in ${{ stage.a }}; expected matrix.NAME, trial or
// stages.STAGE.outputs.NAME").
Result<std::vector<Reference>> FindReferences(std::string_view text);

// The value a reference stands for, or nullopt when it has none.
using Lookup = std::function<std::optional<std::string>(const Reference&)>;

// `text` with each template replaced by its value (values are not scanned again). A lookup that
// returns nullopt is kInvalidArgument naming the template ("no value for ${{ ... }}"). To keep a
// template in place, return its Reference::text.
Result<std::string> Render(std::string_view text, const Lookup& lookup);

enum class CompareOp { kEq, kNe, kLt, kLe, kGt, kGe };

struct Operand {
  enum class Kind { kTemplate, kLiteral };
  Kind kind = Kind::kLiteral;
  std::string text;  // kLiteral: the value (quotes removed); kTemplate: the template as written

  friend bool operator==(const Operand&, const Operand&) = default;
};

struct Condition {
  Operand lhs;
  std::optional<CompareOp> op;  // unset: a lone operand
  Operand rhs;

  friend bool operator==(const Condition&, const Condition&) = default;
};

// Parses a condition; kInvalidArgument with a message that names the problem and where
// ("expected an operator (==, !=, <, <=, >, >=) after '${{ ... }}', found 'is'").
Result<Condition> ParseCondition(std::string_view text);

// Evaluates `condition`, rendering templates with `lookup` (values trimmed of surrounding
// white space). kInvalidArgument for a missing value, or an ordering of non-numbers
// ("cannot compare 'abc' < '0.5': < needs two numbers").
Result<bool> Evaluate(const Condition& condition, const Lookup& lookup);
// ParseCondition, then Evaluate.
Result<bool> EvaluateCondition(std::string_view text, const Lookup& lookup);

// [A-Za-z_][A-Za-z0-9_]*: matrix parameter names (as in ${{ matrix.NAME }}).
bool IsIdentifier(std::string_view text);

// `text` as a finite number when all of it, apart from surrounding white space, reads as one
// ("0.5", "-3", "+2", "1e-3"); else nullopt.
std::optional<double> ParseNumber(std::string_view text);

}  // namespace drover::workflow
