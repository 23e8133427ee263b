#include "drover/spec/parse.h"

#include <fmt/format.h>
#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <cctype>
#include <cstdint>
#include <exception>
#include <filesystem>
#include <limits>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "drover/common/quantity.h"
#include "drover/spec/suggest.h"
#include "drover/spec/yaml_load.h"

namespace drover::spec {
namespace {

// ---------------------------------------------------------------------------------------------
// Positions and the diagnostic sink.

struct Pos {
  int line = 1;
  int column = 1;
};

Pos PosOf(const YAML::Mark& mark) {
  if (mark.is_null() || mark.line < 0 || mark.column < 0) return {};
  return {mark.line + 1, mark.column + 1};
}

// The position of a value. yaml-cpp places an empty (null) value at the token after it, so
// the caller's fallback (the key, or the enclosing collection) is used for nulls.
Pos PosOf(const YAML::Node& node, Pos fallback) {
  if (!node.IsDefined() || node.IsNull()) return fallback;
  return PosOf(node.Mark());
}

class Sink {
 public:
  explicit Sink(std::string file) : file_(std::move(file)) {}

  void Add(Pos pos, std::string field, std::string message) {
    diagnostics_.push_back(
        Diagnostic{file_, pos.line, pos.column, std::move(field), std::move(message)});
  }
  std::size_t size() const { return diagnostics_.size(); }
  std::vector<Diagnostic> Take() { return std::move(diagnostics_); }

 private:
  std::string file_;
  std::vector<Diagnostic> diagnostics_;
};

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

// "a string", "a list", ... for "found ..." messages.
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
        std::string message = fmt::format("unknown field '{}'", name);
        std::optional<std::string> suggestion = Suggest(name, known);
        if (!suggestion) {
          if (auto alias = aliases.find(name); alias != aliases.end()) suggestion = alias->second;
        }
        if (suggestion) {
          message += fmt::format("; did you mean '{}'?", *suggestion);
        } else {
          message += fmt::format("; expected one of: {}", Join(known, ", "));
        }
        sink.Add(key_pos, path, std::move(message));
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

  // The value of `key`, or nullopt when it is absent or empty (`key:` or `key: null`).
  std::optional<Value> Get(const std::string& key) const {
    auto it = values_.find(key);
    if (it == values_.end()) return std::nullopt;
    return it->second;
  }
  // True when `key` is written, even with an empty value.
  bool Written(const std::string& key) const { return present_.count(key) > 0; }
  // Position of the key `key`; requires Written(key).
  Pos KeyPos(const std::string& key) const { return present_.at(key); }

 private:
  std::map<std::string, Pos> present_;
  std::map<std::string, Value> values_;
};

// ---------------------------------------------------------------------------------------------
// Typed readers. Each reports its own errors and returns nullopt on any.

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

// Elements of a list as Values; reports a non-list.
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

// A mapping of names to strings. Scalars of any kind (numbers, booleans) are kept as written;
// an empty value is "". `check_key` returns an error message for an invalid key, or "".
template <typename KeyCheck>
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

// A whole number in [min, max]. `fraction_message` replaces the generic message for fractions.
std::optional<int> ReadCount(const Value& v, Sink& sink, int min,
                             std::string_view fraction_message = {}) {
  const Count count = v.node.IsScalar() ? ClassifyCount(v.node.Scalar()) : Count{};
  const std::int64_t max = std::numeric_limits<int>::max();
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

// A quantity parsed by one of drover/common/quantity.h's parsers; its message passes through.
template <typename T>
std::optional<T> ReadQuantity(const Value& v, Sink& sink, Result<T> (*parse)(std::string_view),
                              std::string_view example) {
  if (!v.node.IsScalar()) {
    sink.Add(v.pos, v.path,
             fmt::format("expected a quantity such as {}, found {}", example, Describe(v.node)));
    return std::nullopt;
  }
  Result<T> parsed = parse(v.node.Scalar());
  if (!parsed) {
    sink.Add(v.pos, v.path, parsed.error().message);
    return std::nullopt;
  }
  return *parsed;
}

// A mapping level; reports anything else.
bool ExpectMap(const Value& v, Sink& sink) {
  if (v.node.IsMap()) return true;
  sink.Add(v.pos, v.path, fmt::format("expected a mapping, found {}", Describe(v.node)));
  return false;
}

// ---------------------------------------------------------------------------------------------
// Rules on values.

bool IsValidJobName(std::string_view name) {
  if (name.empty() || name.size() > 63) return false;
  auto lower_or_digit = [](char c) { return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9'); };
  if (!lower_or_digit(name[0])) return false;
  return std::all_of(name.begin() + 1, name.end(),
                     [&](char c) { return lower_or_digit(c) || c == '.' || c == '_' || c == '-'; });
}

std::string CheckEnvName(const std::string& name) {
  const bool ok = !name.empty() && !std::isdigit(static_cast<unsigned char>(name[0])) &&
                  std::all_of(name.begin(), name.end(), [](char c) {
                    return std::isalnum(static_cast<unsigned char>(c)) || c == '_';
                  });
  if (ok) return "";
  return fmt::format(
      "invalid environment variable name '{}': use letters, digits and '_', not starting with a "
      "digit",
      name);
}

std::string NoKeyCheck(const std::string&) { return ""; }

// base_dir / path, lexically normalized, without a trailing slash. The file system is not read.
std::string ResolvePath(const std::string& base_dir, const std::string& path) {
  if (base_dir.empty()) return path;
  std::filesystem::path joined = std::filesystem::path(base_dir) / std::filesystem::path(path);
  std::string out = joined.lexically_normal().generic_string();
  while (out.size() > 1 && out.back() == '/') out.pop_back();
  return out;
}

const std::vector<std::string>& TopLevelKeys() {
  static const std::vector<std::string> kKeys = {
      "kind",      "name",    "owner",          "team",         "queue",
      "priority",  "command", "script",         "working_dir",  "env",
      "resources", "workers", "min_workers",    "placement",    "depends_on",
      "timeout",   "retry",   "checkpoint_dir", "interruptible"};
  return kKeys;
}

const std::map<std::string, std::string>& TopLevelAliases() {
  static const std::map<std::string, std::string> kAliases = {
      {"cmd", "command"},
      {"args", "command"},
      {"argv", "command"},
      {"cwd", "working_dir"},
      {"workdir", "working_dir"},
      {"environment", "env"},
      {"priority_class", "priority"},
      {"dependencies", "depends_on"},
      {"deps", "depends_on"},
      {"after", "depends_on"},
      {"replicas", "workers"},
      {"cpu", "resources.cpu"},
      {"memory", "resources.memory"},
      {"gpus", "resources.gpus"},
      {"gpu", "resources.gpus"},
      {"gpu_memory", "resources.gpu_memory"},
      {"gpu_model", "resources.gpu_model"},
      {"node_selector", "placement.node_selector"},
      {"tolerations", "placement.tolerations"},
      {"same_node", "placement.same_node"},
      {"max_attempts", "retry.max_attempts"},
      {"backoff", "retry.backoff"},
  };
  return kAliases;
}

// ---------------------------------------------------------------------------------------------
// One job.

struct Dependency {
  std::string name;
  std::string path;  // "depends_on[i]"
  Pos pos;
};

struct ParsedJob {
  model::JobSpec spec;
  Pos pos;                      // the job's mapping
  std::optional<Pos> name_pos;  // set when the name is valid
  std::vector<Dependency> dependencies;
};

constexpr std::string_view kFractionalGpus =
    "GPU count must be a whole number; fractions of a GPU need a sharing mechanism such as a MIG "
    "profile (mig: 1g.18gb) or time-slicing (gpu_share: 500m), which this cluster version does "
    "not offer yet";

class JobParser {
 public:
  JobParser(const ParseOptions& options, Sink& sink) : options_(options), sink_(sink) {}

  ParsedJob Parse(const YAML::Node& map) {
    ParsedJob job;
    job.pos = PosOf(map.Mark());
    model::JobSpec& spec = job.spec;
    Fields f(map, "", TopLevelKeys(), TopLevelAliases(), sink_);

    // kind
    if (auto v = f.Get("kind")) {
      if (auto kind = ReadString(*v, sink_); kind && *kind != "Job") {
        sink_.Add(v->pos, v->path, fmt::format("unsupported kind '{}'; expected 'Job'", *kind));
      }
    } else {
      Missing(f, job.pos, "kind", "required field is missing (write kind: Job)");
    }

    // name
    if (auto v = f.Get("name")) {
      if (auto name = ReadString(*v, sink_)) {
        if (IsValidJobName(*name)) {
          spec.name = *name;
          job.name_pos = v->pos;
        } else {
          sink_.Add(v->pos, v->path,
                    fmt::format("invalid name '{}': use 1 to 63 lowercase letters, digits, '.', "
                                "'_' or '-', starting with a letter or digit",
                                *name));
        }
      }
    } else {
      Missing(f, job.pos, "name", "required field is missing");
    }

    if (auto v = f.Get("owner")) spec.owner = ReadString(*v, sink_).value_or("");
    if (auto v = f.Get("team")) spec.team = ReadString(*v, sink_).value_or("");
    if (auto v = f.Get("queue")) spec.queue = ReadNonEmptyString(*v, sink_).value_or(spec.queue);
    if (auto v = f.Get("priority")) ReadPriority(*v, spec);

    ReadCommand(f, job);

    if (auto v = f.Get("working_dir")) {
      if (auto dir = ReadNonEmptyString(*v, sink_)) {
        spec.working_dir = ResolvePath(options_.base_dir, *dir);
      }
    } else if (!options_.base_dir.empty()) {
      spec.working_dir = ResolvePath(options_.base_dir, ".");  // the spec file's directory
    }
    if (auto v = f.Get("env")) {
      spec.env = ReadStringMap(*v, sink_, CheckEnvName).value_or(decltype(spec.env){});
    }

    ReadResources(f.Get("resources"), spec);

    std::optional<int> workers = 1;
    if (auto v = f.Get("workers")) workers = ReadCount(*v, sink_, 1);
    spec.workers = workers.value_or(1);
    spec.min_workers = spec.workers;
    if (auto v = f.Get("min_workers")) {
      if (auto min_workers = ReadCount(*v, sink_, 1)) {
        if (workers && *min_workers > *workers) {
          sink_.Add(v->pos, v->path,
                    fmt::format("must not exceed workers ({}), found {}", *workers, *min_workers));
        } else {
          spec.min_workers = *min_workers;
        }
      }
    }

    ReadPlacement(f.Get("placement"), spec.requirements);

    if (auto v = f.Get("depends_on")) ReadDependencies(*v, job);

    if (auto v = f.Get("timeout")) {
      if (auto timeout = ReadQuantity<DurationMs>(*v, sink_, &ParseDuration, "1h30m")) {
        if (*timeout <= 0) {
          sink_.Add(v->pos, v->path, "must be greater than zero");
        } else {
          spec.timeout = *timeout;
        }
      }
    }

    ReadRetry(f.Get("retry"), spec.retry);

    if (auto v = f.Get("checkpoint_dir")) {
      if (auto dir = ReadNonEmptyString(*v, sink_)) {
        spec.checkpoint_dir = ResolvePath(options_.base_dir, *dir);
      }
    }
    if (auto v = f.Get("interruptible")) spec.interruptible = ReadBool(*v, sink_).value_or(false);
    return job;
  }

 private:
  // A required field that is absent (at the job) or empty (at its key).
  void Missing(const Fields& f, Pos job_pos, const std::string& key, std::string message) {
    if (f.Written(key)) {
      sink_.Add(f.KeyPos(key), key, "must not be empty");
    } else {
      sink_.Add(job_pos, key, std::move(message));
    }
  }

  void ReadPriority(const Value& v, model::JobSpec& spec) {
    std::optional<std::string> name = ReadString(v, sink_);
    if (!name) return;
    if (model::PriorityClassValue(*name)) {
      spec.priority_class = *name;
      return;
    }
    const auto& names = model::PriorityClassNames();
    std::string message = fmt::format("unknown priority class '{}'", *name);
    if (auto suggestion = Suggest(*name, names)) {
      message += fmt::format(" (did you mean '{}'?)", *suggestion);
    }
    message += fmt::format("; valid classes are {}", Join(names, ", "));
    sink_.Add(v.pos, v.path, std::move(message));
  }

  void ReadCommand(const Fields& f, ParsedJob& job) {
    model::JobSpec& spec = job.spec;
    const std::optional<Value> command = f.Get("command");
    const std::optional<Value> script = f.Get("script");
    if (command) {
      if (auto argv = ReadStringList(*command, sink_)) {
        if (argv->empty()) {
          sink_.Add(command->pos, command->path,
                    "must not be empty; give the program and its arguments, e.g. [python, "
                    "train.py]");
        } else if (argv->front().empty()) {
          sink_.Add(PosOf(command->node[0], command->pos), Index(command->path, 0),
                    "the program name must not be empty");
        } else {
          spec.command = std::move(*argv);
        }
      }
    }
    if (script) {
      if (auto text = ReadString(*script, sink_)) {
        const bool blank = std::all_of(text->begin(), text->end(), [](char c) {
          return std::isspace(static_cast<unsigned char>(c));
        });
        if (blank) {
          sink_.Add(script->pos, script->path, "must not be empty");
        } else {
          spec.script = std::move(*text);
        }
      }
    }
    if (command && script) {
      sink_.Add(script->pos, script->path,
                "command and script are mutually exclusive; give only one");
    } else if (!command && !script) {
      if (f.Written("command") || f.Written("script")) {
        const std::string key = f.Written("command") ? "command" : "script";
        sink_.Add(f.KeyPos(key), key, "must not be empty");
      } else {
        sink_.Add(job.pos, "command",
                  "one of command (a list: program and arguments) or script (run with /bin/sh "
                  "-c) is required");
      }
    }
  }

  void ReadResources(const std::optional<Value>& v, model::JobSpec& spec) {
    model::Requirements& req = spec.requirements;
    req.per_worker.cpu_millis = 1000;
    req.per_worker.memory_bytes = 1LL << 30;
    req.per_worker.gpus = 0;
    if (!v || !ExpectMap(*v, sink_)) return;
    static const std::vector<std::string> kKeys = {"cpu", "memory", "gpus", "gpu_memory",
                                                   "gpu_model"};
    static const std::map<std::string, std::string> kAliases = {
        {"mem", "memory"},         {"ram", "memory"},           {"gpu_count", "gpus"},
        {"gpu_type", "gpu_model"}, {"gpu_models", "gpu_model"}, {"vram", "gpu_memory"},
    };
    Fields f(v->node, v->path, kKeys, kAliases, sink_);
    if (auto q = f.Get("cpu")) {
      req.per_worker.cpu_millis =
          ReadQuantity<std::int64_t>(*q, sink_, &ParseCpuMillis, "4 or 500m").value_or(1000);
    }
    if (auto q = f.Get("memory")) {
      req.per_worker.memory_bytes =
          ReadQuantity<std::int64_t>(*q, sink_, &ParseBytes, "16Gi").value_or(1LL << 30);
    }
    std::optional<int> gpus = 0;
    if (auto q = f.Get("gpus")) gpus = ReadCount(*q, sink_, 0, kFractionalGpus);
    req.per_worker.gpus = gpus.value_or(0);
    const std::string_view no_gpus =
        "is only valid with gpus > 0 (this job asks for no GPUs; add resources.gpus)";
    if (auto q = f.Get("gpu_memory")) {
      if (auto bytes = ReadQuantity<std::int64_t>(*q, sink_, &ParseBytes, "40Gi")) {
        if (gpus == 0) {
          sink_.Add(q->pos, q->path, std::string(no_gpus));
        } else {
          req.gpu_memory_bytes = *bytes;
        }
      }
    }
    if (auto q = f.Get("gpu_model")) {
      std::optional<std::vector<std::string>> models;
      if (q->node.IsScalar()) {
        models = std::vector<std::string>{q->node.Scalar()};
      } else if (q->node.IsSequence()) {
        models = ReadStringList(*q, sink_);
      } else {
        sink_.Add(
            q->pos, q->path,
            fmt::format("expected a GPU model or a list of models, found {}", Describe(q->node)));
      }
      if (models) {
        const bool has_empty =
            std::any_of(models->begin(), models->end(), [](const auto& m) { return m.empty(); });
        if (has_empty || models->empty()) {
          sink_.Add(q->pos, q->path, "GPU model names must not be empty");
        } else if (gpus == 0) {
          sink_.Add(q->pos, q->path, std::string(no_gpus));
        } else {
          req.gpu_models = std::move(*models);
        }
      }
    }
  }

  void ReadPlacement(const std::optional<Value>& v, model::Requirements& req) {
    if (!v || !ExpectMap(*v, sink_)) return;
    static const std::vector<std::string> kKeys = {"node_selector", "tolerations", "same_node"};
    static const std::map<std::string, std::string> kAliases = {
        {"selector", "node_selector"}, {"labels", "node_selector"}, {"toleration", "tolerations"}};
    Fields f(v->node, v->path, kKeys, kAliases, sink_);
    if (auto q = f.Get("node_selector")) {
      req.node_selector =
          ReadStringMap(*q, sink_, NoKeyCheck).value_or(decltype(req.node_selector){});
    }
    if (auto q = f.Get("tolerations")) {
      if (auto items = ReadList(*q, "a list of tolerations", sink_)) {
        for (const Value& item : *items) {
          if (auto toleration = ReadToleration(item)) req.tolerations.push_back(*toleration);
        }
      }
    }
    if (auto q = f.Get("same_node")) req.same_node = ReadBool(*q, sink_).value_or(false);
  }

  std::optional<model::Toleration> ReadToleration(const Value& v) {
    if (!v.node.IsDefined() || v.node.IsNull()) {
      sink_.Add(v.pos, v.path,
                "expected a toleration (a mapping with key, operator, value, effect)");
      return std::nullopt;
    }
    if (!ExpectMap(v, sink_)) return std::nullopt;
    const std::size_t errors = sink_.size();
    static const std::vector<std::string> kKeys = {"key", "operator", "value", "effect"};
    static const std::map<std::string, std::string> kAliases = {{"op", "operator"}};
    Fields f(v.node, v.path, kKeys, kAliases, sink_);
    model::Toleration t;
    if (auto q = f.Get("key")) t.key = ReadString(*q, sink_).value_or("");
    if (auto q = f.Get("operator")) {
      if (auto op = ReadString(*q, sink_)) {
        if (*op == "Equal") {
          t.op = model::Toleration::Operator::kEqual;
        } else if (*op == "Exists") {
          t.op = model::Toleration::Operator::kExists;
        } else {
          sink_.Add(q->pos, q->path,
                    fmt::format("unknown operator '{}'; expected Equal or Exists", *op));
        }
      }
    }
    std::optional<Value> value = f.Get("value");
    if (value) t.value = ReadString(*value, sink_).value_or("");
    if (auto q = f.Get("effect")) {
      if (auto effect = ReadString(*q, sink_)) {
        static const std::vector<std::string> kEffects = {"NoSchedule", "PreferNoSchedule",
                                                          "NoExecute"};
        if (*effect == "NoSchedule") {
          t.effect = model::TaintEffect::kNoSchedule;
        } else if (*effect == "PreferNoSchedule") {
          t.effect = model::TaintEffect::kPreferNoSchedule;
        } else if (*effect == "NoExecute") {
          t.effect = model::TaintEffect::kNoExecute;
        } else {
          std::string message = fmt::format("unknown effect '{}'", *effect);
          if (auto s = Suggest(*effect, kEffects))
            message += fmt::format(" (did you mean '{}'?)", *s);
          message +=
              "; expected NoSchedule, PreferNoSchedule or NoExecute, or leave it out to "
              "tolerate every effect";
          sink_.Add(q->pos, q->path, std::move(message));
        }
      }
    }
    if (t.op == model::Toleration::Operator::kExists && value && !t.value.empty()) {
      sink_.Add(value->pos, value->path, "must be empty when operator is Exists");
    }
    if (t.op == model::Toleration::Operator::kEqual && t.key.empty() && sink_.size() == errors) {
      sink_.Add(f.Written("key") ? f.KeyPos("key") : v.pos, Child(v.path, "key"),
                "is required when operator is Equal (use operator: Exists to tolerate every "
                "taint)");
    }
    if (sink_.size() != errors) return std::nullopt;
    return t;
  }

  void ReadDependencies(const Value& v, ParsedJob& job) {
    std::optional<std::vector<Value>> items = ReadList(v, "a list of job names", sink_);
    if (!items) return;
    std::set<std::string> seen;
    for (const Value& item : *items) {
      if (!item.node.IsScalar()) {
        sink_.Add(item.pos, item.path,
                  fmt::format("expected a job name, found {}", Describe(item.node)));
        continue;
      }
      const std::string& name = item.node.Scalar();
      if (!seen.insert(name).second) {
        sink_.Add(item.pos, item.path, fmt::format("duplicate dependency '{}'", name));
        continue;
      }
      job.dependencies.push_back(Dependency{name, item.path, item.pos});
      job.spec.depends_on.push_back(name);
    }
  }

  void ReadRetry(const std::optional<Value>& v, model::RetryPolicy& retry) {
    if (!v || !ExpectMap(*v, sink_)) return;
    static const std::vector<std::string> kKeys = {"max_attempts", "backoff"};
    static const std::map<std::string, std::string> kAliases = {
        {"attempts", "max_attempts"}, {"retries", "max_attempts"}, {"delay", "backoff"}};
    Fields f(v->node, v->path, kKeys, kAliases, sink_);
    if (auto q = f.Get("max_attempts")) retry.max_attempts = ReadCount(*q, sink_, 1).value_or(1);
    if (auto q = f.Get("backoff")) {
      retry.backoff_ms = ReadQuantity<DurationMs>(*q, sink_, &ParseDuration, "10s").value_or(0);
    }
  }

  const ParseOptions& options_;
  Sink& sink_;
};

// ---------------------------------------------------------------------------------------------
// Checks across the jobs of one file.

void CheckNames(const std::vector<ParsedJob>& jobs, std::map<std::string, std::size_t>& by_name,
                Sink& sink) {
  for (std::size_t i = 0; i < jobs.size(); ++i) {
    if (!jobs[i].name_pos) continue;
    auto [it, inserted] = by_name.emplace(jobs[i].spec.name, i);
    if (!inserted) {
      sink.Add(*jobs[i].name_pos, "name",
               fmt::format("duplicate job name '{}'; the first is at line {}", jobs[i].spec.name,
                           jobs[it->second].name_pos->line));
    }
  }
}

// Reports self and unknown dependencies; returns, per job, the indices of the jobs it depends on.
std::vector<std::vector<std::size_t>> ResolveDependencies(
    const std::vector<ParsedJob>& jobs, const std::map<std::string, std::size_t>& by_name,
    Sink& sink) {
  std::vector<std::string> names;
  for (const auto& [name, index] : by_name) names.push_back(name);
  std::vector<std::vector<std::size_t>> edges(jobs.size());
  for (std::size_t i = 0; i < jobs.size(); ++i) {
    for (const Dependency& dep : jobs[i].dependencies) {
      if (jobs[i].name_pos && dep.name == jobs[i].spec.name) {
        sink.Add(dep.pos, dep.path, "a job cannot depend on itself");
        continue;
      }
      auto it = by_name.find(dep.name);
      if (it == by_name.end()) {
        std::string message =
            fmt::format("unknown job '{}' (dependencies name jobs in the same file)", dep.name);
        if (auto s = Suggest(dep.name, names)) message += fmt::format("; did you mean '{}'?", *s);
        sink.Add(dep.pos, dep.path, std::move(message));
        continue;
      }
      edges[i].push_back(it->second);
    }
  }
  return edges;
}

// Finds dependency cycles with a depth-first search (iterative: files may hold many jobs) and
// reports each once, at the depends_on entry of the cycle's first job in file order.
void CheckCycles(const std::vector<ParsedJob>& jobs,
                 const std::vector<std::vector<std::size_t>>& edges, Sink& sink) {
  enum Color { kWhite, kGray, kBlack };
  std::vector<Color> color(jobs.size(), kWhite);
  std::set<std::vector<std::size_t>> reported;
  for (std::size_t start = 0; start < jobs.size(); ++start) {
    if (color[start] != kWhite) continue;
    std::vector<std::pair<std::size_t, std::size_t>> stack;  // (job, next edge)
    stack.emplace_back(start, 0);
    color[start] = kGray;
    while (!stack.empty()) {
      auto& [u, next] = stack.back();
      if (next == edges[u].size()) {
        color[u] = kBlack;
        stack.pop_back();
        continue;
      }
      const std::size_t v = edges[u][next++];
      if (color[v] == kWhite) {
        color[v] = kGray;
        stack.emplace_back(v, 0);
        continue;
      }
      if (color[v] != kGray) continue;
      // Back edge u -> v: the cycle is the stack from v to u.
      std::vector<std::size_t> cycle;
      auto from =
          std::find_if(stack.begin(), stack.end(), [&](const auto& e) { return e.first == v; });
      for (auto it = from; it != stack.end(); ++it) cycle.push_back(it->first);
      std::rotate(cycle.begin(), std::min_element(cycle.begin(), cycle.end()), cycle.end());
      if (!reported.insert(cycle).second) continue;
      std::vector<std::string> names;
      for (std::size_t j : cycle) names.push_back(jobs[j].spec.name);
      names.push_back(jobs[cycle[0]].spec.name);
      const ParsedJob& first = jobs[cycle[0]];
      const std::string& target = jobs[cycle[1 % cycle.size()]].spec.name;
      for (const Dependency& dep : first.dependencies) {
        if (dep.name == target) {
          sink.Add(dep.pos, dep.path, fmt::format("dependency cycle: {}", Join(names, " -> ")));
          break;
        }
      }
    }
  }
}

// ---------------------------------------------------------------------------------------------

void ParseText(std::string_view text, const ParseOptions& options, Sink& sink,
               std::vector<ParsedJob>& jobs) {
  LoadedYaml loaded = LoadYamlDocuments(text);
  if (loaded.error) {
    sink.Add(PosOf(loaded.error->mark), "", std::move(loaded.error->message));
    return;
  }
  const std::vector<YAML::Node>& documents = loaded.documents;
  JobParser parser(options, sink);
  auto not_a_job = [&](const YAML::Node& node, Pos pos) {
    sink.Add(pos, "",
             fmt::format("expected a job (a mapping with kind: Job), found {}", Describe(node)));
  };
  for (const YAML::Node& document : documents) {
    if (document.IsMap()) {
      jobs.push_back(parser.Parse(document));
    } else if (document.IsSequence()) {
      for (const YAML::Node& item : document) {
        if (item.IsMap()) {
          jobs.push_back(parser.Parse(item));
        } else {
          not_a_job(item, PosOf(item, PosOf(document.Mark())));
        }
      }
    } else if (document.IsScalar()) {
      not_a_job(document, PosOf(document.Mark()));
    }
    // Empty documents (a stray --- or a file of comments) hold no job and are skipped.
  }
}

}  // namespace

std::string Diagnostic::ToString() const {
  if (field.empty()) return fmt::format("{}:{}:{}: error: {}", file, line, column, message);
  return fmt::format("{}:{}:{}: error: {}: {}", file, line, column, field, message);
}

ParseOutput ParseJobsWithDiagnostics(std::string_view text, const ParseOptions& options) {
  Sink sink(options.file_name);
  std::vector<ParsedJob> jobs;
  try {
    ParseText(text, options, sink, jobs);
    if (sink.size() == 0 && jobs.empty()) {
      sink.Add(Pos{}, "", "no job found; write one job per YAML document (kind: Job, ...)");
    }
    std::map<std::string, std::size_t> by_name;
    CheckNames(jobs, by_name, sink);
    CheckCycles(jobs, ResolveDependencies(jobs, by_name, sink), sink);
  } catch (const std::exception& e) {
    // yaml-cpp documents no throws on the accessors used above; this is a last line of defence.
    sink.Add(Pos{}, "", fmt::format("internal error while reading the spec: {}", e.what()));
  } catch (...) {
    sink.Add(Pos{}, "", "internal error while reading the spec");
  }
  ParseOutput out;
  out.diagnostics = sink.Take();
  std::stable_sort(out.diagnostics.begin(), out.diagnostics.end(),
                   [](const Diagnostic& a, const Diagnostic& b) {
                     return std::pair(a.line, a.column) < std::pair(b.line, b.column);
                   });
  if (out.diagnostics.empty()) {
    out.jobs.reserve(jobs.size());
    for (ParsedJob& job : jobs) out.jobs.push_back(std::move(job.spec));
  }
  return out;
}

Result<std::vector<model::JobSpec>> ParseJobs(std::string_view text, const ParseOptions& options) {
  ParseOutput out = ParseJobsWithDiagnostics(text, options);
  if (out.diagnostics.empty()) return std::move(out.jobs);
  std::vector<std::string> details;
  details.reserve(out.diagnostics.size());
  for (const Diagnostic& d : out.diagnostics) details.push_back(d.ToString());
  const std::size_t n = details.size();
  return MakeError(ErrorCode::kInvalidArgument,
                   fmt::format("{} error{} in {}", n, n == 1 ? "" : "s", options.file_name),
                   std::move(details));
}

}  // namespace drover::spec
