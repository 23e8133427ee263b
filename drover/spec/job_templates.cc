#include "drover/spec/job_templates.h"

#include <fmt/format.h>

#include <algorithm>
#include <filesystem>
#include <string>
#include <vector>

#include "drover/spec/suggest.h"
#include "drover/workflow/expression.h"
#include "drover/workflow/matrix.h"

namespace drover::spec::internal {
namespace {

using workflow::Reference;

// One reference `ref` found in the scalar `v`.
void CheckReference(const Reference& ref, const Value& v, TemplateScope scope,
                    const JobContext& ctx, ParsedJob& job) {
  if (ref.kind == Reference::Kind::kStageOutput) {
    if (scope == TemplateScope::kParse) {
      ctx.sink.Add(v.pos, v.path,
                   fmt::format("{} is not available here: upstream outputs are replaced only in "
                               "command, script, env and if",
                               ref.text));
    } else {
      job.output_uses.push_back(OutputUse{ref.stage, ref.output, v.path, v.pos});
    }
    return;
  }
  if (!ctx.sweep.matrix_written) {
    ctx.sink.Add(v.pos, v.path,
                 fmt::format("{} needs a matrix: only the stages of a pipeline that have a matrix "
                             "have parameters and trials",
                             ref.text));
    return;
  }
  if (ref.kind == Reference::Kind::kMatrix && job.matrix &&
      std::find(ctx.sweep.params.begin(), ctx.sweep.params.end(), ref.param) ==
          ctx.sweep.params.end()) {
    ctx.sink.Add(v.pos, v.path,
                 fmt::format("unknown matrix parameter '{}' in {}", ref.param, ref.text) +
                     DidYouMean(ref.param, ctx.sweep.params,
                                "the matrix has " + Join(ctx.sweep.params, ", "),
                                HintForm::kSuggestionOrExpected));
  }
}

}  // namespace

void ScanTemplates(const Value& v, TemplateScope scope, const JobContext& ctx, ParsedJob& job) {
  if (v.node.IsSequence()) {
    std::size_t i = 0;
    for (const YAML::Node& item : v.node) {
      const Pos pos = PosOf(item, v.pos);
      ScanTemplates(Value{item, Index(v.path, i++), pos, pos}, scope, ctx, job);
    }
    return;
  }
  if (v.node.IsMap()) {
    for (const auto& pair : v.node) {
      if (!pair.first.IsScalar()) continue;
      const Pos key_pos = PosOf(pair.first.Mark());
      ScanTemplates(Value{pair.second, Child(v.path, pair.first.Scalar()),
                          PosOf(pair.second, key_pos), key_pos},
                    scope, ctx, job);
    }
    return;
  }
  if (!v.node.IsScalar()) return;
  Result<std::vector<Reference>> refs = workflow::FindReferences(v.node.Scalar());
  if (!refs) {
    ctx.sink.Add(v.pos, v.path, refs.error().message);
    return;
  }
  for (const Reference& ref : *refs) CheckReference(ref, v, scope, ctx, job);
}

bool ClimbsOut(const std::string& path) {
  const std::filesystem::path normal = std::filesystem::path(path).lexically_normal();
  return normal.is_relative() && !normal.empty() && *normal.begin() == "..";
}

bool CheckConfined(const Value& v, const std::string& written, const JobContext& ctx,
                   const ParsedJob& job) {
  const std::string& base = ctx.options.base_dir;
  auto refuse = [&](const std::string& trial_prefix, const std::string& path) {
    ctx.sink.Add(v.pos, v.path,
                 fmt::format("{}'{}' climbs out of the job's base directory{}; write a path under "
                             "it, or an absolute path",
                             trial_prefix, path, base.empty() ? "" : " (" + base + ")"));
    return false;
  };
  if (ClimbsOut(written)) return refuse("", written);
  if (!job.matrix || written.find("${{") == std::string::npos) return true;
  const std::vector<workflow::ParamSet> sets = workflow::Expand(*job.matrix);
  for (std::size_t i = 0; i < sets.size(); ++i) {
    const int index = static_cast<int>(i) + 1;
    const std::string rendered = RenderTrial(written, sets[i], index);
    if (ClimbsOut(rendered)) return refuse(fmt::format("trial {}: ", index), rendered);
  }
  return true;
}

}  // namespace drover::spec::internal
