#include "drover/workflow/expression.h"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <charconv>
#include <cmath>

namespace drover::workflow {
namespace {

constexpr std::string_view kOpen = "${{";
constexpr std::string_view kClose = "}}";

bool IsSpace(char c) { return std::isspace(static_cast<unsigned char>(c)) != 0; }

std::string_view Trim(std::string_view s) {
  while (!s.empty() && IsSpace(s.front())) s.remove_prefix(1);
  while (!s.empty() && IsSpace(s.back())) s.remove_suffix(1);
  return s;
}

// The reference inside one template (`inner` is what lies between the braces).
Result<Reference> ParseReference(std::string_view inner, std::string_view whole) {
  Reference ref;
  ref.text = std::string(whole);
  const std::string_view body = Trim(inner);
  constexpr std::string_view kMatrix = "matrix.";
  constexpr std::string_view kStages = "stages.";
  constexpr std::string_view kOutputs = ".outputs.";
  if (body == "trial") {
    ref.kind = Reference::Kind::kTrial;
    return ref;
  }
  if (body.starts_with(kMatrix)) {
    ref.kind = Reference::Kind::kMatrix;
    ref.param = std::string(body.substr(kMatrix.size()));
    if (!IsIdentifier(ref.param)) {
      return InvalidArgument(fmt::format(
          "invalid parameter name '{}' in {}: use letters, digits and '_'", ref.param, whole));
    }
    return ref;
  }
  if (body.starts_with(kStages)) {
    const std::string_view rest = body.substr(kStages.size());
    const std::size_t at = rest.rfind(kOutputs);
    if (at == std::string_view::npos || at == 0 || at + kOutputs.size() == rest.size()) {
      return InvalidArgument(
          fmt::format("expected stages.STAGE.outputs.NAME in {}, found '{}'", whole, body));
    }
    ref.kind = Reference::Kind::kStageOutput;
    ref.stage = std::string(rest.substr(0, at));
    ref.output = std::string(rest.substr(at + kOutputs.size()));
    return ref;
  }
  return InvalidArgument(fmt::format(
      "unknown reference '{}' in {}; expected matrix.NAME, trial or stages.STAGE.outputs.NAME",
      body, whole));
}

// Reads the template that starts at text[pos] (which is "${{"); advances `pos` past it.
Result<Reference> ReadTemplate(std::string_view text, std::size_t& pos) {
  const std::size_t end = text.find(kClose, pos + kOpen.size());
  if (end == std::string_view::npos) {
    return InvalidArgument(
        fmt::format("unterminated template '{}': close it with }}}}", text.substr(pos)));
  }
  const std::string_view whole = text.substr(pos, end + kClose.size() - pos);
  Result<Reference> ref =
      ParseReference(text.substr(pos + kOpen.size(), end - pos - kOpen.size()), whole);
  if (ref) ref->offset = pos;
  pos = end + kClose.size();
  return ref;
}

std::string_view OpName(CompareOp op) {
  switch (op) {
    case CompareOp::kEq:
      return "==";
    case CompareOp::kNe:
      return "!=";
    case CompareOp::kLt:
      return "<";
    case CompareOp::kLe:
      return "<=";
    case CompareOp::kGt:
      return ">";
    case CompareOp::kGe:
      return ">=";
  }
  return "";
}

bool IsOperatorChar(char c) { return c == '=' || c == '!' || c == '<' || c == '>'; }

// A tokenizer for conditions.
class ConditionReader {
 public:
  explicit ConditionReader(std::string_view text) : text_(text) {}

  bool AtEnd() {
    SkipSpace();
    return pos_ == text_.size();
  }

  Result<Operand> ReadOperand(std::string_view after) {
    SkipSpace();
    if (pos_ == text_.size()) {
      return InvalidArgument(after.empty() ? std::string("the condition is empty")
                                           : fmt::format("expected an operand after '{}'", after));
    }
    const char c = text_[pos_];
    if (text_.substr(pos_).starts_with(kOpen)) {
      DROVER_ASSIGN_OR_RETURN(Reference ref, ReadTemplate(text_, pos_));
      return Operand{Operand::Kind::kTemplate, ref.text};
    }
    if (c == '\'' || c == '"') {
      const std::size_t end = text_.find(c, pos_ + 1);
      if (end == std::string_view::npos) {
        return InvalidArgument(
            fmt::format("unterminated string {}: close it with {}", text_.substr(pos_), c));
      }
      Operand operand{Operand::Kind::kLiteral, std::string(text_.substr(pos_ + 1, end - pos_ - 1))};
      pos_ = end + 1;
      return operand;
    }
    const std::size_t start = pos_;
    while (pos_ < text_.size() && !IsSpace(text_[pos_]) && !IsOperatorChar(text_[pos_])) ++pos_;
    const std::string_view word = text_.substr(start, pos_ - start);
    if (word.empty() || (!ParseNumber(word) && word != "true" && word != "false")) {
      pos_ = start;
      return InvalidArgument(fmt::format(
          "expected a template ${{{{ ... }}}}, a number, a quoted string, true or false, found "
          "'{}'",
          Rest()));
    }
    return Operand{Operand::Kind::kLiteral, std::string(word)};
  }

  Result<CompareOp> ReadOp(std::string_view after) {
    SkipSpace();
    static constexpr std::pair<std::string_view, CompareOp> kOps[] = {
        {"==", CompareOp::kEq}, {"!=", CompareOp::kNe}, {"<=", CompareOp::kLe},
        {">=", CompareOp::kGe}, {"<", CompareOp::kLt},  {">", CompareOp::kGt}};
    for (const auto& [name, op] : kOps) {
      if (text_.substr(pos_).starts_with(name)) {
        pos_ += name.size();
        return op;
      }
    }
    if (text_[pos_] == '=') {
      return InvalidArgument("'=' is not an operator; write == to compare");
    }
    return InvalidArgument(fmt::format(
        "expected an operator (==, !=, <, <=, >, >=) after '{}', found '{}'", after, Rest()));
  }

  std::string_view Rest() const { return text_.substr(pos_); }
  std::string_view Consumed() const { return Trim(text_.substr(0, pos_)); }

 private:
  void SkipSpace() {
    while (pos_ < text_.size() && IsSpace(text_[pos_])) ++pos_;
  }

  std::string_view text_;
  std::size_t pos_ = 0;
};

Result<std::string> ValueOf(const Operand& operand, const Lookup& lookup) {
  if (operand.kind == Operand::Kind::kLiteral) return operand.text;
  DROVER_ASSIGN_OR_RETURN(const std::string rendered, Render(operand.text, lookup));
  return std::string(Trim(rendered));
}

}  // namespace

Result<std::vector<Reference>> FindReferences(std::string_view text) {
  std::vector<Reference> refs;
  std::size_t pos = 0;
  while ((pos = text.find(kOpen, pos)) != std::string_view::npos) {
    DROVER_ASSIGN_OR_RETURN(Reference ref, ReadTemplate(text, pos));
    refs.push_back(std::move(ref));
  }
  return refs;
}

Result<std::string> Render(std::string_view text, const Lookup& lookup) {
  DROVER_ASSIGN_OR_RETURN(std::vector<Reference> refs, FindReferences(text));
  std::string out;
  std::size_t copied = 0;
  for (const Reference& ref : refs) {
    std::optional<std::string> value = lookup(ref);
    if (!value) return InvalidArgument(fmt::format("no value for {}", ref.text));
    out.append(text.substr(copied, ref.offset - copied));
    out += *value;
    copied = ref.offset + ref.text.size();
  }
  out.append(text.substr(copied));
  return out;
}

Result<Condition> ParseCondition(std::string_view text) {
  ConditionReader reader(text);
  Condition condition;
  DROVER_ASSIGN_OR_RETURN(condition.lhs, reader.ReadOperand(""));
  if (reader.AtEnd()) return condition;
  const std::string left(reader.Consumed());
  DROVER_ASSIGN_OR_RETURN(CompareOp op, reader.ReadOp(left));
  condition.op = op;
  DROVER_ASSIGN_OR_RETURN(condition.rhs, reader.ReadOperand(OpName(op)));
  if (!reader.AtEnd()) {
    return InvalidArgument(fmt::format(
        "unexpected '{}' after the comparison; a condition compares two operands", reader.Rest()));
  }
  return condition;
}

Result<bool> Evaluate(const Condition& condition, const Lookup& lookup) {
  DROVER_ASSIGN_OR_RETURN(std::string lhs, ValueOf(condition.lhs, lookup));
  if (!condition.op) {
    const std::optional<double> number = ParseNumber(lhs);
    return lhs == "true" || (number && *number != 0);
  }
  DROVER_ASSIGN_OR_RETURN(std::string rhs, ValueOf(condition.rhs, lookup));
  const std::optional<double> a = ParseNumber(lhs);
  const std::optional<double> b = ParseNumber(rhs);
  const CompareOp op = *condition.op;
  if (a && b) {
    switch (op) {
      case CompareOp::kEq:
        return *a == *b;
      case CompareOp::kNe:
        return *a != *b;
      case CompareOp::kLt:
        return *a < *b;
      case CompareOp::kLe:
        return *a <= *b;
      case CompareOp::kGt:
        return *a > *b;
      case CompareOp::kGe:
        return *a >= *b;
    }
  }
  if (op == CompareOp::kEq) return lhs == rhs;
  if (op == CompareOp::kNe) return lhs != rhs;
  return InvalidArgument(fmt::format("cannot compare '{}' {} '{}': {} needs two numbers", lhs,
                                     OpName(op), rhs, OpName(op)));
}

Result<bool> EvaluateCondition(std::string_view text, const Lookup& lookup) {
  DROVER_ASSIGN_OR_RETURN(Condition condition, ParseCondition(text));
  return Evaluate(condition, lookup);
}

bool IsIdentifier(std::string_view text) {
  if (text.empty() || std::isdigit(static_cast<unsigned char>(text[0]))) return false;
  return std::all_of(text.begin(), text.end(), [](char c) {
    return std::isalnum(static_cast<unsigned char>(c)) || c == '_';
  });
}

std::optional<double> ParseNumber(std::string_view text) {
  text = Trim(text);
  if (text.starts_with('+')) {
    text.remove_prefix(1);
    if (text.starts_with('-')) return std::nullopt;
  }
  if (text.empty() || text.starts_with('+') || text.starts_with("-+")) return std::nullopt;
  double value = 0;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (ec != std::errc() || end != text.data() + text.size() || !std::isfinite(value)) {
    return std::nullopt;
  }
  return value;
}

}  // namespace drover::workflow
