#include "drover/spec/yaml_reader.h"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <exception>
#include <limits>
#include <utility>

#include "drover/spec/limits.h"
#include "drover/spec/suggest.h"
#include "drover/spec/yaml_load.h"

namespace drover::spec::internal {

Pos PosOf(const YAML::Mark& mark) {
  if (mark.is_null() || mark.line < 0 || mark.column < 0) return {};
  return {mark.line + 1, mark.column + 1};
}

Pos PosOf(const YAML::Node& node, Pos fallback) {
  if (!node.IsDefined() || node.IsNull()) return fallback;
  return PosOf(node.Mark());
}

void Sink::Add(Pos pos, std::string field, std::string message) {
  diagnostics_.push_back(
      Diagnostic{file_, pos.line, pos.column, std::move(field), std::move(message)});
}

std::vector<Diagnostic> Sink::TakeSorted() {
  std::vector<Diagnostic> out = std::move(diagnostics_);
  diagnostics_.clear();
  std::stable_sort(out.begin(), out.end(), [](const Diagnostic& a, const Diagnostic& b) {
    return std::pair(a.line, a.column) < std::pair(b.line, b.column);
  });
  return out;
}

std::string Join(const std::vector<std::string>& items, std::string_view separator) {
  std::string out;
  for (std::size_t i = 0; i < items.size(); ++i) {
    if (i > 0) out += separator;
    out += items[i];
  }
  return out;
}

std::string Child(const std::string& prefix, std::string_view key) {
  return prefix.empty() ? std::string(key) : fmt::format("{}.{}", prefix, key);
}

std::string Index(const std::string& prefix, std::size_t i) {
  return fmt::format("{}[{}]", prefix, i);
}

std::string Describe(const YAML::Node& node) {
  switch (node.Type()) {
    case YAML::NodeType::Scalar:
      return fmt::format("'{}'", node.Scalar());
    case YAML::NodeType::Sequence:
      return "a list";
    case YAML::NodeType::Map:
      return "a mapping";
    default:
      return "nothing";
  }
}

// ---------------------------------------------------------------------------------------------

Fields::Fields(const YAML::Node& map, const std::string& prefix,
               const std::vector<std::string>& known,
               const std::map<std::string, std::string>& aliases, Sink& sink) {
  for (const auto& pair : map) {
    const YAML::Node& key = pair.first;
    const Pos key_pos = PosOf(key.Mark());
    if (!key.IsScalar()) {
      sink.Add(key_pos, prefix,
               fmt::format("field names must be strings, found {}", Describe(key)));
      continue;
    }
    const std::string& name = key.Scalar();
    const std::string path = Child(prefix, name);
    if (std::find(known.begin(), known.end(), name) == known.end()) {
      sink.Add(key_pos, path,
               fmt::format("unknown field '{}'", name) +
                   DidYouMean(name, known, "expected one of: " + Join(known, ", "),
                              HintForm::kSuggestionOrExpected, aliases));
      continue;
    }
    if (present_.count(name) > 0) {
      sink.Add(key_pos, path,
               fmt::format("duplicate field '{}'; it is already set at line {}", name,
                           present_[name].line));
      continue;
    }
    present_[name] = key_pos;
    if (pair.second.IsDefined() && !pair.second.IsNull()) {
      values_.emplace(name, Value{pair.second, path, PosOf(pair.second.Mark()), key_pos});
    }
  }
}

std::optional<Value> Fields::Get(const std::string& key) const {
  auto it = values_.find(key);
  if (it == values_.end()) return std::nullopt;
  return it->second;
}

void ReportMissing(const Fields& f, Pos parent, const std::string& prefix, const std::string& key,
                   std::string_view message, Sink& sink) {
  if (f.Written(key)) {
    sink.Add(f.KeyPos(key), Child(prefix, key), "must not be empty");
  } else {
    sink.Add(parent, Child(prefix, key), std::string(message));
  }
}

// ---------------------------------------------------------------------------------------------

std::optional<std::string> ReadString(const Value& v, Sink& sink) {
  if (!v.node.IsScalar()) {
    sink.Add(v.pos, v.path, fmt::format("expected a string, found {}", Describe(v.node)));
    return std::nullopt;
  }
  return v.node.Scalar();
}

std::optional<std::string> ReadNonEmptyString(const Value& v, Sink& sink) {
  std::optional<std::string> s = ReadString(v, sink);
  if (s && s->empty()) {
    sink.Add(v.pos, v.path, "must not be empty");
    return std::nullopt;
  }
  return s;
}

std::optional<std::vector<Value>> ReadList(const Value& v, std::string_view expected, Sink& sink) {
  if (!v.node.IsSequence()) {
    sink.Add(v.pos, v.path, fmt::format("expected {}, found {}", expected, Describe(v.node)));
    return std::nullopt;
  }
  std::vector<Value> items;
  std::size_t i = 0;
  for (const YAML::Node& item : v.node) {
    const Pos pos = PosOf(item, v.pos);
    items.push_back(Value{item, Index(v.path, i++), pos, pos});
  }
  return items;
}

std::optional<std::vector<std::string>> ReadStringList(const Value& v, Sink& sink) {
  std::optional<std::vector<Value>> items = ReadList(v, "a list of strings", sink);
  if (!items) return std::nullopt;
  std::vector<std::string> out;
  bool ok = true;
  for (const Value& item : *items) {
    if (!item.node.IsScalar()) {
      sink.Add(item.pos, item.path,
               fmt::format("expected a string, found {}", Describe(item.node)));
      ok = false;
      continue;
    }
    out.push_back(item.node.Scalar());
  }
  if (!ok) return std::nullopt;
  return out;
}

std::string NoKeyCheck(const std::string&) { return ""; }

std::optional<std::map<std::string, std::string>> ReadStringMap(const Value& v, Sink& sink,
                                                                KeyCheck check_key) {
  if (!v.node.IsMap()) {
    sink.Add(v.pos, v.path,
             fmt::format("expected a mapping of names to strings, found {}", Describe(v.node)));
    return std::nullopt;
  }
  std::map<std::string, std::string> out;
  std::map<std::string, int> first_line;
  bool ok = true;
  for (const auto& pair : v.node) {
    const Pos key_pos = PosOf(pair.first.Mark());
    if (!pair.first.IsScalar()) {
      sink.Add(key_pos, v.path,
               fmt::format("names must be strings, found {}", Describe(pair.first)));
      ok = false;
      continue;
    }
    const std::string& key = pair.first.Scalar();
    const std::string path = Child(v.path, key);
    if (std::string problem = check_key(key); !problem.empty()) {
      sink.Add(key_pos, path, std::move(problem));
      ok = false;
      continue;
    }
    if (auto seen = first_line.find(key); seen != first_line.end()) {
      sink.Add(key_pos, path,
               fmt::format("duplicate key '{}'; it is already set at line {}", key, seen->second));
      ok = false;
      continue;
    }
    first_line[key] = key_pos.line;
    const YAML::Node& value = pair.second;
    if (!value.IsDefined() || value.IsNull()) {
      out[key] = "";
    } else if (value.IsScalar()) {
      out[key] = value.Scalar();
    } else {
      sink.Add(PosOf(value.Mark()), path,
               fmt::format("expected a string, found {}", Describe(value)));
      ok = false;
    }
  }
  if (!ok) return std::nullopt;
  return out;
}

std::optional<bool> ReadBool(const Value& v, Sink& sink) {
  if (v.node.IsScalar()) {
    const std::string& s = v.node.Scalar();
    if (s == "true" || s == "True" || s == "TRUE") return true;
    if (s == "false" || s == "False" || s == "FALSE") return false;
  }
  sink.Add(v.pos, v.path, fmt::format("expected true or false, found {}", Describe(v.node)));
  return std::nullopt;
}

namespace {

// How a count (GPUs, workers, attempts) is written.
enum class CountKind { kWhole, kFraction, kNegative, kTooLarge, kNotANumber };

struct Count {
  CountKind kind = CountKind::kNotANumber;
  std::int64_t value = 0;
};

// Digits with an optional sign, decimal fraction and milli suffix ("2", "-1", "0.5", "500m").
// "2.0" is whole; "500m" is a fraction (a milli-share).
Count ClassifyCount(std::string_view s) {
  std::size_t i = 0;
  bool negative = false;
  if (i < s.size() && (s[i] == '+' || s[i] == '-')) negative = s[i++] == '-';
  std::int64_t whole = 0;
  bool too_large = false;
  std::size_t digits = 0;
  bool nonzero = false;
  for (; i < s.size() && std::isdigit(static_cast<unsigned char>(s[i])); ++i, ++digits) {
    const int d = s[i] - '0';
    nonzero = nonzero || d != 0;
    if (whole > (std::numeric_limits<std::int64_t>::max() - d) / 10) {
      too_large = true;
    } else {
      whole = whole * 10 + d;
    }
  }
  bool fraction = false;
  if (i < s.size() && s[i] == '.') {
    for (++i; i < s.size() && std::isdigit(static_cast<unsigned char>(s[i])); ++i, ++digits) {
      if (s[i] != '0') fraction = nonzero = true;
    }
  }
  if (i < s.size() && s[i] == 'm' && digits > 0) {
    ++i;
    fraction = true;
  }
  if (digits == 0 || i != s.size()) return {CountKind::kNotANumber, 0};
  if (negative && nonzero) return {CountKind::kNegative, 0};
  if (fraction) return {CountKind::kFraction, 0};
  if (too_large) return {CountKind::kTooLarge, 0};
  return {CountKind::kWhole, whole};
}

}  // namespace

std::optional<int> ReadCount(const Value& v, Sink& sink, int min, std::string_view fraction_message,
                             std::int64_t max) {
  const Count count = v.node.IsScalar() ? ClassifyCount(v.node.Scalar()) : Count{};
  max = std::min<std::int64_t>(max, std::numeric_limits<int>::max());
  switch (count.kind) {
    case CountKind::kNotANumber:
      sink.Add(v.pos, v.path, fmt::format("expected a whole number, found {}", Describe(v.node)));
      return std::nullopt;
    case CountKind::kFraction:
      sink.Add(v.pos, v.path,
               fraction_message.empty()
                   ? fmt::format("expected a whole number, found {}", Describe(v.node))
                   : std::string(fraction_message));
      return std::nullopt;
    case CountKind::kNegative:
      sink.Add(
          v.pos, v.path,
          min == 0 ? std::string("must not be negative") : fmt::format("must be at least {}", min));
      return std::nullopt;
    case CountKind::kTooLarge:
      sink.Add(v.pos, v.path, fmt::format("must be at most {}", max));
      return std::nullopt;
    case CountKind::kWhole:
      break;
  }
  if (count.value < min) {
    sink.Add(v.pos, v.path, fmt::format("must be at least {}", min));
    return std::nullopt;
  }
  if (count.value > max) {
    sink.Add(v.pos, v.path, fmt::format("must be at most {}", max));
    return std::nullopt;
  }
  return static_cast<int>(count.value);
}

Result<std::int64_t> ParseMillis(std::string_view text) {
  constexpr std::int64_t kMax = std::numeric_limits<std::int64_t>::max();
  std::size_t i = 0;
  if (i < text.size() && (text[i] == '+' || text[i] == '-')) {
    if (text[i] == '-') return InvalidArgument("must not be negative");
    ++i;
  }
  std::int64_t whole = 0;
  std::size_t digits = 0;
  for (; i < text.size() && std::isdigit(static_cast<unsigned char>(text[i])); ++i, ++digits) {
    if (whole > (kMax / 1000 - 9) / 10) return InvalidArgument("number is too large");
    whole = whole * 10 + (text[i] - '0');
  }
  std::int64_t thousandths = 0;
  std::size_t decimals = 0;
  bool finer = false;  // a nonzero digit past the third decimal
  if (i < text.size() && text[i] == '.') {
    for (++i; i < text.size() && std::isdigit(static_cast<unsigned char>(text[i]));
         ++i, ++digits, ++decimals) {
      if (decimals < 3) {
        thousandths = thousandths * 10 + (text[i] - '0');
      } else if (text[i] != '0') {
        finer = true;
      }
    }
  }
  for (std::size_t d = decimals; d < 3; ++d) thousandths *= 10;
  const bool milli = i < text.size() && text[i] == 'm' && digits > 0;
  if (milli) ++i;
  if (digits == 0 || i != text.size()) {
    return InvalidArgument(
        fmt::format("expected a number such as 2, 0.25 or 250m (thousandths), found '{}'", text));
  }
  if (milli) {
    if (decimals > 0 && thousandths != 0) {
      return InvalidArgument("thousandths (m) must be a whole number");
    }
    return whole;
  }
  if (finer) return InvalidArgument("must be a whole number of thousandths (at most 3 decimals)");
  return whole * 1000 + thousandths;
}

bool ExpectMap(const Value& v, Sink& sink) {
  if (v.node.IsMap()) return true;
  sink.Add(v.pos, v.path, fmt::format("expected a mapping, found {}", Describe(v.node)));
  return false;
}

bool IsValidName(std::string_view name) {
  if (name.empty() || name.size() > 63) return false;
  auto lower_or_digit = [](char c) { return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9'); };
  if (!lower_or_digit(name[0])) return false;
  return std::all_of(name.begin() + 1, name.end(),
                     [&](char c) { return lower_or_digit(c) || c == '.' || c == '_' || c == '-'; });
}

std::string InvalidNameMessage(std::string_view what, std::string_view name) {
  return fmt::format(
      "invalid {} '{}': use 1 to 63 lowercase letters, digits, '.', '_' or '-', starting with a "
      "letter or digit",
      what, EscapeForMessage(name));
}

std::optional<std::vector<YAML::Node>> LoadDocuments(std::string_view text,
                                                     std::int64_t max_expanded_bytes, Sink& sink) {
  LoadedYaml loaded = LoadYamlDocuments(text, max_expanded_bytes);
  if (loaded.error) {
    sink.Add(PosOf(loaded.error->mark), std::move(loaded.error->field),
             std::move(loaded.error->message));
    return std::nullopt;
  }
  return std::move(loaded.documents);
}

void ReadGuarded(Sink& sink, std::string_view what, const std::function<void()>& read) {
  try {
    read();
  } catch (const std::exception& e) {
    sink.Add(Pos{}, "", fmt::format("internal error while reading the {}: {}", what, e.what()));
  } catch (...) {
    sink.Add(Pos{}, "", fmt::format("internal error while reading the {}", what));
  }
}

}  // namespace drover::spec::internal
