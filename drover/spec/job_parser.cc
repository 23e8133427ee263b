#include "drover/spec/job_parser.h"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <filesystem>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "drover/spec/job_graph.h"
#include "drover/spec/job_resources.h"
#include "drover/spec/job_retry.h"
#include "drover/spec/job_sweep.h"
#include "drover/spec/job_templates.h"
#include "drover/spec/limits.h"
#include "drover/spec/suggest.h"
#include "drover/workflow/expression.h"

namespace drover::spec::internal {
namespace {

// An environment variable name's problem, or "".
std::string CheckEnvName(const std::string& name) {
  if (workflow::IsIdentifier(name)) return "";
  return fmt::format(
      "invalid environment variable name '{}': use letters, digits and '_', not starting with a "
      "digit",
      name);
}

// Fields every job mapping admits; the forms add their own (JobKeys).
const std::vector<std::string>& CommonKeys() {
  static const std::vector<std::string> kKeys = {"name",
                                                 "owner",
                                                 "team",
                                                 "queue",
                                                 "priority",
                                                 "command",
                                                 "script",
                                                 "working_dir",
                                                 "env",
                                                 "secret_env",
                                                 "resources",
                                                 "workers",
                                                 "min_workers",
                                                 "placement",
                                                 "depends_on",
                                                 "if",
                                                 "inputs",
                                                 "outputs",
                                                 "timeout",
                                                 "retry",
                                                 "checkpoint_dir",
                                                 "resume",
                                                 "interruptible",
                                                 "image",
                                                 "hold_infeasible"};
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

// secret_env: environment variable -> the name of a secret of the job's team. The values are
// names, not templates; a variable set in both env and secret_env is refused (which would win is
// not obvious to the reader).
void ReadSecretEnv(const Fields& f, model::JobSpec& spec, Sink& sink) {
  const std::optional<Value> v = f.Get("secret_env");
  if (!v) return;
  std::optional<std::map<std::string, std::string>> secret_env =
      ReadStringMap(*v, sink, CheckEnvName);
  if (!secret_env) return;
  bool ok = true;
  for (const auto& pair : v->node) {
    const std::string& var = pair.first.Scalar();
    const std::string& name = secret_env->at(var);
    const Pos pos = PosOf(pair.second, PosOf(pair.first.Mark()));
    if (!IsValidSecretName(name)) {
      sink.Add(pos, Child(v->path, var), InvalidSecretNameMessage(name));
      ok = false;
    } else if (spec.env.contains(var)) {
      sink.Add(PosOf(pair.first.Mark()), Child(v->path, var),
               fmt::format("{} is set in both env and secret_env; keep one", var));
      ok = false;
    }
  }
  if (ok) spec.secret_env = std::move(*secret_env);
}

void ReadCommand(const Fields& f, ParsedJob& job, Sink& sink) {
  model::JobSpec& spec = job.spec;
  const std::optional<Value> command = f.Get("command");
  const std::optional<Value> script = f.Get("script");
  if (command) {
    if (auto argv = ReadStringList(*command, sink)) {
      if (argv->empty()) {
        sink.Add(command->pos, command->path,
                 "must not be empty; give the program and its arguments, e.g. [python, "
                 "train.py]");
      } else if (argv->front().empty()) {
        sink.Add(PosOf(command->node[0], command->pos), Index(command->path, 0),
                 "the program name must not be empty");
      } else {
        spec.command = std::move(*argv);
      }
    }
  }
  if (script) {
    if (auto text = ReadString(*script, sink)) {
      const bool blank = std::all_of(text->begin(), text->end(), [](char c) {
        return std::isspace(static_cast<unsigned char>(c));
      });
      if (blank) {
        sink.Add(script->pos, script->path, "must not be empty");
      } else {
        spec.script = std::move(*text);
      }
    }
  }
  if (command && script) {
    sink.Add(script->pos, script->path, "command and script are mutually exclusive; give only one");
  } else if (!command && !script) {
    if (f.Written("command") || f.Written("script")) {
      const std::string key = f.Written("command") ? "command" : "script";
      sink.Add(f.KeyPos(key), Child(job.prefix, key), "must not be empty");
    } else {
      sink.Add(job.pos, Child(job.prefix, "command"),
               "one of command (a list: program and arguments) or script (run with /bin/sh "
               "-c) is required");
    }
  }
}

// The strings exec receives (command, script, env) against SpecLimits: each at most
// max_arg_bytes, together at most max_launch_bytes. Reported at the string, or for the total at
// the job.
void CheckLaunchSize(const Fields& f, const ParsedJob& job, const SpecLimits& limits, Sink& sink) {
  const model::JobSpec& spec = job.spec;
  constexpr std::int64_t kPointerBytes = 8;
  std::int64_t total = 0;
  auto check = [&](std::int64_t bytes, Pos pos, const std::string& path, std::string_view what) {
    total += bytes + 1 + kPointerBytes;
    if (bytes > limits.max_arg_bytes) {
      sink.Add(pos, path,
               fmt::format("{} is {} bytes; exec takes at most {} bytes per string (Linux "
                           "MAX_ARG_STRLEN, 128 KiB with its NUL)",
                           what, bytes, limits.max_arg_bytes));
    }
  };
  if (auto v = f.Get("command"); v && !spec.command.empty()) {
    for (std::size_t i = 0; i < spec.command.size(); ++i) {
      check(static_cast<std::int64_t>(spec.command[i].size()), PosOf(v->node[i], v->pos),
            Index(v->path, i), "the argument");
    }
  }
  if (auto v = f.Get("script"); v && !spec.script.empty()) {
    check(static_cast<std::int64_t>(spec.script.size()), v->pos, v->path, "the script");
  }
  if (auto v = f.Get("env"); v && !spec.env.empty()) {
    for (const auto& pair : v->node) {
      if (!pair.first.IsScalar()) continue;
      auto entry = spec.env.find(pair.first.Scalar());
      if (entry == spec.env.end()) continue;
      check(static_cast<std::int64_t>(entry->first.size() + 1 + entry->second.size()),
            PosOf(pair.second, PosOf(pair.first.Mark())), Child(v->path, entry->first),
            "the entry NAME=value");
    }
  }
  if (total > limits.max_launch_bytes) {
    sink.Add(job.pos, Child(job.prefix, spec.script.empty() ? "command" : "script"),
             fmt::format("command, script and env take {} bytes as exec counts them (each string "
                         "with its NUL and pointer); a job may use at most {} bytes",
                         total, limits.max_launch_bytes));
  }
}

}  // namespace

ParsedJob ParseJob(const YAML::Node& map, const std::string& prefix, JobForm form,
                   const model::JobSpec& base, const ParseOptions& options, Sink& sink) {
  ParsedJob job;
  job.prefix = prefix;
  job.pos = PosOf(map.Mark());
  job.spec = base;
  model::JobSpec& spec = job.spec;
  Fields f(map, prefix, JobKeys(form), TopLevelAliases(), sink);
  JobContext ctx{options, sink, {}};

  if (form == JobForm::kJob) {
    if (auto v = f.Get("kind")) {
      if (auto kind = ReadString(*v, sink);
          kind && kDocumentKindNames.Parse(*kind) != DocumentKind::kJob) {
        sink.Add(v->pos, v->path, UnsupportedKindMessage(*kind));
      }
    } else {
      ReportMissing(f, job.pos, prefix, "kind", "required field is missing (write kind: Job)",
                    sink);
    }
  }

  if (auto v = f.Get("name")) {
    if (auto name = ReadString(*v, sink)) {
      if (!IsValidName(*name)) {
        sink.Add(v->pos, v->path, InvalidNameMessage("name", *name));
      } else if (form == JobForm::kStage && name->find('.') != std::string::npos) {
        sink.Add(v->pos, v->path,
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
    ReportMissing(f, job.pos, prefix, "name", "required field is missing", sink);
  }

  if (form == JobForm::kJob) spec.hold_infeasible = options.hold_infeasible;
  ReadJobDefaults(f, spec, sink);
  if (auto v = f.Get("pipeline")) {
    if (auto pipeline = ReadString(*v, sink)) {
      if (IsValidName(*pipeline)) {
        spec.pipeline = *pipeline;
      } else {
        sink.Add(v->pos, v->path, InvalidNameMessage("pipeline name", *pipeline));
      }
    }
  }

  // The matrix first: the templates of the other fields are checked against its parameters.
  if (form == JobForm::kStage) ctx.sweep = ReadSweep(f, job, sink);

  ReadCommand(f, job, sink);
  if (auto v = f.Get("command"); v && !spec.command.empty()) {
    ScanTemplates(*v, TemplateScope::kLaunch, ctx, job);
  }
  if (auto v = f.Get("script"); v && !spec.script.empty()) {
    ScanTemplates(*v, TemplateScope::kLaunch, ctx, job);
  }

  if (auto v = f.Get("working_dir")) {
    if (auto dir = ReadNonEmptyString(*v, sink)) {
      ScanTemplates(*v, TemplateScope::kParse, ctx, job);
      if (CheckConfined(*v, *dir, ctx, job)) spec.working_dir = ResolvePath(options.base_dir, *dir);
    }
  } else if (!options.base_dir.empty()) {
    spec.working_dir = ResolvePath(options.base_dir, ".");  // the spec file's directory
  }
  if (auto v = f.Get("env")) {
    if (auto env = ReadStringMap(*v, sink, CheckEnvName)) {
      spec.env = std::move(*env);
      ScanTemplates(*v, TemplateScope::kLaunch, ctx, job);
    }
  }

  ReadSecretEnv(f, spec, sink);
  CheckLaunchSize(f, job, options.limits, sink);

  ReadResources(f.Get("resources"), spec, sink);

  std::optional<int> workers = 1;
  if (auto v = f.Get("workers")) workers = ReadCount(*v, sink, 1);
  spec.workers = workers.value_or(1);
  spec.min_workers = spec.workers;
  if (auto v = f.Get("min_workers")) {
    if (auto min_workers = ReadCount(*v, sink, 1)) {
      if (workers && *min_workers > *workers) {
        sink.Add(v->pos, v->path,
                 fmt::format("must not exceed workers ({}), found {}", *workers, *min_workers));
      } else {
        spec.min_workers = *min_workers;
      }
    }
  }

  ReadPlacement(f.Get("placement"), spec, sink);

  if (auto v = f.Get("depends_on")) ReadDependencies(*v, ctx, job);
  if (auto v = f.Get("if")) ReadIf(*v, ctx, job);
  if (auto v = f.Get("inputs")) ReadInputs(*v, ctx, job);
  if (auto v = f.Get("outputs")) ReadOutputs(*v, ctx, job);
  if (form != JobForm::kCronJob) AddAfterDependencies(options, job, sink);
  if (form == JobForm::kStage) CheckObjective(ctx.sweep, job, sink);

  if (auto v = f.Get("timeout")) ReadTimeout(*v, spec, sink);
  ReadRetry(f.Get("retry"), spec.retry, sink);

  ReadCheckpoint(f, ctx, job);
  if (auto v = f.Get("interruptible")) spec.interruptible = ReadBool(*v, sink).value_or(false);
  return job;
}

std::string ResolvePath(const std::string& base_dir, const std::string& path) {
  if (base_dir.empty()) return path;
  std::filesystem::path joined = std::filesystem::path(base_dir) / std::filesystem::path(path);
  std::string out = joined.lexically_normal().generic_string();
  while (out.size() > 1 && out.back() == '/') out.pop_back();
  return out;
}

void ReadJobDefaults(const Fields& f, model::JobSpec& spec, Sink& sink) {
  for (auto [key, field] : {std::pair{"owner", &spec.owner}, std::pair{"team", &spec.team}}) {
    const std::optional<Value> v = f.Get(key);
    if (!v) continue;
    if (std::optional<std::string> name = ReadString(*v, sink); name && !name->empty()) {
      if (IsValidPrincipal(*name)) {
        *field = *name;
      } else {
        sink.Add(v->pos, v->path, InvalidPrincipalMessage(key, *name));
      }
    }
  }
  if (auto v = f.Get("queue")) {
    if (std::optional<std::string> queue = ReadNonEmptyString(*v, sink)) {
      if (IsValidName(*queue)) {
        spec.queue = *queue;
      } else {
        sink.Add(v->pos, v->path, InvalidNameMessage("queue name", *queue));
      }
    }
  }
  if (auto v = f.Get("hold_infeasible")) {
    spec.hold_infeasible = ReadBool(*v, sink).value_or(spec.hold_infeasible);
  }
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
    sink.Add(v->pos, v->path,
             fmt::format("unknown priority class '{}'", *name) +
                 DidYouMean(*name, names, "valid classes are " + Join(names, ", "),
                            HintForm::kAsideThenExpected));
  }
}

std::string UnsupportedKindMessage(std::string_view kind) {
  return fmt::format("unsupported kind '{}'", kind) +
         DidYouMean(kind, kDocumentKindNames.Choices(),
                    "expected " + kDocumentKindNames.AlternativeList(),
                    HintForm::kAsideThenExpected);
}

}  // namespace drover::spec::internal
