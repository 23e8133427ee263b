#include "drover/spec/job_parser.h"

#include <fmt/format.h>

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
#include "drover/workflow/expression.h"
#include "drover/workflow/trials.h"

namespace drover::spec::internal {
namespace {

using workflow::Reference;

// A sweep expands to at most this many trials.
constexpr std::int64_t kMaxTrials = 1000;

// ---------------------------------------------------------------------------------------------
// Rules on values.

std::string CheckEnvName(const std::string& name) {
  if (workflow::IsIdentifier(name)) return "";
  return fmt::format(
      "invalid environment variable name '{}': use letters, digits and '_', not starting with a "
      "digit",
      name);
}

// Fields every job mapping admits; the forms add their own (JobKeys).
const std::vector<std::string>& CommonKeys() {
  static const std::vector<std::string> kKeys = {
      "name",      "owner",          "team",   "queue",         "priority", "command",
      "script",    "working_dir",    "env",    "resources",     "workers",  "min_workers",
      "placement", "depends_on",     "if",     "inputs",        "outputs",  "timeout",
      "retry",     "checkpoint_dir", "resume", "interruptible", "image"};
  return kKeys;
}

std::vector<std::string> JobKeys(JobForm form) {
  std::vector<std::string> keys;
  switch (form) {
    case JobForm::kJob:
      keys = {"kind"};
      keys.insert(keys.end(), CommonKeys().begin(), CommonKeys().end());
      keys.insert(keys.begin() + 6, "pipeline");
      return keys;
    case JobForm::kCronJob:
      keys = CommonKeys();
      keys.insert(keys.begin() + 5, "pipeline");
      return keys;
    case JobForm::kStage:
      keys = CommonKeys();
      keys.insert(keys.end(), {"matrix", "concurrency", "objective", "early_stopping"});
      return keys;
  }
  return keys;
}

const std::map<std::string, std::string>& TopLevelAliases() {
  static const std::map<std::string, std::string> kAliases = {
      {"cmd", "command"},
      {"args", "command"},
      {"argv", "command"},
      {"cwd", "working_dir"},
      {"workdir", "working_dir"},
      {"container_image", "image"},
      {"container", "image"},
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
      {"when", "if"},
      {"needs", "depends_on"},
      {"artifacts", "outputs"},
  };
  return kAliases;
}

// Output names: [a-z][a-z0-9_]{0,62} (they become DROVER_OUTPUT_<NAME>).
bool IsValidOutputName(std::string_view name) {
  if (name.empty() || name.size() > 63 || name[0] < 'a' || name[0] > 'z') return false;
  return std::all_of(name.begin(), name.end(), [](char c) {
    return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_';
  });
}

// Where a field's templates are replaced: parse-time ones only (paths), or also stage outputs
// at launch (command, script, env, if).
enum class TemplateScope { kParse, kLaunch };

// ---------------------------------------------------------------------------------------------
// One job.

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

class Parser {
 public:
  Parser(const ParseOptions& options, Sink& sink) : options_(options), sink_(sink) {}

  ParsedJob Parse(const YAML::Node& map, const std::string& prefix, JobForm form,
                  const model::JobSpec& base) {
    ParsedJob job;
    job.prefix = prefix;
    job.pos = PosOf(map.Mark());
    job.spec = base;
    prefix_ = prefix;
    model::JobSpec& spec = job.spec;
    Fields f(map, prefix, JobKeys(form), TopLevelAliases(), sink_);

    if (form == JobForm::kJob) {
      if (auto v = f.Get("kind")) {
        if (auto kind = ReadString(*v, sink_); kind && *kind != "Job") {
          sink_.Add(v->pos, v->path, UnsupportedKindMessage(*kind));
        }
      } else {
        Missing(f, job.pos, "kind", "required field is missing (write kind: Job)");
      }
    }

    if (auto v = f.Get("name")) {
      if (auto name = ReadString(*v, sink_)) {
        if (!IsValidName(*name)) {
          sink_.Add(v->pos, v->path, InvalidNameMessage("name", *name));
        } else if (form == JobForm::kStage && name->find('.') != std::string::npos) {
          sink_.Add(v->pos, v->path,
                    fmt::format("invalid stage name '{}': a stage name must not contain '.' "
                                "(the trials of a sweep are named STAGE.N)",
                                *name));
        } else {
          spec.name = *name;
          job.name_pos = v->pos;
        }
      }
    } else if (form == JobForm::kCronJob && !f.Written("name")) {
      job.name_pos = job.pos;  // the cron job's name
    } else {
      Missing(f, job.pos, "name", "required field is missing");
    }

    ReadJobDefaults(f, spec, sink_);
    if (auto v = f.Get("pipeline")) {
      if (auto pipeline = ReadString(*v, sink_)) {
        if (IsValidName(*pipeline)) {
          spec.pipeline = *pipeline;
        } else {
          sink_.Add(v->pos, v->path, InvalidNameMessage("pipeline name", *pipeline));
        }
      }
    }

    // The matrix first: the templates of the other fields are checked against its parameters.
    if (form == JobForm::kStage) ReadSweep(f, job);
    if (job.matrix && job.name_pos) {
      const std::string last =
          workflow::TrialJobName(spec.name, static_cast<int>(workflow::TrialCount(*job.matrix)));
      if (!IsValidName(last)) {
        sink_.Add(*job.name_pos, Path("name"),
                  fmt::format("too long for a sweep: its trials are named {} to {}, at most 63 "
                              "characters",
                              workflow::TrialJobName(spec.name, 1), last));
      }
    }

    ReadCommand(f, job);
    if (auto v = f.Get("command"); v && !spec.command.empty()) {
      ScanTemplates(*v, TemplateScope::kLaunch, job);
    }
    if (auto v = f.Get("script"); v && !spec.script.empty()) {
      ScanTemplates(*v, TemplateScope::kLaunch, job);
    }

    if (auto v = f.Get("working_dir")) {
      if (auto dir = ReadNonEmptyString(*v, sink_)) {
        spec.working_dir = ResolvePath(options_.base_dir, *dir);
        ScanTemplates(*v, TemplateScope::kParse, job);
      }
    } else if (!options_.base_dir.empty()) {
      spec.working_dir = ResolvePath(options_.base_dir, ".");  // the spec file's directory
    }
    if (auto v = f.Get("env")) {
      if (auto env = ReadStringMap(*v, sink_, CheckEnvName)) {
        spec.env = std::move(*env);
        ScanTemplates(*v, TemplateScope::kLaunch, job);
      }
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
    if (auto v = f.Get("if")) ReadIf(*v, job);
    if (auto v = f.Get("inputs")) ReadInputs(*v, job);
    if (auto v = f.Get("outputs")) ReadOutputs(*v, job);
    if (form == JobForm::kStage) CheckObjective(job);

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
        ScanTemplates(*v, TemplateScope::kParse, job);
      }
    }
    if (auto v = f.Get("resume")) {
      if (auto resume = ReadBool(*v, sink_)) {
        if (*resume && !f.Get("checkpoint_dir")) {
          sink_.Add(v->pos, v->path,
                    "requires checkpoint_dir (the directory each attempt checkpoints to and the "
                    "next resumes from)");
        }
        spec.resume = *resume;
      }
    }
    if (auto v = f.Get("interruptible")) spec.interruptible = ReadBool(*v, sink_).value_or(false);
    return job;
  }

 private:
  std::string Path(std::string_view key) const { return Child(prefix_, key); }

  // A required field that is absent (at the job) or empty (at its key).
  void Missing(const Fields& f, Pos job_pos, const std::string& key, std::string_view message) {
    ReportMissing(f, job_pos, prefix_, key, message, sink_);
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
        sink_.Add(f.KeyPos(key), Path(key), "must not be empty");
      } else {
        sink_.Add(job.pos, Path("command"),
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
      ReportMissing(f, v.pos, v.path, "level",
                    "required field is missing (the node label that names a domain, e.g. level: "
                    "rack)",
                    sink_);
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
      ReportMissing(f, v.pos, v.path, "label", "required field is missing (write label: key=value)",
                    sink_);
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

  // The templates in the scalars of `v` (a string, list or mapping of strings): malformed ones,
  // matrix parameters the stage lacks, and stage outputs where they are not replaced are
  // reported; stage output uses are recorded for CheckGroup.
  void ScanTemplates(const Value& v, TemplateScope scope, ParsedJob& job) {
    if (v.node.IsSequence()) {
      std::size_t i = 0;
      for (const YAML::Node& item : v.node) {
        const Pos pos = PosOf(item, v.pos);
        ScanTemplates(Value{item, Index(v.path, i++), pos, pos}, scope, job);
      }
      return;
    }
    if (v.node.IsMap()) {
      for (const auto& pair : v.node) {
        if (!pair.first.IsScalar()) continue;
        const Pos key_pos = PosOf(pair.first.Mark());
        ScanTemplates(Value{pair.second, Child(v.path, pair.first.Scalar()),
                            PosOf(pair.second, key_pos), key_pos},
                      scope, job);
      }
      return;
    }
    if (!v.node.IsScalar()) return;
    Result<std::vector<Reference>> refs = workflow::FindReferences(v.node.Scalar());
    if (!refs) {
      sink_.Add(v.pos, v.path, refs.error().message);
      return;
    }
    for (const Reference& ref : *refs) CheckReference(ref, v, scope, job);
  }

  void CheckReference(const Reference& ref, const Value& v, TemplateScope scope, ParsedJob& job) {
    if (ref.kind == Reference::Kind::kStageOutput) {
      if (scope == TemplateScope::kParse) {
        sink_.Add(v.pos, v.path,
                  fmt::format("{} is not available here: upstream outputs are replaced only in "
                              "command, script, env and if",
                              ref.text));
      } else {
        job.output_uses.push_back(OutputUse{ref.stage, ref.output, v.path, v.pos});
      }
      return;
    }
    if (!matrix_written_) {
      sink_.Add(v.pos, v.path,
                fmt::format("{} needs a matrix: only the stages of a pipeline that have a matrix "
                            "have parameters and trials",
                            ref.text));
      return;
    }
    if (ref.kind == Reference::Kind::kMatrix && job.matrix &&
        std::find(matrix_params_.begin(), matrix_params_.end(), ref.param) ==
            matrix_params_.end()) {
      std::string message = fmt::format("unknown matrix parameter '{}' in {}", ref.param, ref.text);
      if (auto s = Suggest(ref.param, matrix_params_)) {
        message += fmt::format("; did you mean '{}'?", *s);
      } else {
        message += fmt::format("; the matrix has {}", Join(matrix_params_, ", "));
      }
      sink_.Add(v.pos, v.path, std::move(message));
    }
  }

  // depends_on: each item a name (condition succeeded) or a one-key mapping {name: condition}.
  void ReadDependencies(const Value& v, ParsedJob& job) {
    std::optional<std::vector<Value>> items =
        ReadList(v, "a list of names or {name: condition} mappings", sink_);
    if (!items) return;
    std::set<std::string> seen;
    for (const Value& item : *items) {
      model::Dependency dependency;
      YAML::Node key;
      YAML::Node value;
      if (item.node.IsMap() && item.node.size() == 1) {
        for (const auto& pair : item.node) {
          key = pair.first;
          value = pair.second;
        }
      }
      if (item.node.IsScalar()) {
        dependency.name = item.node.Scalar();
      } else if (key.IsDefined() && key.IsScalar()) {
        dependency.name = key.Scalar();
        const Value condition{value, Child(item.path, dependency.name), PosOf(value, item.pos),
                              item.pos};
        std::optional<model::DependencyCondition> parsed = ReadCondition(condition);
        if (!parsed) continue;
        dependency.condition = *parsed;
      } else {
        sink_.Add(item.pos, item.path,
                  fmt::format("expected a name or a one-key mapping {{name: condition}}, found {}",
                              Describe(item.node)));
        continue;
      }
      if (!seen.insert(dependency.name).second) {
        sink_.Add(item.pos, item.path, fmt::format("duplicate dependency '{}'", dependency.name));
        continue;
      }
      job.dependencies.push_back(DependencyUse{dependency, item.path, item.pos, false});
      job.spec.depends_on.push_back(std::move(dependency));
    }
  }

  std::optional<model::DependencyCondition> ReadCondition(const Value& v) {
    if (!v.node.IsDefined() || v.node.IsNull()) {
      sink_.Add(v.pos, v.path, "must not be empty; write succeeded, failed, done or skipped");
      return std::nullopt;
    }
    std::optional<std::string> name = ReadString(v, sink_);
    if (!name) return std::nullopt;
    if (auto condition = model::ParseDependencyCondition(*name)) return condition;
    static const std::vector<std::string> kNames = {"succeeded", "failed", "done", "skipped"};
    std::string message = fmt::format("unknown condition '{}'", *name);
    if (auto s = Suggest(*name, kNames)) message += fmt::format(" (did you mean '{}'?)", *s);
    message += "; expected succeeded, failed, done or skipped";
    sink_.Add(v.pos, v.path, std::move(message));
    return std::nullopt;
  }

  void ReadIf(const Value& v, ParsedJob& job) {
    std::optional<std::string> text = ReadNonEmptyString(v, sink_);
    if (!text) return;
    if (Result<workflow::Condition> condition = workflow::ParseCondition(*text); !condition) {
      sink_.Add(v.pos, v.path, condition.error().message);
      return;
    }
    job.spec.run_if = *text;
    ScanTemplates(v, TemplateScope::kLaunch, job);
  }

  // inputs: each {path: P} or {from: STAGE.OUTPUT}; `from` implies a dependency on STAGE.
  void ReadInputs(const Value& v, ParsedJob& job) {
    std::optional<std::vector<Value>> items =
        ReadList(v, "a list of inputs ({path: P} or {from: STAGE.OUTPUT})", sink_);
    if (!items) return;
    for (const Value& item : *items) {
      if (!ExpectMap(item, sink_)) continue;
      static const std::vector<std::string> kKeys = {"path", "from"};
      static const std::map<std::string, std::string> kAliases = {{"file", "path"},
                                                                  {"dir", "path"}};
      Fields f(item.node, item.path, kKeys, kAliases, sink_);
      const std::optional<Value> path = f.Get("path");
      const std::optional<Value> from = f.Get("from");
      if (path.has_value() == from.has_value()) {
        sink_.Add(item.pos, item.path,
                  "give exactly one of path (a file or directory that must exist) or from (an "
                  "upstream output, STAGE.OUTPUT)");
        continue;
      }
      if (path) {
        if (auto text = ReadNonEmptyString(*path, sink_)) {
          job.spec.inputs.push_back(
              {.path = ResolvePath(options_.base_dir, *text), .from_stage = "", .from_output = ""});
          ScanTemplates(*path, TemplateScope::kParse, job);
        }
        continue;
      }
      std::optional<std::string> text = ReadNonEmptyString(*from, sink_);
      if (!text) continue;
      const std::size_t dot = text->rfind('.');
      if (dot == std::string::npos || dot == 0 || dot + 1 == text->size()) {
        sink_.Add(from->pos, from->path,
                  fmt::format("expected STAGE.OUTPUT, e.g. preprocess.dataset, found '{}'", *text));
        continue;
      }
      const std::string stage = text->substr(0, dot);
      job.spec.inputs.push_back(
          {.path = "", .from_stage = stage, .from_output = text->substr(dot + 1)});
      job.output_uses.push_back(OutputUse{stage, text->substr(dot + 1), from->path, from->pos});
      AddImpliedDependency(stage, *from, job);
    }
  }

  // An input from `stage` needs it to succeed: depends on it with `succeeded` unless depends_on
  // already does (any other condition there is an error: the output would never exist).
  void AddImpliedDependency(const std::string& stage, const Value& from, ParsedJob& job) {
    for (const DependencyUse& use : job.dependencies) {
      if (use.dependency.name != stage) continue;
      if (use.dependency.condition != model::DependencyCondition::kSucceeded) {
        sink_.Add(
            from.pos, from.path,
            fmt::format("needs '{}' to succeed (only then is its output published), but "
                        "depends_on waits for {}: {}",
                        stage, stage, model::DependencyConditionName(use.dependency.condition)));
      }
      return;
    }
    const model::Dependency dependency{stage, model::DependencyCondition::kSucceeded};
    job.dependencies.push_back(DependencyUse{dependency, from.path, from.pos, true});
    job.spec.depends_on.push_back(dependency);
  }

  // outputs: each {name: N, path: P} (a published file or directory) or {name: N} (a value).
  void ReadOutputs(const Value& v, ParsedJob& job) {
    std::optional<std::vector<Value>> items =
        ReadList(v, "a list of outputs ({name: N, path: P} or {name: N})", sink_);
    if (!items) return;
    std::map<std::string, int> lines;  // name -> line of its first declaration
    for (const Value& item : *items) {
      if (!ExpectMap(item, sink_)) continue;
      static const std::vector<std::string> kKeys = {"name", "path"};
      static const std::map<std::string, std::string> kAliases = {{"file", "path"},
                                                                  {"dir", "path"}};
      Fields f(item.node, item.path, kKeys, kAliases, sink_);
      model::OutputSpec output;
      const std::optional<Value> name = f.Get("name");
      if (!name) {
        ReportMissing(f, item.pos, item.path, "name", "required field is missing", sink_);
        continue;
      }
      std::optional<std::string> text = ReadString(*name, sink_);
      if (!text) continue;
      if (!IsValidOutputName(*text)) {
        sink_.Add(name->pos, name->path,
                  fmt::format("invalid output name '{}': use 1 to 63 lowercase letters, digits "
                              "and '_', starting with a letter",
                              *text));
        continue;
      }
      if (auto [it, inserted] = lines.emplace(*text, name->pos.line); !inserted) {
        sink_.Add(name->pos, name->path,
                  fmt::format("duplicate output '{}'; the first is at line {}", *text, it->second));
        continue;
      }
      output.name = *text;
      if (auto path = f.Get("path")) {
        std::optional<std::string> p = ReadNonEmptyString(*path, sink_);
        if (!p) continue;
        output.path = ResolvePath(options_.base_dir, *p);
        ScanTemplates(*path, TemplateScope::kParse, job);
        if (matrix_written_ && !NamesTrial(*p)) {
          sink_.Add(path->pos, path->path,
                    "every trial of the sweep would publish to this one path; put ${{ trial }} "
                    "(or a matrix parameter) in it");
        }
      }
      job.spec.outputs.push_back(std::move(output));
    }
  }

  // True when `text` holds a ${{ trial }} or ${{ matrix.P }} template (differs per trial).
  static bool NamesTrial(const std::string& text) {
    Result<std::vector<Reference>> refs = workflow::FindReferences(text);
    return refs && std::any_of(refs->begin(), refs->end(), [](const Reference& ref) {
             return ref.kind != Reference::Kind::kStageOutput;
           });
  }

  // matrix, concurrency, objective, early_stopping.
  void ReadSweep(const Fields& f, ParsedJob& job) {
    model::TrialSpec& trial = job.spec.trial;
    matrix_written_ = f.Written("matrix");
    if (auto v = f.Get("matrix")) job.matrix = ReadMatrix(*v);
    auto only_with = [&](const std::string& key, std::string_view needs) {
      sink_.Add(f.KeyPos(key), Path(key), fmt::format("is only valid with {}", needs));
    };
    if (auto v = f.Get("concurrency")) {
      if (!matrix_written_) {
        only_with("concurrency", "matrix (it bounds the trials released at once)");
      } else {
        trial.concurrency = ReadCount(*v, sink_, 1).value_or(0);
      }
    }
    if (auto v = f.Get("objective")) {
      if (!matrix_written_) {
        only_with("objective", "matrix (it picks the best trial)");
      } else {
        ReadObjective(*v, trial);
      }
    }
    if (auto v = f.Get("early_stopping")) {
      if (!f.Written("objective")) {
        only_with("early_stopping", "objective (it stops the sweep at an objective value)");
      } else if (ExpectMap(*v, sink_)) {
        static const std::vector<std::string> kKeys = {"stop_at"};
        Fields e(v->node, v->path, kKeys, {}, sink_);
        if (auto q = e.Get("stop_at")) {
          trial.stop_at = ReadNumber(*q);
        } else {
          ReportMissing(e, v->pos, v->path, "stop_at",
                        "required field is missing (the objective value that ends the sweep, "
                        "e.g. stop_at: 0.99)",
                        sink_);
        }
      }
    }
  }

  // {metric: OUTPUT, goal: maximize | minimize}; the metric is checked against the outputs later.
  void ReadObjective(const Value& v, model::TrialSpec& trial) {
    if (!ExpectMap(v, sink_)) return;
    static const std::vector<std::string> kKeys = {"metric", "goal"};
    static const std::map<std::string, std::string> kAliases = {{"output", "metric"},
                                                                {"direction", "goal"}};
    Fields f(v.node, v.path, kKeys, kAliases, sink_);
    if (auto q = f.Get("metric")) {
      if (auto metric = ReadString(*q, sink_)) {
        trial.objective = *metric;
        metric_ = *q;
      }
    } else {
      ReportMissing(f, v.pos, v.path, "metric",
                    "required field is missing (the value output that ranks the trials, e.g. "
                    "metric: accuracy)",
                    sink_);
    }
    if (auto q = f.Get("goal")) {
      if (auto goal = ReadString(*q, sink_)) {
        if (*goal == "maximize" || *goal == "minimize") {
          trial.maximize = *goal == "maximize";
        } else {
          static const std::vector<std::string> kGoals = {"maximize", "minimize"};
          std::string message = fmt::format("unknown goal '{}'", *goal);
          if (auto s = Suggest(*goal, kGoals)) message += fmt::format(" (did you mean '{}'?)", *s);
          sink_.Add(q->pos, q->path, message + "; expected maximize or minimize");
        }
      }
    }
  }

  // The objective's metric names a value output of the stage.
  void CheckObjective(ParsedJob& job) {
    if (!metric_) return;
    const std::string& metric = job.spec.trial.objective;
    std::vector<std::string> names;
    for (const model::OutputSpec& output : job.spec.outputs) {
      if (output.name != metric) {
        names.push_back(output.name);
      } else if (!output.path.empty()) {
        sink_.Add(metric_->pos, metric_->path,
                  fmt::format("output '{}' is published at a path; the metric must be a value "
                              "output (declare it as {{name: {}}}, without path)",
                              metric, metric));
        return;
      } else {
        return;
      }
    }
    std::string message =
        fmt::format("unknown output '{}' (the metric is a value output of this stage)", metric);
    if (auto s = Suggest(metric, names)) message += fmt::format("; did you mean '{}'?", *s);
    sink_.Add(metric_->pos, metric_->path, std::move(message));
  }

  std::optional<double> ReadNumber(const Value& v) {
    if (v.node.IsScalar()) {
      if (auto number = workflow::ParseNumber(v.node.Scalar())) return number;
    }
    sink_.Add(v.pos, v.path, fmt::format("expected a number, found {}", Describe(v.node)));
    return std::nullopt;
  }

  // Exactly one of grid, list or random; at most kMaxTrials sets.
  std::optional<workflow::Matrix> ReadMatrix(const Value& v) {
    if (!ExpectMap(v, sink_)) return std::nullopt;
    const std::size_t errors = sink_.size();
    static const std::vector<std::string> kKeys = {"grid", "list", "random"};
    static const std::map<std::string, std::string> kAliases = {
        {"values", "grid"}, {"product", "grid"}, {"include", "list"}, {"sample", "random"}};
    Fields f(v.node, v.path, kKeys, kAliases, sink_);
    const int given = f.Written("grid") + f.Written("list") + f.Written("random");
    if (given != 1) {
      if (sink_.size() == errors) {
        sink_.Add(v.pos, v.path,
                  "give exactly one of grid (every combination), list (the parameter sets) or "
                  "random (sets drawn at random)");
      }
      return std::nullopt;
    }
    workflow::Matrix matrix;
    if (auto q = f.Get("grid")) {
      ReadGrid(*q, matrix);
    } else if (auto l = f.Get("list")) {
      ReadParamList(*l, matrix);
    } else if (auto r = f.Get("random")) {
      ReadRandom(*r, matrix);
    } else {
      const std::string key = f.Written("grid") ? "grid" : f.Written("list") ? "list" : "random";
      sink_.Add(f.KeyPos(key), Child(v.path, key), "must not be empty");
    }
    if (sink_.size() != errors) return std::nullopt;
    if (const std::int64_t count = workflow::TrialCount(matrix); count > kMaxTrials) {
      sink_.Add(v.pos, v.path,
                fmt::format("expands to {} trials; a sweep has at most {}", count, kMaxTrials));
      return std::nullopt;
    }
    return matrix;
  }

  // A parameter name as a mapping key; reports an invalid one.
  bool CheckParamName(const YAML::Node& key, const std::string& path) {
    if (key.IsScalar() && workflow::IsIdentifier(key.Scalar())) return true;
    sink_.Add(PosOf(key.Mark()), path,
              fmt::format("invalid parameter name {}: use letters, digits and '_', not starting "
                          "with a digit",
                          Describe(key)));
    return false;
  }

  // {param: [values]}.
  void ReadGrid(const Value& v, workflow::Matrix& matrix) {
    if (!ExpectMap(v, sink_)) return;
    matrix.kind = workflow::Matrix::Kind::kGrid;
    for (const auto& pair : v.node) {
      const std::string name = pair.first.IsScalar() ? pair.first.Scalar() : "";
      const std::string path = Child(v.path, name);
      if (!CheckParamName(pair.first, path)) continue;
      const Pos key_pos = PosOf(pair.first.Mark());
      if (matrix.grid.count(name)) {
        sink_.Add(key_pos, path, fmt::format("duplicate parameter '{}'", name));
        continue;
      }
      const Value values{pair.second, path, PosOf(pair.second, key_pos), key_pos};
      if (!pair.second.IsDefined() || pair.second.IsNull()) {
        sink_.Add(key_pos, path, "must not be empty; give the parameter's values as a list");
        continue;
      }
      std::optional<std::vector<std::string>> list = ReadStringList(values, sink_);
      if (!list) continue;
      if (list->empty()) {
        sink_.Add(values.pos, path, "must not be empty; give the parameter's values as a list");
        continue;
      }
      matrix.grid[name] = std::move(*list);
    }
    for (const auto& [name, values] : matrix.grid) matrix_params_.push_back(name);
  }

  // [{param: value}]: every set names the same parameters.
  void ReadParamList(const Value& v, workflow::Matrix& matrix) {
    std::optional<std::vector<Value>> items =
        ReadList(v, "a list of parameter sets ({param: value})", sink_);
    if (!items) return;
    matrix.kind = workflow::Matrix::Kind::kList;
    if (items->empty()) {
      sink_.Add(v.pos, v.path, "must not be empty");
      return;
    }
    auto names = [](const workflow::ParamSet& set) {
      std::vector<std::string> out;
      for (const auto& [name, value] : set) out.push_back(name);
      return out;
    };
    for (const Value& item : *items) {
      if (!ExpectMap(item, sink_)) continue;
      bool ok = true;
      for (const auto& pair : item.node) {
        ok = CheckParamName(pair.first, Child(item.path, pair.first.IsScalar() ? pair.first.Scalar()
                                                                               : std::string())) &&
             ok;
      }
      std::optional<workflow::ParamSet> set = ReadStringMap(item, sink_, NoKeyCheck);
      if (!ok || !set) continue;
      if (set->empty()) {
        sink_.Add(item.pos, item.path, "must not be empty");
        continue;
      }
      if (!matrix.list.empty() && names(*set) != names(matrix.list.front())) {
        sink_.Add(item.pos, item.path,
                  fmt::format("every set names the same parameters as the first ({}), found {}",
                              Join(names(matrix.list.front()), ", "), Join(names(*set), ", ")));
        continue;
      }
      matrix.list.push_back(std::move(*set));
    }
    if (!matrix.list.empty()) matrix_params_ = names(matrix.list.front());
  }

  // {count: N, seed: S, params: {p: {uniform: [lo, hi]} | {log_uniform: [lo, hi]} |
  // {choice: [values]}}}.
  void ReadRandom(const Value& v, workflow::Matrix& matrix) {
    if (!ExpectMap(v, sink_)) return;
    matrix.kind = workflow::Matrix::Kind::kRandom;
    static const std::vector<std::string> kKeys = {"count", "seed", "params"};
    static const std::map<std::string, std::string> kAliases = {{"trials", "count"},
                                                                {"samples", "count"}};
    Fields f(v.node, v.path, kKeys, kAliases, sink_);
    for (const char* key : {"count", "params"}) {
      if (!f.Get(key)) {
        ReportMissing(f, v.pos, v.path, key, "required field is missing", sink_);
      }
    }
    if (auto q = f.Get("count")) matrix.count = ReadCount(*q, sink_, 1).value_or(0);
    if (auto q = f.Get("seed")) matrix.seed = ReadCount(*q, sink_, 0).value_or(0);
    std::optional<Value> params = f.Get("params");
    if (!params || !ExpectMap(*params, sink_)) return;
    for (const auto& pair : params->node) {
      const std::string name = pair.first.IsScalar() ? pair.first.Scalar() : "";
      const std::string path = Child(params->path, name);
      if (!CheckParamName(pair.first, path)) continue;
      const Pos key_pos = PosOf(pair.first.Mark());
      if (auto d =
              ReadDistribution(Value{pair.second, path, PosOf(pair.second, key_pos), key_pos})) {
        matrix.params[name] = std::move(*d);
      }
    }
    for (const auto& [name, d] : matrix.params) matrix_params_.push_back(name);
  }

  std::optional<workflow::Distribution> ReadDistribution(const Value& v) {
    if (!v.node.IsDefined() || v.node.IsNull() || !ExpectMap(v, sink_)) {
      if (!v.node.IsDefined() || v.node.IsNull()) {
        sink_.Add(v.key_pos, v.path,
                  "must not be empty; write {uniform: [lo, hi]}, {log_uniform: [lo, hi]} or "
                  "{choice: [values]}");
      }
      return std::nullopt;
    }
    static const std::vector<std::string> kKeys = {"uniform", "log_uniform", "choice"};
    static const std::map<std::string, std::string> kAliases = {{"loguniform", "log_uniform"},
                                                                {"log", "log_uniform"},
                                                                {"choices", "choice"},
                                                                {"values", "choice"},
                                                                {"range", "uniform"}};
    const std::size_t errors = sink_.size();
    Fields f(v.node, v.path, kKeys, kAliases, sink_);
    std::vector<Value> given;
    for (const std::string& key : kKeys) {
      if (auto q = f.Get(key)) given.push_back(*q);
    }
    if (given.size() != 1) {
      if (sink_.size() == errors) {
        sink_.Add(v.pos, v.path,
                  "give exactly one of uniform: [lo, hi], log_uniform: [lo, hi] or choice: "
                  "[values]");
      }
      return std::nullopt;
    }
    workflow::Distribution d;
    const Value& q = given.front();
    if (f.Get("choice")) {
      d.kind = workflow::Distribution::Kind::kChoice;
      std::optional<std::vector<std::string>> choices = ReadStringList(q, sink_);
      if (!choices) return std::nullopt;
      if (choices->empty()) {
        sink_.Add(q.pos, q.path, "must not be empty");
        return std::nullopt;
      }
      d.choices = std::move(*choices);
      return d;
    }
    const bool log = f.Get("log_uniform").has_value();
    d.kind =
        log ? workflow::Distribution::Kind::kLogUniform : workflow::Distribution::Kind::kUniform;
    std::optional<std::vector<Value>> bounds = ReadList(q, "a list [lo, hi]", sink_);
    if (!bounds) return std::nullopt;
    if (bounds->size() != 2) {
      sink_.Add(q.pos, q.path, fmt::format("expected [lo, hi], found {} values", bounds->size()));
      return std::nullopt;
    }
    std::optional<double> lo = ReadNumber((*bounds)[0]);
    std::optional<double> hi = ReadNumber((*bounds)[1]);
    if (!lo || !hi) return std::nullopt;
    if (!(*lo < *hi)) {
      sink_.Add(q.pos, q.path,
                fmt::format("lo must be less than hi, found [{}, {}]", workflow::FormatNumber(*lo),
                            workflow::FormatNumber(*hi)));
      return std::nullopt;
    }
    if (log && *lo <= 0) {
      sink_.Add(q.pos, q.path, "lo must be greater than 0 for log_uniform");
      return std::nullopt;
    }
    d.lo = *lo;
    d.hi = *hi;
    return d;
  }

  void ReadRetry(const std::optional<Value>& v, model::RetryPolicy& retry) {
    if (!v || !ExpectMap(*v, sink_)) return;
    static const std::vector<std::string> kKeys = {"max_attempts", "backoff", "on"};
    static const std::map<std::string, std::string> kAliases = {{"attempts", "max_attempts"},
                                                                {"retries", "max_attempts"},
                                                                {"delay", "backoff"},
                                                                {"when", "on"},
                                                                {"retry_on", "on"}};
    Fields f(v->node, v->path, kKeys, kAliases, sink_);
    if (auto q = f.Get("max_attempts")) retry.max_attempts = ReadCount(*q, sink_, 1).value_or(1);
    if (auto q = f.Get("backoff")) {
      retry.backoff_ms = ReadQuantity<DurationMs>(*q, sink_, &ParseDuration, "10s").value_or(0);
    }
    if (auto q = f.Get("on")) ReadFailureKinds(*q, retry);
  }

  void ReadFailureKinds(const Value& v, model::RetryPolicy& retry) {
    std::optional<std::vector<Value>> items =
        ReadList(v, "a list of failure kinds (exit, node_lost, preempted, timeout)", sink_);
    if (!items) return;
    if (items->empty()) {
      sink_.Add(v.pos, v.path, "must not be empty; leave on out to retry every kind of failure");
      return;
    }
    static const std::vector<std::string> kNames = {"exit", "node_lost", "preempted", "timeout"};
    std::vector<model::FailureKind> kinds;
    for (const Value& item : *items) {
      std::optional<std::string> name = ReadString(item, sink_);
      if (!name) continue;
      std::optional<model::FailureKind> kind = model::ParseFailureKind(*name);
      if (!kind) {
        std::string message = fmt::format("unknown failure kind '{}'", *name);
        if (auto s = Suggest(*name, kNames)) message += fmt::format(" (did you mean '{}'?)", *s);
        sink_.Add(item.pos, item.path,
                  message + "; expected exit, node_lost, preempted or timeout");
      } else if (std::find(kinds.begin(), kinds.end(), *kind) != kinds.end()) {
        sink_.Add(item.pos, item.path, fmt::format("duplicate failure kind '{}'", *name));
      } else {
        kinds.push_back(*kind);
      }
    }
    retry.on = std::move(kinds);
  }

  const ParseOptions& options_;
  Sink& sink_;
  std::string prefix_;
  bool matrix_written_ = false;
  std::vector<std::string> matrix_params_;  // of a valid matrix
  std::optional<Value> metric_;             // objective.metric, when read
};

// ---------------------------------------------------------------------------------------------
// Checks across the jobs of one file or the stages of one pipeline. `what` is "job" or "stage".

void CheckNames(const std::vector<ParsedJob>& jobs, std::string_view what,
                std::map<std::string, std::size_t>& by_name, Sink& sink) {
  for (std::size_t i = 0; i < jobs.size(); ++i) {
    if (!jobs[i].name_pos) continue;
    auto [it, inserted] = by_name.emplace(jobs[i].spec.name, i);
    if (!inserted) {
      sink.Add(*jobs[i].name_pos, Child(jobs[i].prefix, "name"),
               fmt::format("duplicate {} name '{}'; the first is at line {}", what,
                           jobs[i].spec.name, jobs[it->second].name_pos->line));
    }
  }
}

std::vector<std::string> Names(const std::map<std::string, std::size_t>& by_name) {
  std::vector<std::string> names;
  for (const auto& [name, index] : by_name) names.push_back(name);
  return names;
}

// Reports self and unknown dependencies; returns, per job, the indices of the jobs it depends
// on. Implied dependencies (inputs) with those problems are left to CheckOutputUses.
std::vector<std::vector<std::size_t>> ResolveDependencies(
    const std::vector<ParsedJob>& jobs, const std::map<std::string, std::size_t>& by_name,
    bool pipeline, Sink& sink) {
  const std::vector<std::string> names = Names(by_name);
  std::vector<std::vector<std::size_t>> edges(jobs.size());
  for (std::size_t i = 0; i < jobs.size(); ++i) {
    for (const DependencyUse& dep : jobs[i].dependencies) {
      const std::string& name = dep.dependency.name;
      const bool self = jobs[i].name_pos && name == jobs[i].spec.name;
      auto it = by_name.find(name);
      if (dep.implied && (self || it == by_name.end())) continue;
      if (self) {
        sink.Add(dep.pos, dep.path,
                 fmt::format("a {} cannot depend on itself", pipeline ? "stage" : "job"));
        continue;
      }
      if (it == by_name.end()) {
        std::string message =
            pipeline
                ? fmt::format("unknown stage '{}' (dependencies name stages of the same pipeline)",
                              name)
                : fmt::format("unknown job '{}' (dependencies name jobs in the same file)", name);
        if (auto s = Suggest(name, names)) message += fmt::format("; did you mean '{}'?", *s);
        sink.Add(dep.pos, dep.path, std::move(message));
        continue;
      }
      edges[i].push_back(it->second);
    }
  }
  return edges;
}

// Finds dependency cycles with a depth-first search (iterative: files may hold many jobs) and
// reports each once, at the dependency of the cycle's first job in file order.
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
      for (const DependencyUse& dep : first.dependencies) {
        if (dep.dependency.name == target) {
          sink.Add(dep.pos, dep.path, fmt::format("dependency cycle: {}", Join(names, " -> ")));
          break;
        }
      }
    }
  }
}

// True when job `to` is reachable from job `from` along dependencies.
bool IsUpstream(const std::vector<std::vector<std::size_t>>& edges, std::size_t from,
                std::size_t to) {
  std::vector<bool> seen(edges.size(), false);
  std::vector<std::size_t> stack = {from};
  while (!stack.empty()) {
    const std::size_t u = stack.back();
    stack.pop_back();
    for (std::size_t v : edges[u]) {
      if (v == to) return true;
      if (!seen[v]) {
        seen[v] = true;
        stack.push_back(v);
      }
    }
  }
  return false;
}

// Each `${{ stages.S.outputs.N }}` and input `from: S.N` names an upstream S (directly or
// transitively) that declares N; a sweep's outputs only when it has an objective.
void CheckOutputUses(const std::vector<ParsedJob>& jobs,
                     const std::map<std::string, std::size_t>& by_name,
                     const std::vector<std::vector<std::size_t>>& edges, bool pipeline,
                     Sink& sink) {
  const std::string_view what = pipeline ? "stage" : "job";
  const std::vector<std::string> names = Names(by_name);
  for (std::size_t i = 0; i < jobs.size(); ++i) {
    for (const OutputUse& use : jobs[i].output_uses) {
      auto it = by_name.find(use.stage);
      if (it == by_name.end()) {
        std::string message = fmt::format("unknown {} '{}'", what, use.stage);
        if (auto s = Suggest(use.stage, names)) message += fmt::format("; did you mean '{}'?", *s);
        sink.Add(use.pos, use.path, std::move(message));
        continue;
      }
      if (it->second == i) {
        sink.Add(use.pos, use.path, fmt::format("a {} cannot use its own outputs", what));
        continue;
      }
      if (!IsUpstream(edges, i, it->second)) {
        sink.Add(use.pos, use.path,
                 fmt::format("{} '{}' is not upstream of this {}; add it to depends_on", what,
                             use.stage, what));
        continue;
      }
      const ParsedJob& upstream = jobs[it->second];
      std::vector<std::string> outputs;
      for (const model::OutputSpec& output : upstream.spec.outputs) outputs.push_back(output.name);
      if (std::find(outputs.begin(), outputs.end(), use.output) == outputs.end()) {
        std::string message =
            fmt::format("{} '{}' has no output '{}'", what, use.stage, use.output);
        if (outputs.empty()) {
          message += "; it declares none";
        } else if (auto s = Suggest(use.output, outputs)) {
          message += fmt::format("; did you mean '{}'?", *s);
        } else {
          message += fmt::format("; it declares {}", Join(outputs, ", "));
        }
        sink.Add(use.pos, use.path, std::move(message));
        continue;
      }
      if (upstream.matrix && upstream.spec.trial.objective.empty()) {
        sink.Add(use.pos, use.path,
                 fmt::format("stage '{}' is a sweep without an objective: add one to choose the "
                             "trial whose outputs stand for the sweep",
                             use.stage));
      }
    }
  }
}

// `text` with the trial's parameters and index in place; stage outputs stay for the launch.
std::string RenderTrial(const std::string& text, const workflow::ParamSet& params, int index) {
  Result<std::string> rendered =
      workflow::Render(text, [&](const Reference& ref) -> std::optional<std::string> {
        switch (ref.kind) {
          case Reference::Kind::kMatrix:
            if (auto it = params.find(ref.param); it != params.end()) return it->second;
            return std::nullopt;
          case Reference::Kind::kTrial:
            return std::to_string(index);
          case Reference::Kind::kStageOutput:
            return ref.text;
        }
        return std::nullopt;
      });
  return rendered.value_or(text);  // checked when parsed: every reference has a value
}

}  // namespace

std::string ResolvePath(const std::string& base_dir, const std::string& path) {
  if (base_dir.empty()) return path;
  std::filesystem::path joined = std::filesystem::path(base_dir) / std::filesystem::path(path);
  std::string out = joined.lexically_normal().generic_string();
  while (out.size() > 1 && out.back() == '/') out.pop_back();
  return out;
}

void ReportMissing(const Fields& f, Pos parent, const std::string& prefix, const std::string& key,
                   std::string_view message, Sink& sink) {
  if (f.Written(key)) {
    sink.Add(f.KeyPos(key), Child(prefix, key), "must not be empty");
  } else {
    sink.Add(parent, Child(prefix, key), std::string(message));
  }
}

void ReadJobDefaults(const Fields& f, model::JobSpec& spec, Sink& sink) {
  if (auto v = f.Get("owner")) spec.owner = ReadString(*v, sink).value_or(spec.owner);
  if (auto v = f.Get("team")) spec.team = ReadString(*v, sink).value_or(spec.team);
  if (auto v = f.Get("queue")) spec.queue = ReadNonEmptyString(*v, sink).value_or(spec.queue);
  if (auto v = f.Get("image")) {
    if (auto image = ReadNonEmptyString(*v, sink)) {
      if (image->find_first_of(" \t\r\n") == std::string::npos) {
        spec.image = *image;
      } else {
        sink.Add(v->pos, v->path,
                 fmt::format("invalid image '{}': an image reference has no spaces, e.g. "
                             "nvcr.io/nvidia/pytorch:24.05-py3",
                             *image));
      }
    }
  }
  if (auto v = f.Get("priority")) {
    std::optional<std::string> name = ReadString(*v, sink);
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
    sink.Add(v->pos, v->path, std::move(message));
  }
}

std::string UnsupportedKindMessage(std::string_view kind) {
  static const std::vector<std::string> kKinds = {"Job", "Pipeline", "CronJob"};
  std::string message = fmt::format("unsupported kind '{}'", kind);
  if (auto s = Suggest(kind, kKinds)) message += fmt::format(" (did you mean '{}'?)", *s);
  return message + "; expected Job, Pipeline or CronJob";
}

ParsedJob ParseJob(const YAML::Node& map, const std::string& prefix, JobForm form,
                   const model::JobSpec& base, const ParseOptions& options, Sink& sink) {
  return Parser(options, sink).Parse(map, prefix, form, base);
}

void CheckGroup(std::vector<ParsedJob>& jobs, bool pipeline, Sink& sink) {
  std::map<std::string, std::size_t> by_name;
  CheckNames(jobs, pipeline ? "stage" : "job", by_name, sink);
  const std::vector<std::vector<std::size_t>> edges =
      ResolveDependencies(jobs, by_name, pipeline, sink);
  CheckCycles(jobs, edges, sink);
  CheckOutputUses(jobs, by_name, edges, pipeline, sink);
}

std::vector<model::JobSpec> ExpandGroup(std::vector<ParsedJob>& jobs, const std::string& base_dir) {
  std::vector<model::JobSpec> specs;
  for (ParsedJob& job : jobs) {
    if (!job.matrix) {
      specs.push_back(std::move(job.spec));
      continue;
    }
    const std::vector<workflow::ParamSet> sets = workflow::Expand(*job.matrix);
    const int count = static_cast<int>(sets.size());
    auto path = [&](const std::string& text, const workflow::ParamSet& params, int index) {
      return text.empty() ? text : ResolvePath(base_dir, RenderTrial(text, params, index));
    };
    for (int index = 1; index <= count; ++index) {
      const workflow::ParamSet& params = sets[index - 1];
      model::JobSpec trial = job.spec;
      trial.name = workflow::TrialJobName(job.spec.name, index);
      trial.trial.index = index;
      trial.trial.count = count;
      trial.trial.params = params;
      for (std::string& arg : trial.command) arg = RenderTrial(arg, params, index);
      trial.script = RenderTrial(trial.script, params, index);
      for (auto& [name, value] : trial.env) value = RenderTrial(value, params, index);
      trial.run_if = RenderTrial(trial.run_if, params, index);
      trial.working_dir = path(trial.working_dir, params, index);
      trial.checkpoint_dir = path(trial.checkpoint_dir, params, index);
      for (model::InputSpec& input : trial.inputs) input.path = path(input.path, params, index);
      for (model::OutputSpec& output : trial.outputs) {
        output.path = path(output.path, params, index);
      }
      specs.push_back(std::move(trial));
    }
  }
  return specs;
}

}  // namespace drover::spec::internal
