#include "drover/spec/job_sweep.h"

#include <fmt/format.h>

#include <cstdint>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "drover/spec/suggest.h"
#include "drover/workflow/expression.h"
#include "drover/workflow/trials.h"

namespace drover::spec::internal {
namespace {

using workflow::Reference;

// A sweep expands to at most this many trials.
constexpr std::int64_t kMaxTrials = 1000;

// Reads the sweep fields of one stage; what they declare collects in sweep_.
class SweepReader {
 public:
  explicit SweepReader(Sink& sink) : sink_(sink) {}

  // matrix, concurrency, objective, early_stopping.
  SweepFields Read(const Fields& f, ParsedJob& job) {
    model::TrialSpec& trial = job.spec.trial;
    sweep_.matrix_written = f.Written("matrix");
    if (auto v = f.Get("matrix")) job.matrix = ReadMatrix(*v);
    auto only_with = [&](const std::string& key, std::string_view needs) {
      sink_.Add(f.KeyPos(key), Child(job.prefix, key), fmt::format("is only valid with {}", needs));
    };
    if (auto v = f.Get("concurrency")) {
      if (!sweep_.matrix_written) {
        only_with("concurrency", "matrix (it bounds the trials released at once)");
      } else {
        trial.concurrency = ReadCount(*v, sink_, 1).value_or(0);
      }
    }
    if (auto v = f.Get("objective")) {
      if (!sweep_.matrix_written) {
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
    if (job.matrix && job.name_pos) {
      const std::string last = workflow::TrialJobName(
          job.spec.name, static_cast<int>(workflow::TrialCount(*job.matrix)));
      if (!IsValidName(last)) {
        sink_.Add(*job.name_pos, Child(job.prefix, "name"),
                  fmt::format("too long for a sweep: its trials are named {} to {}, at most 63 "
                              "characters",
                              workflow::TrialJobName(job.spec.name, 1), last));
      }
    }
    return std::move(sweep_);
  }

 private:
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
        sweep_.metric = *q;
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
          sink_.Add(q->pos, q->path,
                    fmt::format("unknown goal '{}'", *goal) +
                        DidYouMean(*goal, kGoals, "expected maximize or minimize",
                                   HintForm::kAsideThenExpected));
        }
      }
    }
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
    for (const auto& [name, values] : matrix.grid) sweep_.params.push_back(name);
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
    if (!matrix.list.empty()) sweep_.params = names(matrix.list.front());
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
    for (const auto& [name, d] : matrix.params) sweep_.params.push_back(name);
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

  Sink& sink_;
  SweepFields sweep_;
};

}  // namespace

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

SweepFields ReadSweep(const Fields& f, ParsedJob& job, Sink& sink) {
  return SweepReader(sink).Read(f, job);
}

// The objective's metric names a value output of the stage.
void CheckObjective(const SweepFields& sweep, const ParsedJob& job, Sink& sink) {
  if (!sweep.metric) return;
  const std::string& metric = job.spec.trial.objective;
  std::vector<std::string> names;
  for (const model::OutputSpec& output : job.spec.outputs) {
    if (output.name != metric) {
      names.push_back(output.name);
    } else if (!output.path.empty()) {
      sink.Add(sweep.metric->pos, sweep.metric->path,
               fmt::format("output '{}' is published at a path; the metric must be a value "
                           "output (declare it as {{name: {}}}, without path)",
                           metric, metric));
      return;
    } else {
      return;
    }
  }
  sink.Add(sweep.metric->pos, sweep.metric->path,
           fmt::format("unknown output '{}' (the metric is a value output of this stage)", metric) +
               DidYouMean(metric, names, "", HintForm::kSuggestionOrExpected));
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
