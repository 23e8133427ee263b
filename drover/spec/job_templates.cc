#include "drover/spec/job_templates.h"

#include <fmt/format.h>

#include <algorithm>
#include <string>
#include <vector>

#include "drover/spec/suggest.h"
#include "drover/workflow/expression.h"

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

}  // namespace drover::spec::internal
