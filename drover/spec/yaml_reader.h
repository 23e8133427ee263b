#pragma once

// The machinery the spec parsers (parse.cc for jobs, policy.cc for the scheduling policy) share
// to read a YAML document into a model value: positions, the diagnostic sink, the per-level
// field table (unknown keys with did-you-mean, duplicates) and typed readers that report their
// own errors. Internal to drover/spec.

#include <yaml-cpp/yaml.h>

#include <cstddef>
#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "drover/common/result.h"
#include "drover/spec/diagnostic.h"

namespace drover::spec::internal {

// A 1-based position in the input.
struct Pos {
  int line = 1;
  int column = 1;
};

Pos PosOf(const YAML::Mark& mark);
// The position of a value. yaml-cpp places an empty (null) value at the token after it, so
// the caller's fallback (the key, or the enclosing collection) is used for nulls.
Pos PosOf(const YAML::Node& node, Pos fallback);

// Collects the diagnostics of one input.
class Sink {
 public:
  explicit Sink(std::string file) : file_(std::move(file)) {}

  void Add(Pos pos, std::string field, std::string message);
  std::size_t size() const { return diagnostics_.size(); }
  // Every diagnostic, sorted by position (stable: equal positions keep the order found).
  std::vector<Diagnostic> TakeSorted();

 private:
  std::string file_;
  std::vector<Diagnostic> diagnostics_;
};

std::string Join(const std::vector<std::string>& items, std::string_view separator);
// "prefix.key" ("key" at the top level).
std::string Child(const std::string& prefix, std::string_view key);
// "prefix[i]".
std::string Index(const std::string& prefix, std::size_t i);
// "'text'", "a list", "a mapping", "nothing": for "found ..." messages.
std::string Describe(const YAML::Node& node);

// One value of a mapping, with where it is.
struct Value {
  YAML::Node node;  // never null or undefined
  std::string path;
  Pos pos;      // of the value
  Pos key_pos;  // of its key, or of the list item for list elements
};

// The fields of one mapping level. Reports unknown keys (with a suggestion), duplicate keys and
// non-string keys on construction; Get() then hands out the known ones.
class Fields {
 public:
  // `aliases`: misspellings too far for the edit distance, mapped to the intended key (which may
  // be a path to another level, such as "resources.gpus").
  Fields(const YAML::Node& map, const std::string& prefix, const std::vector<std::string>& known,
         const std::map<std::string, std::string>& aliases, Sink& sink);

  // The value of `key`, or nullopt when it is absent or empty (`key:` or `key: null`).
  std::optional<Value> Get(const std::string& key) const;
  // True when `key` is written, even with an empty value.
  bool Written(const std::string& key) const { return present_.count(key) > 0; }
  // Position of the key `key`; requires Written(key).
  Pos KeyPos(const std::string& key) const { return present_.at(key); }

 private:
  std::map<std::string, Pos> present_;
  std::map<std::string, Value> values_;
};

// A required field `key` of `f` (a mapping at `prefix`) that is absent (reported at `parent` with
// `message`) or empty (at its key: "must not be empty").
void ReportMissing(const Fields& f, Pos parent, const std::string& prefix, const std::string& key,
                   std::string_view message, Sink& sink);

// ---------------------------------------------------------------------------------------------
// Typed readers. Each reports its own errors and returns nullopt on any.

std::optional<std::string> ReadString(const Value& v, Sink& sink);
std::optional<std::string> ReadNonEmptyString(const Value& v, Sink& sink);
// Elements of a list as Values; reports a non-list ("expected <expected>, found ...").
std::optional<std::vector<Value>> ReadList(const Value& v, std::string_view expected, Sink& sink);
std::optional<std::vector<std::string>> ReadStringList(const Value& v, Sink& sink);

// Returns an error message for an invalid key, or "".
using KeyCheck = std::string (*)(const std::string& key);
std::string NoKeyCheck(const std::string& key);
// A mapping of names to strings. Scalars of any kind (numbers, booleans) are kept as written;
// an empty value is "". Duplicate keys are reported.
std::optional<std::map<std::string, std::string>> ReadStringMap(const Value& v, Sink& sink,
                                                                KeyCheck check_key);

// true/True/TRUE or false/False/FALSE.
std::optional<bool> ReadBool(const Value& v, Sink& sink);

// A whole number in [min, max] ("2", "2.0"). `fraction_message` replaces the generic message
// for fractions ("0.5", "500m").
std::optional<int> ReadCount(const Value& v, Sink& sink, int min,
                             std::string_view fraction_message = {}, std::int64_t max = 2147483647);

// A quantity parsed by one of drover/common/quantity.h's parsers; its message passes through.
template <typename T>
std::optional<T> ReadQuantity(const Value& v, Sink& sink, Result<T> (*parse)(std::string_view),
                              std::string_view example) {
  if (!v.node.IsScalar()) {
    sink.Add(v.pos, v.path,
             "expected a quantity such as " + std::string(example) + ", found " + Describe(v.node));
    return std::nullopt;
  }
  Result<T> parsed = parse(v.node.Scalar());
  if (!parsed) {
    sink.Add(v.pos, v.path, parsed.error().message);
    return std::nullopt;
  }
  return *parsed;
}

// A quantity in thousandths: "4" -> 4000, "0.25" -> 250, "500m" -> 500 (GPU shares and
// milli-GPU amounts). Not negative; at most three decimals.
Result<std::int64_t> ParseMillis(std::string_view text);

// A mapping level; reports anything else ("expected a mapping, found ...").
bool ExpectMap(const Value& v, Sink& sink);

// Job, pipeline and queue names: 1 to 63 characters of [a-z0-9._-], starting with [a-z0-9].
bool IsValidName(std::string_view name);
// "invalid <what> 'X': use 1 to 63 lowercase letters, ...".
std::string InvalidNameMessage(std::string_view what, std::string_view name);

// The documents of a YAML (or JSON) stream (LoadYamlDocuments: UTF-8 only, expanded size at
// most `max_expanded_bytes` when positive). A syntax error or a broken bound is reported to
// `sink` and yields nullopt (yaml-cpp does not recover, so it is the only diagnostic).
std::optional<std::vector<YAML::Node>> LoadDocuments(std::string_view text,
                                                     std::int64_t max_expanded_bytes, Sink& sink);

// Runs `read`; an exception escaping it (yaml-cpp documents none on the accessors used) becomes a
// diagnostic "internal error while reading the <what>: ...", the last line of defence.
void ReadGuarded(Sink& sink, std::string_view what, const std::function<void()>& read);

}  // namespace drover::spec::internal
