#include "drover/spec/job_graph.h"

#include <fmt/format.h>

#include <algorithm>
#include <map>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "drover/model/dependency.h"
#include "drover/spec/suggest.h"
#include "drover/workflow/expression.h"

namespace drover::spec::internal {
namespace {

using workflow::Reference;

// Output names: [a-z][a-z0-9_]{0,62} (they become DROVER_OUTPUT_<NAME>).
bool IsValidOutputName(std::string_view name) {
  if (name.empty() || name.size() > 63 || name[0] < 'a' || name[0] > 'z') return false;
  return std::all_of(name.begin(), name.end(), [](char c) {
    return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_';
  });
}

std::optional<model::DependencyCondition> ReadCondition(const Value& v, Sink& sink) {
  if (!v.node.IsDefined() || v.node.IsNull()) {
    sink.Add(v.pos, v.path,
             "must not be empty; write " + model::kDependencyConditionNames.AlternativeList());
    return std::nullopt;
  }
  std::optional<std::string> name = ReadString(v, sink);
  if (!name) return std::nullopt;
  if (auto condition = model::ParseDependencyCondition(*name)) return condition;
  sink.Add(v.pos, v.path,
           fmt::format("unknown condition '{}'", *name) +
               DidYouMean(*name, model::kDependencyConditionNames.Choices(),
                          "expected " + model::kDependencyConditionNames.AlternativeList(),
                          HintForm::kAsideThenExpected));
  return std::nullopt;
}

// An input from `stage` needs it to succeed: depends on it with `succeeded` unless depends_on
// already does (any other condition there is an error: the output would never exist).
void AddImpliedDependency(const std::string& stage, const Value& from, ParsedJob& job, Sink& sink) {
  for (const DependencyUse& use : job.dependencies) {
    if (use.dependency.name != stage) continue;
    if (use.dependency.condition != model::DependencyCondition::kSucceeded) {
      sink.Add(from.pos, from.path,
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

// True when `text` holds a ${{ trial }} or ${{ matrix.P }} template (differs per trial).
bool NamesTrial(const std::string& text) {
  Result<std::vector<Reference>> refs = workflow::FindReferences(text);
  return refs && std::any_of(refs->begin(), refs->end(), [](const Reference& ref) {
           return ref.kind != Reference::Kind::kStageOutput;
         });
}

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
      if (model::DependencyJobId(name)) continue;  // an earlier submission's: the server checks
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
        message += DidYouMean(name, names, "", HintForm::kSuggestionOrExpected);
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
        message += DidYouMean(use.stage, names, "", HintForm::kSuggestionOrExpected);
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
        message += DidYouMean(use.output, outputs,
                              "it declares " + (outputs.empty() ? "none" : Join(outputs, ", ")),
                              HintForm::kSuggestionOrExpected);
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

}  // namespace

void ReadDependencies(const Value& v, const JobContext& ctx, ParsedJob& job) {
  std::optional<std::vector<Value>> items =
      ReadList(v, "a list of names or {name: condition} mappings", ctx.sink);
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
      std::optional<model::DependencyCondition> parsed = ReadCondition(condition, ctx.sink);
      if (!parsed) continue;
      dependency.condition = *parsed;
    } else {
      ctx.sink.Add(item.pos, item.path,
                   fmt::format("expected a name or a one-key mapping {{name: condition}}, found {}",
                               Describe(item.node)));
      continue;
    }
    if (dependency.name.starts_with(model::kJobIdPrefix) &&
        !model::DependencyJobId(dependency.name)) {
      ctx.sink.Add(item.pos, item.path,
                   fmt::format("expected job:ID with ID a job id (a positive integer), found '{}'",
                               EscapeForMessage(dependency.name)));
      continue;
    }
    if (!seen.insert(dependency.name).second) {
      ctx.sink.Add(item.pos, item.path, fmt::format("duplicate dependency '{}'", dependency.name));
      continue;
    }
    job.dependencies.push_back(DependencyUse{dependency, item.path, item.pos, false});
    job.spec.depends_on.push_back(std::move(dependency));
  }
}

void AddAfterDependencies(const ParseOptions& options, ParsedJob& job, Sink& sink) {
  for (const model::Dependency& after : options.after) {
    auto same =
        std::find_if(job.dependencies.begin(), job.dependencies.end(),
                     [&](const DependencyUse& use) { return use.dependency.name == after.name; });
    if (same == job.dependencies.end()) {
      job.dependencies.push_back(
          DependencyUse{after, Child(job.prefix, "depends_on"), job.pos, true});
      job.spec.depends_on.push_back(after);
    } else if (same->dependency.condition != after.condition) {
      sink.Add(same->pos, same->path,
               fmt::format("waits for {}: {}, but --after asks for {}", after.name,
                           model::DependencyConditionName(same->dependency.condition),
                           model::DependencyConditionName(after.condition)));
    }
  }
}

void ReadIf(const Value& v, const JobContext& ctx, ParsedJob& job) {
  std::optional<std::string> text = ReadNonEmptyString(v, ctx.sink);
  if (!text) return;
  if (Result<workflow::Condition> condition = workflow::ParseCondition(*text); !condition) {
    ctx.sink.Add(v.pos, v.path, condition.error().message);
    return;
  }
  job.spec.run_if = *text;
  ScanTemplates(v, TemplateScope::kLaunch, ctx, job);
}

void ReadInputs(const Value& v, const JobContext& ctx, ParsedJob& job) {
  std::optional<std::vector<Value>> items =
      ReadList(v, "a list of inputs ({path: P} or {from: STAGE.OUTPUT})", ctx.sink);
  if (!items) return;
  for (const Value& item : *items) {
    if (!ExpectMap(item, ctx.sink)) continue;
    static const std::vector<std::string> kKeys = {"path", "from"};
    static const std::map<std::string, std::string> kAliases = {{"file", "path"}, {"dir", "path"}};
    Fields f(item.node, item.path, kKeys, kAliases, ctx.sink);
    const std::optional<Value> path = f.Get("path");
    const std::optional<Value> from = f.Get("from");
    if (path.has_value() == from.has_value()) {
      ctx.sink.Add(item.pos, item.path,
                   "give exactly one of path (a file or directory that must exist) or from (an "
                   "upstream output, STAGE.OUTPUT)");
      continue;
    }
    if (path) {
      if (auto text = ReadNonEmptyString(*path, ctx.sink)) {
        ScanTemplates(*path, TemplateScope::kParse, ctx, job);
        if (!CheckConfined(*path, *text, ctx, job)) continue;
        job.spec.inputs.push_back({.path = ResolvePath(ctx.options.base_dir, *text),
                                   .from_stage = "",
                                   .from_output = ""});
      }
      continue;
    }
    std::optional<std::string> text = ReadNonEmptyString(*from, ctx.sink);
    if (!text) continue;
    const std::size_t dot = text->rfind('.');
    if (dot == std::string::npos || dot == 0 || dot + 1 == text->size()) {
      ctx.sink.Add(
          from->pos, from->path,
          fmt::format("expected STAGE.OUTPUT, e.g. preprocess.dataset, found '{}'", *text));
      continue;
    }
    const std::string stage = text->substr(0, dot);
    job.spec.inputs.push_back(
        {.path = "", .from_stage = stage, .from_output = text->substr(dot + 1)});
    job.output_uses.push_back(OutputUse{stage, text->substr(dot + 1), from->path, from->pos});
    AddImpliedDependency(stage, *from, job, ctx.sink);
  }
}

void ReadOutputs(const Value& v, const JobContext& ctx, ParsedJob& job) {
  std::optional<std::vector<Value>> items =
      ReadList(v, "a list of outputs ({name: N, path: P} or {name: N})", ctx.sink);
  if (!items) return;
  std::map<std::string, int> lines;  // name -> line of its first declaration
  for (const Value& item : *items) {
    if (!ExpectMap(item, ctx.sink)) continue;
    static const std::vector<std::string> kKeys = {"name", "path"};
    static const std::map<std::string, std::string> kAliases = {{"file", "path"}, {"dir", "path"}};
    Fields f(item.node, item.path, kKeys, kAliases, ctx.sink);
    model::OutputSpec output;
    const std::optional<Value> name = f.Get("name");
    if (!name) {
      ReportMissing(f, item.pos, item.path, "name", "required field is missing", ctx.sink);
      continue;
    }
    std::optional<std::string> text = ReadString(*name, ctx.sink);
    if (!text) continue;
    if (!IsValidOutputName(*text)) {
      ctx.sink.Add(name->pos, name->path,
                   fmt::format("invalid output name '{}': use 1 to 63 lowercase letters, digits "
                               "and '_', starting with a letter",
                               *text));
      continue;
    }
    if (auto [it, inserted] = lines.emplace(*text, name->pos.line); !inserted) {
      ctx.sink.Add(
          name->pos, name->path,
          fmt::format("duplicate output '{}'; the first is at line {}", *text, it->second));
      continue;
    }
    output.name = *text;
    if (auto path = f.Get("path")) {
      std::optional<std::string> p = ReadNonEmptyString(*path, ctx.sink);
      if (!p) continue;
      ScanTemplates(*path, TemplateScope::kParse, ctx, job);
      if (!CheckConfined(*path, *p, ctx, job)) continue;
      output.path = ResolvePath(ctx.options.base_dir, *p);
      if (ctx.sweep.matrix_written && !NamesTrial(*p)) {
        ctx.sink.Add(path->pos, path->path,
                     "every trial of the sweep would publish to this one path; put ${{ trial }} "
                     "(or a matrix parameter) in it");
      }
    }
    job.spec.outputs.push_back(std::move(output));
  }
}

void CheckGroup(std::vector<ParsedJob>& jobs, bool pipeline, Sink& sink) {
  std::map<std::string, std::size_t> by_name;
  CheckNames(jobs, pipeline ? "stage" : "job", by_name, sink);
  const std::vector<std::vector<std::size_t>> edges =
      ResolveDependencies(jobs, by_name, pipeline, sink);
  CheckCycles(jobs, edges, sink);
  CheckOutputUses(jobs, by_name, edges, pipeline, sink);
}

}  // namespace drover::spec::internal
