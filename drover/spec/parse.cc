#include "drover/spec/parse.h"

#include <fmt/format.h>
#include <yaml-cpp/yaml.h>

#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "drover/common/quantity.h"
#include "drover/model/dependency.h"
#include "drover/spec/job_graph.h"
#include "drover/spec/job_parser.h"
#include "drover/spec/job_sweep.h"
#include "drover/spec/service_parser.h"
#include "drover/spec/suggest.h"
#include "drover/spec/yaml_reader.h"
#include "drover/workflow/cron.h"

namespace drover::spec {
namespace {

using internal::Child;
using internal::Describe;
using internal::ExpectMap;
using internal::Fields;
using internal::InvalidNameMessage;
using internal::IsValidName;
using internal::JobForm;
using internal::ParsedJob;
using internal::Pos;
using internal::PosOf;
using internal::ReadBool;
using internal::ReadCount;
using internal::ReadList;
using internal::ReadNonEmptyString;
using internal::ReadQuantity;
using internal::ReadString;
using internal::Sink;
using internal::Value;

using internal::DocumentKind;
using internal::kDocumentKindNames;

// `what` ('admission', ...) as one of `names`, with a suggestion when it is not.
std::optional<std::string> ReadChoice(const Value& v, std::string_view what,
                                      const std::vector<std::string>& names, Sink& sink) {
  std::optional<std::string> name = ReadString(v, sink);
  if (!name) return std::nullopt;
  if (std::find(names.begin(), names.end(), *name) != names.end()) return name;
  sink.Add(v.pos, v.path,
           fmt::format("unknown {} '{}'", what, *name) +
               DidYouMean(*name, names, "expected " + internal::Join(names, ", "),
                          HintForm::kAsideThenExpected));
  return std::nullopt;
}

// Reads the documents of one file: jobs, one pipeline, or cron jobs.
class DocumentParser {
 public:
  DocumentParser(const ParseOptions& options, bool accept_crons, Sink& sink)
      : options_(options), accept_crons_(accept_crons), sink_(sink) {}

  void Read(std::string_view text) {
    std::optional<std::vector<YAML::Node>> documents =
        internal::LoadDocuments(text, options_.limits.max_expanded_bytes, sink_);
    if (!documents) return;
    auto not_a_job = [&](const YAML::Node& node, Pos pos) {
      sink_.Add(pos, "",
                fmt::format("expected a job (a mapping with kind: Job), found {}", Describe(node)));
    };
    for (const YAML::Node& document : *documents) {
      if (document.IsMap()) {
        Dispatch(document);
      } else if (document.IsSequence()) {
        for (const YAML::Node& item : document) {
          if (item.IsMap()) {
            Dispatch(item);
          } else {
            not_a_job(item, PosOf(item, PosOf(document.Mark())));
          }
        }
      } else if (document.IsScalar()) {
        not_a_job(document, PosOf(document.Mark()));
      }
      // Empty documents (a stray --- or a file of comments) hold nothing and are skipped.
    }
  }

  // The checks across the file's jobs, then the results.
  void Finish(std::vector<model::JobSpec>& jobs, std::vector<model::CronSpec>& crons,
              std::vector<model::ServiceSpec>& services) {
    if (!first_ && sink_.size() == 0) {
      sink_.Add(Pos{}, "", "no job found; write one job per YAML document (kind: Job, ...)");
    }
    internal::CheckGroup(jobs_, /*pipeline=*/false, sink_);
    jobs = internal::ExpandGroup(jobs_, options_.base_dir);
    jobs.insert(jobs.end(), pipeline_jobs_.begin(), pipeline_jobs_.end());
    crons = std::move(crons_);
    services = std::move(services_);
  }

 private:
  void Dispatch(const YAML::Node& map) {
    // An absent key yields an invalid node, on which only IsDefined() may be called.
    const YAML::Node kind_node = map["kind"];
    const bool has_kind = kind_node.IsDefined() && kind_node.IsScalar();
    // Any other kind reads as a Job, whose parser reports it unsupported.
    const DocumentKind kind =
        has_kind ? kDocumentKindNames.Parse(kind_node.Scalar()).value_or(DocumentKind::kJob)
                 : DocumentKind::kJob;
    const Pos pos = has_kind ? PosOf(kind_node, PosOf(map.Mark())) : PosOf(map.Mark());
    if (kind == DocumentKind::kCronJob && !accept_crons_) {
      sink_.Add(pos, "kind",
                "a CronJob is not accepted here: cron jobs are registered with the server as "
                "schedules, not submitted as jobs");
      return;
    }
    if (kind == DocumentKind::kService && !accept_crons_) {
      sink_.Add(pos, "kind",
                "a Service is not accepted here: services are registered with the server "
                "(drover submit sends them to /v1/services), not submitted as jobs");
      return;
    }
    if (!Admit(kind, pos)) return;
    switch (kind) {
      case DocumentKind::kJob:
        jobs_.push_back(
            internal::ParseJob(map, "", JobForm::kJob, model::JobSpec{}, options_, sink_));
        break;
      case DocumentKind::kPipeline:
        pipeline_jobs_ = ParsePipeline(map, "", "");
        break;
      case DocumentKind::kCronJob:
        ParseCron(map);
        break;
      case DocumentKind::kService:
        ParseService(map);
        break;
    }
  }

  void ParseService(const YAML::Node& map) {
    model::ServiceSpec service = internal::ParseService(map, options_, sink_);
    const YAML::Node name = map["name"];
    if (!service.name.empty()) {
      const int line = PosOf(name, PosOf(map.Mark())).line;
      if (auto [it, inserted] = service_lines_.emplace(service.name, line); !inserted) {
        sink_.Add(PosOf(name, PosOf(map.Mark())), "name",
                  fmt::format("duplicate service name '{}'; the first is at line {}", service.name,
                              it->second));
      }
    }
    services_.push_back(std::move(service));
  }

  // A file holds jobs, one pipeline, or cron jobs.
  bool Admit(DocumentKind kind, Pos pos) {
    if (!first_) {
      first_ = {kind, pos.line};
      return true;
    }
    if (kind != first_->first) {
      sink_.Add(
          pos, "kind",
          fmt::format("a file holds jobs, one pipeline, cron jobs or services, not a mix: this {} "
                      "follows a {} at line {}",
                      kDocumentKindNames.Name(kind), kDocumentKindNames.Name(first_->first),
                      first_->second));
      return false;
    }
    if (kind == DocumentKind::kPipeline) {
      sink_.Add(pos, "kind",
                fmt::format("a file holds one pipeline; the first is at line {}", first_->second));
      return false;
    }
    return true;
  }

  // A pipeline mapping at `prefix` (a document: "", a cron job's: "pipeline"); its name
  // defaults to `default_name` when that is not empty. Returns its jobs.
  std::vector<model::JobSpec> ParsePipeline(const YAML::Node& map, const std::string& prefix,
                                            const std::string& default_name) {
    static const std::vector<std::string> kDocumentKeys = {
        "kind",     "name",  "owner",     "team",   "queue",
        "priority", "image", "admission", "stages", "hold_infeasible"};
    static const std::vector<std::string> kNestedKeys(kDocumentKeys.begin() + 1,
                                                      kDocumentKeys.end());
    static const std::map<std::string, std::string> kAliases = {
        {"jobs", "stages"}, {"steps", "stages"},   {"tasks", "stages"},  {"pipeline", "name"},
        {"cmd", "stages"},  {"command", "stages"}, {"script", "stages"}, {"depends_on", "stages"}};
    const Pos pos = PosOf(map.Mark());
    Fields f(map, prefix, prefix.empty() ? kDocumentKeys : kNestedKeys, kAliases, sink_);

    std::string name = default_name;
    if (auto v = f.Get("name")) {
      if (auto text = ReadString(*v, sink_)) {
        if (IsValidName(*text)) {
          name = *text;
        } else {
          sink_.Add(v->pos, v->path, InvalidNameMessage("pipeline name", *text));
        }
      }
    } else if (default_name.empty() || f.Written("name")) {
      internal::ReportMissing(f, pos, prefix, "name", "required field is missing", sink_);
    }

    model::JobSpec base;
    base.hold_infeasible = options_.hold_infeasible;
    internal::ReadJobDefaults(f, base, sink_);
    model::PipelineAdmission admission = model::PipelineAdmission::kStagewise;
    if (auto v = f.Get("admission")) {
      if (auto choice =
              ReadChoice(*v, "admission", model::kPipelineAdmissionNames.Choices(), sink_)) {
        admission = model::kPipelineAdmissionNames.Parse(*choice).value_or(admission);
      }
    }

    std::vector<ParsedJob> stages;
    if (auto v = f.Get("stages")) {
      if (auto items = ReadList(*v, "a list of stages (each a job with a name)", sink_)) {
        if (items->empty()) sink_.Add(v->pos, v->path, "must not be empty");
        for (const Value& item : *items) {
          if (!item.node.IsMap()) {
            sink_.Add(item.pos, item.path,
                      fmt::format("expected a stage (a mapping with name and command or "
                                  "script), found {}",
                                  Describe(item.node)));
            continue;
          }
          ParsedJob stage =
              internal::ParseJob(item.node, item.path, JobForm::kStage, base, options_, sink_);
          stage.spec.pipeline = name;
          stage.spec.stage = stage.spec.name;
          stage.spec.admission = admission;
          stages.push_back(std::move(stage));
        }
      }
    } else {
      internal::ReportMissing(
          f, pos, prefix, "stages",
          "required field is missing (a list of stages, each a job with a name)", sink_);
    }
    internal::CheckGroup(stages, /*pipeline=*/true, sink_);
    return internal::ExpandGroup(stages, options_.base_dir);
  }

  void ParseCron(const YAML::Node& map) {
    static const std::vector<std::string> kKeys = {
        "kind",    "name",    "schedule", "time_zone", "concurrency_policy", "starting_deadline",
        "history", "suspend", "job",      "pipeline"};
    static const std::map<std::string, std::string> kAliases = {
        {"timezone", "time_zone"},
        {"tz", "time_zone"},
        {"concurrencyPolicy", "concurrency_policy"},
        {"startingDeadlineSeconds", "starting_deadline"},
        {"deadline", "starting_deadline"},
        {"cron", "schedule"},
        {"suspended", "suspend"},
        {"paused", "suspend"},
        {"template", "job"},
        {"jobTemplate", "job"},
        {"successful_history_limit", "history.succeeded"},
        {"failed_history_limit", "history.failed"},
        {"command", "job.command"},
        {"script", "job.script"},
        {"stages", "pipeline.stages"}};
    const Pos pos = PosOf(map.Mark());
    Fields f(map, "", kKeys, kAliases, sink_);
    model::CronSpec cron;

    if (auto v = f.Get("name")) {
      if (auto name = ReadString(*v, sink_)) {
        if (!IsValidName(*name)) {
          sink_.Add(v->pos, v->path, InvalidNameMessage("name", *name));
        } else if (auto [it, inserted] = cron_lines_.emplace(*name, v->pos.line); !inserted) {
          sink_.Add(v->pos, v->path,
                    fmt::format("duplicate cron job name '{}'; the first is at line {}", *name,
                                it->second));
        } else {
          cron.name = *name;
        }
      }
    } else {
      internal::ReportMissing(f, pos, "", "name", "required field is missing", sink_);
    }

    if (auto v = f.Get("schedule")) {
      if (auto schedule = ReadNonEmptyString(*v, sink_)) {
        if (auto parsed = workflow::ParseCronSchedule(*schedule); !parsed) {
          sink_.Add(v->pos, v->path, parsed.error().message);
        }
        cron.schedule = *schedule;
      }
    } else {
      internal::ReportMissing(
          f, pos, "", "schedule",
          "required field is missing (a cron expression such as \"30 2 * * *\", or @daily)", sink_);
    }
    if (auto v = f.Get("time_zone")) {
      if (auto zone = ReadNonEmptyString(*v, sink_)) {
        if (options_.known_time_zone && !options_.known_time_zone(*zone)) {
          sink_.Add(v->pos, v->path, UnknownTimeZoneMessage(*zone));
        }
        cron.time_zone = *zone;
      }
    }
    if (auto v = f.Get("concurrency_policy")) {
      if (auto choice = ReadChoice(*v, "concurrency policy",
                                   model::kConcurrencyPolicyNames.Choices(), sink_)) {
        cron.concurrency_policy =
            model::ParseConcurrencyPolicy(*choice).value_or(cron.concurrency_policy);
      }
    }
    if (auto v = f.Get("starting_deadline")) {
      if (auto deadline = ReadQuantity<DurationMs>(*v, sink_, &ParseDuration, "1h")) {
        if (*deadline <= 0) {
          sink_.Add(v->pos, v->path, "must be greater than zero");
        } else {
          cron.starting_deadline = *deadline;
        }
      }
    }
    if (auto v = f.Get("history"); v && ExpectMap(*v, sink_)) {
      static const std::vector<std::string> kHistoryKeys = {"succeeded", "failed"};
      static const std::map<std::string, std::string> kHistoryAliases = {
          {"successful", "succeeded"}, {"success", "succeeded"}, {"failure", "failed"}};
      Fields h(v->node, v->path, kHistoryKeys, kHistoryAliases, sink_);
      if (auto q = h.Get("succeeded")) {
        cron.successful_history_limit =
            ReadCount(*q, sink_, 0).value_or(cron.successful_history_limit);
      }
      if (auto q = h.Get("failed")) {
        cron.failed_history_limit = ReadCount(*q, sink_, 0).value_or(cron.failed_history_limit);
      }
    }
    if (auto v = f.Get("suspend")) cron.suspend = ReadBool(*v, sink_).value_or(false);

    const std::optional<Value> job = f.Get("job");
    const std::optional<Value> pipeline = f.Get("pipeline");
    if (job && pipeline) {
      sink_.Add(pipeline->key_pos, pipeline->path,
                "job and pipeline are mutually exclusive; give only one");
    }
    if (job && ExpectMap(*job, sink_)) {
      model::JobSpec base;
      base.name = cron.name;
      std::vector<ParsedJob> jobs;
      jobs.push_back(
          internal::ParseJob(job->node, "job", JobForm::kCronJob, base, options_, sink_));
      internal::CheckGroup(jobs, /*pipeline=*/false, sink_);
      cron.jobs = internal::ExpandGroup(jobs, options_.base_dir);
    }
    if (pipeline && ExpectMap(*pipeline, sink_)) {
      cron.jobs = ParsePipeline(pipeline->node, "pipeline", cron.name);
    }
    // Every run would wait for the same job, which ends once: refused rather than left to fail.
    for (const model::JobSpec& spec : cron.jobs) {
      for (const model::Dependency& dependency : spec.depends_on) {
        if (!model::DependencyJobId(dependency.name)) continue;
        const Value& where = job ? *job : *pipeline;
        sink_.Add(where.pos, where.path,
                  fmt::format("'{}' depends on {}: a cron job's runs cannot depend on a job of "
                              "an earlier submission",
                              spec.name, dependency.name));
      }
    }
    if (!job && !pipeline) {
      const std::string key = f.Written("pipeline") ? "pipeline" : "job";
      internal::ReportMissing(
          f, pos, "", key,
          "one of job (the job each run submits) or pipeline (the pipeline each run "
          "submits) is required",
          sink_);
    }
    crons_.push_back(std::move(cron));
  }

  const ParseOptions& options_;
  const bool accept_crons_;
  Sink& sink_;
  std::optional<std::pair<DocumentKind, int>> first_;  // the first document's kind and line
  std::vector<ParsedJob> jobs_;                        // of kind: Job documents
  std::vector<model::JobSpec> pipeline_jobs_;
  std::vector<model::CronSpec> crons_;
  std::map<std::string, int> cron_lines_;  // name -> line
  std::vector<model::ServiceSpec> services_;
  std::map<std::string, int> service_lines_;  // name -> line
};

ParseOutput Parse(std::string_view text, const ParseOptions& options, bool accept_crons) {
  Sink sink(options.file_name);
  ParseOutput out;
  internal::ReadGuarded(sink, "spec", [&] {
    DocumentParser parser(options, accept_crons, sink);
    parser.Read(text);
    parser.Finish(out.jobs, out.crons, out.services);
  });
  out.diagnostics = sink.TakeSorted();
  if (!out.diagnostics.empty()) {
    out.jobs.clear();
    out.crons.clear();
    out.services.clear();
  }
  return out;
}

}  // namespace

ParseOutput ParseJobsWithDiagnostics(std::string_view text, const ParseOptions& options) {
  return Parse(text, options, /*accept_crons=*/false);
}

Result<std::vector<model::JobSpec>> ParseJobs(std::string_view text, const ParseOptions& options) {
  ParseOutput out = ParseJobsWithDiagnostics(text, options);
  if (out.diagnostics.empty()) return std::move(out.jobs);
  return DiagnosticsError(out.diagnostics, options.file_name);
}

ParseOutput ParseDocumentsWithDiagnostics(std::string_view text, const ParseOptions& options) {
  return Parse(text, options, /*accept_crons=*/true);
}

Result<Documents> ParseDocuments(std::string_view text, const ParseOptions& options) {
  ParseOutput out = ParseDocumentsWithDiagnostics(text, options);
  if (!out.diagnostics.empty()) return DiagnosticsError(out.diagnostics, options.file_name);
  return Documents{std::move(out.jobs), std::move(out.crons), std::move(out.services)};
}

Result<model::Dependency> ParseAfter(std::string_view item) {
  const std::size_t colon = item.find(':');
  const std::string_view id = item.substr(0, colon);
  const std::string escaped = EscapeForMessage(item);
  model::Dependency dependency;
  dependency.name = std::string(model::kJobIdPrefix) + std::string(id);
  if (!model::DependencyJobId(dependency.name)) {
    return InvalidArgument(fmt::format(
        "'{}': expected ID[:CONDITION] with ID a job id (a positive integer)", escaped));
  }
  if (colon == std::string_view::npos) return dependency;
  const std::string_view condition = item.substr(colon + 1);
  static constexpr std::pair<std::string_view, model::DependencyCondition> kShort[] = {
      {"ok", model::DependencyCondition::kSucceeded},
      {"any", model::DependencyCondition::kDone},
  };
  for (const auto& [word, value] : kShort) {
    if (condition == word) {
      dependency.condition = value;
      return dependency;
    }
  }
  if (auto parsed = model::ParseDependencyCondition(condition)) {
    dependency.condition = *parsed;
    return dependency;
  }
  return InvalidArgument(
      fmt::format("'{}': unknown condition; expected ok, any or a condition name ({})", escaped,
                  model::kDependencyConditionNames.AlternativeList()));
}

Result<std::vector<model::Dependency>> ParseAfterList(std::string_view text) {
  std::vector<model::Dependency> out;
  std::size_t position = 0;
  while (true) {
    const std::size_t comma = text.find(',');
    std::string_view item = text.substr(0, comma);
    while (!item.empty() && item.front() == ' ') item.remove_prefix(1);
    while (!item.empty() && item.back() == ' ') item.remove_suffix(1);
    ++position;
    if (position > static_cast<std::size_t>(kMaxAfterItems)) {
      return InvalidArgument(
          fmt::format("more than {} items: a submission may wait on at most {} earlier jobs",
                      kMaxAfterItems, kMaxAfterItems));
    }
    Result<model::Dependency> dependency = ParseAfter(item);
    if (!dependency) {
      return InvalidArgument(fmt::format("item {}: {}", position, dependency.error().message));
    }
    out.push_back(std::move(*dependency));
    if (comma == std::string_view::npos) break;
    text.remove_prefix(comma + 1);
  }
  return out;
}

std::string SubmissionDigest(std::string_view text, const std::vector<model::Dependency>& after) {
  constexpr std::uint64_t kOffsetBasis = 14695981039346656037ULL;
  constexpr std::uint64_t kPrime = 1099511628211ULL;
  std::uint64_t hash = kOffsetBasis;
  const auto digest = [&](std::string_view bytes) {
    for (char c : bytes) hash = (hash ^ static_cast<unsigned char>(c)) * kPrime;
  };
  digest(text);
  for (const model::Dependency& dependency : after) {
    // Each item after a separator, so that the text and the items cannot run together.
    digest(std::string_view("\0after\0", 7));
    digest(dependency.name);
    digest(":");
    digest(model::kDependencyConditionNames.Name(dependency.condition));
  }
  return fmt::format("fnv1a64:{:016x}", hash);
}

}  // namespace drover::spec
