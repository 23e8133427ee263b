#include "drover/spec/job_retry.h"

#include <fmt/format.h>

#include <algorithm>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "drover/common/quantity.h"
#include "drover/spec/suggest.h"

namespace drover::spec::internal {
namespace {

// on: the failure kinds retried, each once.
void ReadFailureKinds(const Value& v, model::RetryPolicy& retry, Sink& sink) {
  std::optional<std::vector<Value>> items =
      ReadList(v, "a list of failure kinds (" + model::kFailureKindNames.ChoiceList() + ")", sink);
  if (!items) return;
  if (items->empty()) {
    sink.Add(v.pos, v.path, "must not be empty; leave on out to retry every kind of failure");
    return;
  }
  std::vector<model::FailureKind> kinds;
  for (const Value& item : *items) {
    std::optional<std::string> name = ReadString(item, sink);
    if (!name) continue;
    std::optional<model::FailureKind> kind = model::ParseFailureKind(*name);
    if (!kind) {
      sink.Add(item.pos, item.path,
               fmt::format("unknown failure kind '{}'", *name) +
                   DidYouMean(*name, model::kFailureKindNames.Choices(),
                              "expected " + model::kFailureKindNames.AlternativeList(),
                              HintForm::kAsideThenExpected));
    } else if (std::find(kinds.begin(), kinds.end(), *kind) != kinds.end()) {
      sink.Add(item.pos, item.path, fmt::format("duplicate failure kind '{}'", *name));
    } else {
      kinds.push_back(*kind);
    }
  }
  retry.on = std::move(kinds);
}

}  // namespace

void ReadTimeout(const Value& v, model::JobSpec& spec, Sink& sink) {
  if (auto timeout = ReadQuantity<DurationMs>(v, sink, &ParseDuration, "1h30m")) {
    if (*timeout <= 0) {
      sink.Add(v.pos, v.path, "must be greater than zero");
    } else {
      spec.timeout = *timeout;
    }
  }
}

void ReadRetry(const std::optional<Value>& v, model::RetryPolicy& retry, Sink& sink) {
  if (!v || !ExpectMap(*v, sink)) return;
  static const std::vector<std::string> kKeys = {"max_attempts", "backoff", "on"};
  static const std::map<std::string, std::string> kAliases = {{"attempts", "max_attempts"},
                                                              {"retries", "max_attempts"},
                                                              {"delay", "backoff"},
                                                              {"when", "on"},
                                                              {"retry_on", "on"}};
  Fields f(v->node, v->path, kKeys, kAliases, sink);
  if (auto q = f.Get("max_attempts")) retry.max_attempts = ReadCount(*q, sink, 1).value_or(1);
  if (auto q = f.Get("backoff")) {
    retry.backoff_ms = ReadQuantity<DurationMs>(*q, sink, &ParseDuration, "10s").value_or(0);
  }
  if (auto q = f.Get("on")) ReadFailureKinds(*q, retry, sink);
}

void ReadCheckpoint(const Fields& f, const JobContext& ctx, ParsedJob& job) {
  model::JobSpec& spec = job.spec;
  if (auto v = f.Get("checkpoint_dir")) {
    if (auto dir = ReadNonEmptyString(*v, ctx.sink)) {
      ScanTemplates(*v, TemplateScope::kParse, ctx, job);
      if (CheckConfined(*v, *dir, ctx, job)) {
        spec.checkpoint_dir = ResolvePath(ctx.options.base_dir, *dir);
      }
    }
  }
  if (auto v = f.Get("resume")) {
    if (auto resume = ReadBool(*v, ctx.sink)) {
      if (*resume && !f.Get("checkpoint_dir")) {
        ctx.sink.Add(v->pos, v->path,
                     "requires checkpoint_dir (the directory each attempt checkpoints to and the "
                     "next resumes from)");
      }
      spec.resume = *resume;
    }
  }
}

}  // namespace drover::spec::internal
