#include "drover/spec/parse.h"

#include <fmt/format.h>
#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <cctype>
#include <cstdint>
#include <filesystem>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "drover/common/quantity.h"
#include "drover/model/mig.h"
#include "drover/spec/suggest.h"
#include "drover/spec/yaml_reader.h"

namespace drover::spec {
namespace {

using internal::Child;
using internal::Describe;
using internal::ExpectMap;
using internal::Fields;
using internal::Index;
using internal::InvalidNameMessage;
using internal::IsValidName;
using internal::Join;
using internal::NoKeyCheck;
using internal::ParseMillis;
using internal::Pos;
using internal::PosOf;
using internal::ReadBool;
using internal::ReadCount;
using internal::ReadList;
using internal::ReadNonEmptyString;
using internal::ReadQuantity;
using internal::ReadString;
using internal::ReadStringList;
using internal::ReadStringMap;
using internal::Sink;
using internal::Value;

// ---------------------------------------------------------------------------------------------
// Rules on values.

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
      "kind",       "name",      "owner",   "team",           "queue",
      "priority",   "pipeline",  "command", "script",         "working_dir",
      "env",        "resources", "workers", "min_workers",    "placement",
      "depends_on", "timeout",   "retry",   "checkpoint_dir", "interruptible"};
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
      {"gpu_share", "resources.gpu_share"},
      {"mig", "resources.mig"},
      {"node_selector", "placement.node_selector"},
      {"tolerations", "placement.tolerations"},
      {"same_node", "placement.same_node"},
      {"topology", "placement.topology"},
      {"prefer", "placement.prefer"},
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

// The message for `gpus: 0.25` or `gpus: 250m`: a share of one GPU is asked for with gpu_share
// (time-slicing) or mig (a MIG instance); the suggestion reuses the value when it is a share.
std::string FractionalGpusMessage(const YAML::Node& gpus) {
  std::string share = "500m";
  if (auto millis = ParseMillis(gpus.Scalar()); millis && *millis > 0 && *millis < 1000) {
    share = fmt::format("{}m", *millis);
  }
  return fmt::format(
      "GPU count must be a whole number; for part of one GPU write gpu_share: {} (a time-sliced "
      "share) or mig: <profile> (a MIG instance, e.g. mig: 1g.18gb) instead of gpus",
      share);
}

// "zone=a" -> {"zone", "a"}; nullopt without '=' or with an empty key.
std::optional<std::pair<std::string, std::string>> SplitLabel(std::string_view label) {
  const std::size_t eq = label.find('=');
  if (eq == std::string_view::npos || eq == 0) return std::nullopt;
  return std::pair(std::string(label.substr(0, eq)), std::string(label.substr(eq + 1)));
}

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
        if (IsValidName(*name)) {
          spec.name = *name;
          job.name_pos = v->pos;
        } else {
          sink_.Add(v->pos, v->path, InvalidNameMessage("name", *name));
        }
      }
    } else {
      Missing(f, job.pos, "name", "required field is missing");
    }

    if (auto v = f.Get("owner")) spec.owner = ReadString(*v, sink_).value_or("");
    if (auto v = f.Get("team")) spec.team = ReadString(*v, sink_).value_or("");
    if (auto v = f.Get("queue")) spec.queue = ReadNonEmptyString(*v, sink_).value_or(spec.queue);
    if (auto v = f.Get("priority")) ReadPriority(*v, spec);
    if (auto v = f.Get("pipeline")) {
      if (auto pipeline = ReadString(*v, sink_)) {
        if (IsValidName(*pipeline)) {
          spec.pipeline = *pipeline;
        } else {
          sink_.Add(v->pos, v->path, InvalidNameMessage("pipeline name", *pipeline));
        }
      }
    }

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

    ReadPlacement(f.Get("placement"), spec);

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
    static const std::vector<std::string> kKeys = {"cpu", "memory",     "gpus",     "gpu_share",
                                                   "mig", "gpu_memory", "gpu_model"};
    static const std::map<std::string, std::string> kAliases = {
        {"mem", "memory"},           {"ram", "memory"},
        {"gpu_count", "gpus"},       {"gpu_type", "gpu_model"},
        {"gpu_models", "gpu_model"}, {"vram", "gpu_memory"},
        {"share", "gpu_share"},      {"gpu_fraction", "gpu_share"},
        {"timeslice", "gpu_share"},  {"mig_profile", "mig"},
        {"gpu_mig", "mig"},
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
    if (auto q = f.Get("gpus")) {
      gpus = ReadCount(*q, sink_, 0, q->node.IsScalar() ? FractionalGpusMessage(q->node) : "");
    }
    req.per_worker.gpus = gpus.value_or(0);

    // A part of one GPU: gpu_share (time-slicing) or mig (a MIG instance), never with whole
    // GPUs and never both.
    const std::optional<Value> share = f.Get("gpu_share");
    const std::optional<Value> mig = f.Get("mig");
    auto whole_gpus_conflict = [&](const Value& q) {
      sink_.Add(q.pos, q.path,
                fmt::format("cannot be combined with gpus ({}): a worker gets whole GPUs or a "
                            "part of one GPU, not both; remove gpus or set it to 0",
                            *gpus));
    };
    if (share) {
      if (auto millis = ReadQuantity<std::int64_t>(*share, sink_, &ParseMillis, "500m or 0.5")) {
        if (*millis < 1 || *millis > 999) {
          sink_.Add(share->pos, share->path,
                    fmt::format("must be from 1m to 999m (0.001 to 0.999) of one GPU, found {}; "
                                "ask for whole GPUs with gpus",
                                share->node.Scalar()));
        } else if (gpus && *gpus > 0) {
          whole_gpus_conflict(*share);
        } else {
          req.gpu_share_millis = static_cast<std::int32_t>(*millis);
        }
      }
    }
    if (mig) {
      if (auto written = ReadNonEmptyString(*mig, sink_)) {
        std::string profile = *written;
        std::transform(profile.begin(), profile.end(), profile.begin(),
                       [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
        if (auto parsed = model::ParseMigProfile(profile); !parsed) {
          sink_.Add(mig->pos, mig->path,
                    parsed.error().message + " (nvidia-smi mig -lgip lists a GPU's profiles)");
        } else if (share) {
          sink_.Add(mig->pos, mig->path,
                    "gpu_share and mig are mutually exclusive: a worker gets either a time-sliced "
                    "share or a MIG instance; give only one");
        } else if (gpus && *gpus > 0) {
          whole_gpus_conflict(*mig);
        } else {
          req.mig_profile = std::move(profile);
        }
      }
    }
    const bool any_gpu = (gpus && *gpus > 0) || share || mig;
    const std::string_view no_gpus =
        "is only valid when the job asks for GPUs (this job asks for none; add resources.gpus, "
        "resources.gpu_share or resources.mig)";
    if (auto q = f.Get("gpu_memory")) {
      if (auto bytes = ReadQuantity<std::int64_t>(*q, sink_, &ParseBytes, "40Gi")) {
        if (!any_gpu) {
          sink_.Add(q->pos, q->path, std::string(no_gpus));
        } else if (mig && !share && !(gpus && *gpus > 0)) {
          sink_.Add(q->pos, q->path,
                    "is not valid with mig: the MIG profile sets the instance's memory (1g.18gb "
                    "has 18 GB)");
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
        } else if (!any_gpu) {
          sink_.Add(q->pos, q->path, std::string(no_gpus));
        } else {
          req.gpu_models = std::move(*models);
        }
      }
    }
  }

  void ReadPlacement(const std::optional<Value>& v, model::JobSpec& spec) {
    model::Requirements& req = spec.requirements;
    if (!v || !ExpectMap(*v, sink_)) return;
    static const std::vector<std::string> kKeys = {"node_selector", "tolerations", "same_node",
                                                   "topology", "prefer"};
    static const std::map<std::string, std::string> kAliases = {
        {"selector", "node_selector"},  {"labels", "node_selector"}, {"toleration", "tolerations"},
        {"preferences", "prefer"},      {"preferred", "prefer"},     {"affinity", "prefer"},
        {"topology_level", "topology"}, {"locality", "topology"}};
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
    if (auto q = f.Get("topology")) ReadTopology(*q, spec);
    if (auto q = f.Get("prefer")) {
      if (auto items =
              ReadList(*q, "a list of label preferences ({label: zone=a, weight: 10})", sink_)) {
        for (const Value& item : *items) {
          if (auto preference = ReadLabelPreference(item)) {
            spec.preferences.node_labels.push_back(std::move(*preference));
          }
        }
      }
    }
  }

  // {level: rack, mode: required|preferred}.
  void ReadTopology(const Value& v, model::JobSpec& spec) {
    if (!ExpectMap(v, sink_)) return;
    static const std::vector<std::string> kKeys = {"level", "mode"};
    static const std::map<std::string, std::string> kAliases = {
        {"label", "level"}, {"key", "level"}, {"domain", "level"}, {"policy", "mode"}};
    Fields f(v.node, v.path, kKeys, kAliases, sink_);
    bool required = true;
    if (auto q = f.Get("mode")) {
      if (auto mode = ReadString(*q, sink_)) {
        if (*mode == "preferred") {
          required = false;
        } else if (*mode != "required") {
          static const std::vector<std::string> kModes = {"required", "preferred"};
          std::string message = fmt::format("unknown mode '{}'", *mode);
          if (auto s = Suggest(*mode, kModes)) message += fmt::format(" (did you mean '{}'?)", *s);
          message +=
              "; expected required (every worker in one domain, or wait) or preferred (one "
              "domain when one has room, else anywhere)";
          sink_.Add(q->pos, q->path, std::move(message));
        }
      }
    }
    std::optional<Value> level = f.Get("level");
    if (!level) {
      sink_.Add(f.Written("level") ? f.KeyPos("level") : v.pos, Child(v.path, "level"),
                f.Written("level") ? "must not be empty"
                                   : "required field is missing (the node label that names a "
                                     "domain, e.g. level: rack)");
      return;
    }
    std::optional<std::string> label = ReadNonEmptyString(*level, sink_);
    if (!label) return;
    if (label->find_first_of("= \t") != std::string::npos) {
      sink_.Add(level->pos, level->path,
                fmt::format("invalid label name '{}': write the label's name only (level: rack), "
                            "without a value",
                            *label));
      return;
    }
    (required ? spec.requirements.topology_level : spec.preferences.topology_level) = *label;
  }

  // {label: "zone=a", weight: 10}.
  std::optional<model::LabelPreference> ReadLabelPreference(const Value& v) {
    if (!ExpectMap(v, sink_)) return std::nullopt;
    const std::size_t errors = sink_.size();
    static const std::vector<std::string> kKeys = {"label", "weight"};
    static const std::map<std::string, std::string> kAliases = {
        {"labels", "label"}, {"node_label", "label"}, {"score", "weight"}};
    Fields f(v.node, v.path, kKeys, kAliases, sink_);
    model::LabelPreference preference;
    if (auto q = f.Get("label")) {
      if (auto label = ReadNonEmptyString(*q, sink_)) {
        if (auto kv = SplitLabel(*label)) {
          preference.key = std::move(kv->first);
          preference.value = std::move(kv->second);
        } else {
          sink_.Add(q->pos, q->path,
                    fmt::format("invalid label '{}': write key=value, e.g. zone=a", *label));
        }
      }
    } else {
      sink_.Add(f.Written("label") ? f.KeyPos("label") : v.pos, Child(v.path, "label"),
                f.Written("label") ? "must not be empty"
                                   : "required field is missing (write label: key=value)");
    }
    if (auto q = f.Get("weight")) preference.weight = ReadCount(*q, sink_, 1, {}, 100).value_or(1);
    if (sink_.size() != errors) return std::nullopt;
    return preference;
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
  std::optional<std::vector<YAML::Node>> documents = internal::LoadDocuments(text, sink);
  if (!documents) return;
  JobParser parser(options, sink);
  auto not_a_job = [&](const YAML::Node& node, Pos pos) {
    sink.Add(pos, "",
             fmt::format("expected a job (a mapping with kind: Job), found {}", Describe(node)));
  };
  for (const YAML::Node& document : *documents) {
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

ParseOutput ParseJobsWithDiagnostics(std::string_view text, const ParseOptions& options) {
  Sink sink(options.file_name);
  std::vector<ParsedJob> jobs;
  internal::ReadGuarded(sink, "spec", [&] {
    ParseText(text, options, sink, jobs);
    if (sink.size() == 0 && jobs.empty()) {
      sink.Add(Pos{}, "", "no job found; write one job per YAML document (kind: Job, ...)");
    }
    std::map<std::string, std::size_t> by_name;
    CheckNames(jobs, by_name, sink);
    CheckCycles(jobs, ResolveDependencies(jobs, by_name, sink), sink);
  });
  ParseOutput out;
  out.diagnostics = sink.TakeSorted();
  if (out.diagnostics.empty()) {
    out.jobs.reserve(jobs.size());
    for (ParsedJob& job : jobs) out.jobs.push_back(std::move(job.spec));
  }
  return out;
}

Result<std::vector<model::JobSpec>> ParseJobs(std::string_view text, const ParseOptions& options) {
  ParseOutput out = ParseJobsWithDiagnostics(text, options);
  if (out.diagnostics.empty()) return std::move(out.jobs);
  return DiagnosticsError(out.diagnostics, options.file_name);
}

}  // namespace drover::spec
