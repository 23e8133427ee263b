#include "drover/spec/policy.h"

#include <fmt/format.h>
#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <cctype>
#include <charconv>
#include <cmath>
#include <cstdint>
#include <limits>
#include <map>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "drover/common/quantity.h"
#include "drover/spec/limits.h"
#include "drover/spec/suggest.h"
#include "drover/spec/yaml_reader.h"

namespace drover::spec {
namespace {

using internal::Child;
using internal::Describe;
using internal::ExpectMap;
using internal::Fields;
using internal::InvalidNameMessage;
using internal::IsValidName;
using internal::Join;
using internal::ParseMillis;
using internal::Pos;
using internal::PosOf;
using internal::ReadBool;
using internal::ReadCount;
using internal::ReadList;
using internal::ReadQuantity;
using internal::ReadString;
using internal::Sink;
using internal::Value;

// The resource keys of a quota, a borrowing or lending limit, and (beside max_running_jobs) of
// limits.
const std::vector<std::string>& ResourceKeys() {
  static const std::vector<std::string> kKeys = {"cpu", "memory", "gpu", "gpu_models"};
  return kKeys;
}

const std::map<std::string, std::string>& ResourceAliases() {
  static const std::map<std::string, std::string> kAliases = {
      {"gpus", "gpu"},
      {"mem", "memory"},
      {"ram", "memory"},
      {"cpus", "cpu"},
      {"gpu_model", "gpu_models"},
      {"models", "gpu_models"},
      {"max_jobs", "max_running_jobs"},
      {"jobs", "max_running_jobs"},
  };
  return kAliases;
}

// Where one amount of a ResourceAmounts was written.
struct AmountSite {
  Pos pos;
  std::string path;  // "queues[0].lending_limit.gpu", "….gpu_models.H100"
};
// By resource name.
using AmountPositions = std::map<std::string, AmountSite>;

// "4", "2500m" for GPUs and CPUs (thousandths), "64Gi" for memory.
std::string FormatAmount(const std::string& resource, std::int64_t amount) {
  if (resource == "memory") return FormatBytes(amount);
  return FormatCpuMillis(amount);
}

// A Unix account name as useradd accepts it: 1 to 32 letters, digits, '.', '_' or '-', not
// starting with '-'.
bool IsValidUnixAccount(std::string_view name) {
  if (name.empty() || name.size() > 32 || name.front() == '-') return false;
  return std::all_of(name.begin(), name.end(), [](char c) {
    return std::isalnum(static_cast<unsigned char>(c)) || c == '.' || c == '_' || c == '-';
  });
}

std::string InvalidUnixAccountMessage(std::string_view name) {
  return fmt::format(
      "invalid Unix account name '{}': use 1 to 32 letters, digits, '.', '_' or '-', not "
      "starting with '-'",
      EscapeForMessage(name));
}

// A queue as read, with where its parts are (for the checks across the tree).
struct ParsedQueue {
  model::QueueConfig config;
  Pos name_pos;
  std::string name_path;  // "queues[0].children[1].name"
  bool name_valid = false;
  AmountPositions borrowing_pos;
  AmountPositions lending_pos;
  std::vector<ParsedQueue> children;
};

class PolicyParser {
 public:
  explicit PolicyParser(Sink& sink) : sink_(sink) {}

  model::Policy Parse(const YAML::Node& map) {
    model::Policy policy;
    static const std::vector<std::string> kKeys = {
        "kind",         "queues", "pipeline_limits", "fair_share", "aging",    "scoring",
        "order",        "las",    "preemption",      "backfill",   "accounts", "private_data",
        "submit_limits"};
    static const std::map<std::string, std::string> kAliases = {
        {"queue", "queues"},
        {"tree", "queues"},
        {"pipelines", "pipeline_limits"},
        {"pipeline", "pipeline_limits"},
        {"fairshare", "fair_share"},
        {"half_life", "fair_share.half_life"},
        {"score", "scoring"},
        {"placement", "scoring"},
        {"preempt", "preemption"},
        {"min_run_time", "preemption.min_run_time"},
        {"grace_period", "preemption.grace_period"},
        {"queue_order", "order"},
        {"ordering", "order"},
        {"sort", "order"},
        {"tiresias", "las"},
        {"thresholds", "las.thresholds"},
        {"unix_accounts", "accounts"},
        {"users", "accounts"},
        {"run_as", "accounts"},
        {"privatedata", "private_data"},
        {"private", "private_data"},
        {"max_submit_jobs", "submit_limits"},
        {"max_submitted_jobs", "submit_limits"}};
    const Pos pos = PosOf(map.Mark());
    Fields f(map, "", kKeys, kAliases, sink_);

    if (auto v = f.Get("kind")) {
      if (auto kind = ReadString(*v, sink_); kind && *kind != "Policy") {
        sink_.Add(v->pos, v->path, fmt::format("unsupported kind '{}'; expected 'Policy'", *kind));
      }
    } else if (f.Written("kind")) {
      sink_.Add(f.KeyPos("kind"), "kind", "must not be empty");
    } else {
      sink_.Add(pos, "kind", "required field is missing (write kind: Policy)");
    }

    if (auto v = f.Get("queues")) {
      if (auto items = ReadList(*v, "a list of queues", sink_)) {
        std::vector<ParsedQueue> roots;
        for (const Value& item : *items) {
          if (auto queue = ReadQueue(item)) roots.push_back(std::move(*queue));
        }
        CheckNames(roots);
        CheckLimits(roots);
        for (ParsedQueue& root : roots) policy.queues.push_back(Take(root));
      }
    }
    if (auto v = f.Get("pipeline_limits")) policy.pipeline_limits = ReadLimits(*v);
    if (auto v = f.Get("fair_share")) ReadFairShare(*v, policy);
    if (auto v = f.Get("aging")) ReadAging(*v, policy);
    if (auto v = f.Get("scoring")) ReadScoring(*v, policy);
    if (auto v = f.Get("order")) ReadOrder(*v, policy);
    if (auto v = f.Get("las")) ReadLas(*v, policy);
    if (auto v = f.Get("preemption")) ReadPreemption(*v, policy);
    if (auto v = f.Get("backfill")) {
      if (ExpectMap(*v, sink_)) {
        Fields b(v->node, v->path, {"enabled"}, {{"enable", "enabled"}}, sink_);
        if (auto q = b.Get("enabled")) policy.backfill = ReadBool(*q, sink_).value_or(true);
      }
    }
    if (auto v = f.Get("accounts")) ReadAccounts(*v, policy.accounts);
    if (auto v = f.Get("private_data")) policy.private_data = ReadBool(*v, sink_).value_or(false);
    if (auto v = f.Get("submit_limits")) ReadSubmitLimits(*v, policy);
    return policy;
  }

 private:
  std::optional<ParsedQueue> ReadQueue(const Value& v) {
    if (!ExpectMap(v, sink_)) return std::nullopt;
    static const std::vector<std::string> kKeys = {
        "name",   "weight",      "quota",    "borrowing_limit", "lending_limit",
        "limits", "user_limits", "children", "executor",        "access"};
    static const std::map<std::string, std::string> kAliases = {
        {"nominal", "quota"},
        {"nominal_quota", "quota"},
        {"guarantee", "quota"},
        {"borrow_limit", "borrowing_limit"},
        {"max_borrow", "borrowing_limit"},
        {"lend_limit", "lending_limit"},
        {"max_lend", "lending_limit"},
        {"queues", "children"},
        {"subqueues", "children"},
        {"per_user_limits", "user_limits"},
        {"per_user", "user_limits"},
        {"max_running_jobs", "limits.max_running_jobs"},
        {"grants", "access"},
        {"acl", "access"},
        {"permissions", "access"}};
    Fields f(v.node, v.path, kKeys, kAliases, sink_);
    ParsedQueue queue;
    model::QueueConfig& config = queue.config;

    queue.name_path = Child(v.path, "name");
    if (auto q = f.Get("name")) {
      if (auto name = ReadString(*q, sink_)) {
        queue.name_pos = q->pos;
        if (IsValidName(*name)) {
          config.name = *name;
          queue.name_valid = true;
        } else {
          sink_.Add(q->pos, q->path, InvalidNameMessage("queue name", *name));
        }
      }
    } else if (f.Written("name")) {
      sink_.Add(f.KeyPos("name"), Child(v.path, "name"), "must not be empty");
    } else {
      sink_.Add(v.pos, Child(v.path, "name"), "required field is missing");
    }

    if (auto q = f.Get("weight")) config.weight = ReadWeight(*q).value_or(1.0);
    if (auto q = f.Get("quota")) config.nominal = ReadResourceMap(*q, nullptr);
    if (auto q = f.Get("borrowing_limit")) {
      config.borrowing_limit = ReadResourceMap(*q, &queue.borrowing_pos);
    }
    if (auto q = f.Get("lending_limit")) {
      config.lending_limit = ReadResourceMap(*q, &queue.lending_pos);
    }
    if (auto q = f.Get("limits")) config.limits = ReadLimits(*q);
    if (auto q = f.Get("user_limits")) config.user_limits = ReadLimits(*q);
    if (auto q = f.Get("executor")) config.executor = ReadExecutor(*q);
    if (auto q = f.Get("access")) config.access = ReadAccess(*q);

    if (auto q = f.Get("children")) {
      if (auto items = ReadList(*q, "a list of queues", sink_)) {
        for (const Value& item : *items) {
          if (auto child = ReadQueue(item)) queue.children.push_back(std::move(*child));
        }
      }
    }
    return queue;
  }

  // `executor: KIND` or `executor: {kind: KIND, <that kind's options>}` (docs/operations.md).
  std::optional<model::ExecutorConfig> ReadExecutor(const Value& v) {
    model::ExecutorConfig config;
    auto read_kind = [&](const Value& kind_value) {
      std::optional<std::string> name = ReadString(kind_value, sink_);
      if (!name) return false;
      if (auto kind = model::ParseExecutorKind(*name)) {
        config.kind = *kind;
        return true;
      }
      sink_.Add(kind_value.pos, kind_value.path,
                fmt::format("unknown executor '{}'", *name) +
                    DidYouMean(*name, model::kExecutorKindNames.Choices(),
                               "expected one of " + model::kExecutorKindNames.ChoiceList(),
                               HintForm::kAsideThenExpected));
      return false;
    };
    if (v.node.IsScalar()) {
      if (!read_kind(v)) return std::nullopt;
      return config;
    }
    if (!ExpectMap(v, sink_)) return std::nullopt;
    static const std::vector<std::string> kKeys = {
        "kind",        "partition",      "qos",
        "account",     "namespace",      "scheduler_name",
        "kueue_queue", "gang_scheduler", "gang_scheduler_version",
        "dra",         "device_class",   "mig_device_class",
        "dra_driver",  "image",          "service_account"};
    static const std::map<std::string, std::string> kAliases = {{"type", "kind"},
                                                                {"scheduler", "scheduler_name"},
                                                                {"queue_name", "kueue_queue"},
                                                                {"local_queue", "kueue_queue"},
                                                                {"gang", "gang_scheduler"},
                                                                {"pod_group", "gang_scheduler"}};
    Fields f(v.node, v.path, kKeys, kAliases, sink_);
    auto kind = f.Get("kind");
    if (!kind) {
      sink_.Add(v.pos, Child(v.path, "kind"),
                "required field is missing (local, slurm or kubernetes)");
      return std::nullopt;
    }
    if (!read_kind(*kind)) return std::nullopt;
    auto text = [&](const char* key, std::string& out) {
      if (auto q = f.Get(key)) {
        if (auto value = ReadString(*q, sink_)) out = *value;
      }
    };
    // Options of another kind than `kind` are mistakes, not silently ignored.
    auto only_for = [&](model::ExecutorKind owner, std::initializer_list<const char*> keys) {
      if (config.kind == owner) return;
      for (const char* key : keys) {
        if (auto q = f.Get(key)) {
          sink_.Add(
              q->pos, q->path,
              fmt::format("is an option of the {} executor, not of {}",
                          model::ExecutorKindName(owner), model::ExecutorKindName(config.kind)));
        }
      }
    };
    only_for(model::ExecutorKind::kSlurm, {"partition", "qos", "account"});
    only_for(
        model::ExecutorKind::kKubernetes,
        {"namespace", "scheduler_name", "kueue_queue", "gang_scheduler", "gang_scheduler_version",
         "dra", "device_class", "mig_device_class", "dra_driver", "image", "service_account"});
    if (config.kind == model::ExecutorKind::kSlurm) {
      text("partition", config.slurm.partition);
      text("qos", config.slurm.qos);
      text("account", config.slurm.account);
    }
    if (config.kind == model::ExecutorKind::kKubernetes) {
      model::KubernetesQueueOptions& k = config.kubernetes;
      text("namespace", k.namespace_name);
      text("scheduler_name", k.scheduler_name);
      text("kueue_queue", k.kueue_queue);
      if (auto q = f.Get("gang_scheduler")) {
        if (auto value = ReadString(*q, sink_)) {
          if (*value == "none" || *value == "volcano" || *value == "kai" ||
              *value == "coscheduling") {
            k.gang_scheduler = *value == "none" ? "" : *value;
          } else {
            sink_.Add(q->pos, q->path,
                      fmt::format("unknown gang scheduler '{}'; expected one of none, volcano, "
                                  "kai, coscheduling",
                                  *value));
          }
        }
      }
      if (auto q = f.Get("dra")) k.dra = ReadBool(*q, sink_).value_or(false);
      text("gang_scheduler_version", k.gang_scheduler_version);
      text("device_class", k.device_class);
      text("mig_device_class", k.mig_device_class);
      text("dra_driver", k.dra_driver);
      text("image", k.image);
      text("service_account", k.service_account);
    }
    return config;
  }

  // A fair-share weight: a number greater than zero ("2", "0.5").
  std::optional<double> ReadWeight(const Value& v) {
    if (v.node.IsScalar()) {
      const std::string& text = v.node.Scalar();
      double weight = 0;
      auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), weight);
      if (ec == std::errc() && end == text.data() + text.size() && std::isfinite(weight)) {
        if (weight > 0) return weight;
        sink_.Add(v.pos, v.path, fmt::format("must be greater than zero, found {}", text));
        return std::nullopt;
      }
    }
    sink_.Add(v.pos, v.path,
              fmt::format("expected a number such as 1 or 2.5, found {}", Describe(v.node)));
    return std::nullopt;
  }

  // {cpu, memory, gpu, gpu_models: {MODEL: amount}}.
  model::ResourceAmounts ReadResourceMap(const Value& v, AmountPositions* positions) {
    model::ResourceAmounts amounts;
    if (!ExpectMap(v, sink_)) return amounts;
    Fields f(v.node, v.path, ResourceKeys(), ResourceAliases(), sink_);
    ReadAmounts(f, amounts, positions);
    return amounts;
  }

  // The resource keys of `f` into `amounts`, with their positions when `positions` is set.
  void ReadAmounts(const Fields& f, model::ResourceAmounts& amounts, AmountPositions* positions) {
    auto add = [&](const std::string& resource, const Value& q, std::optional<std::int64_t> n) {
      if (!n) return;
      amounts[resource] = *n;
      if (positions) (*positions)[resource] = AmountSite{q.pos, q.path};
    };
    if (auto q = f.Get("cpu")) {
      add("cpu", *q, ReadQuantity<std::int64_t>(*q, sink_, &ParseCpuMillis, "64 or 500m"));
    }
    if (auto q = f.Get("memory")) {
      add("memory", *q, ReadQuantity<std::int64_t>(*q, sink_, &ParseBytes, "512Gi"));
    }
    if (auto q = f.Get("gpu")) {
      add("gpu", *q, ReadQuantity<std::int64_t>(*q, sink_, &ParseMillis, "8 or 2500m"));
    }
    if (auto q = f.Get("gpu_models")) {
      if (!q->node.IsMap()) {
        sink_.Add(q->pos, q->path,
                  fmt::format("expected a mapping of GPU models to amounts (gpu_models: {{H100: "
                              "4}}), found {}",
                              Describe(q->node)));
        return;
      }
      std::map<std::string, int> first_line;  // by lower-cased model
      for (const auto& pair : q->node) {
        const Pos key_pos = PosOf(pair.first.Mark());
        if (!pair.first.IsScalar() || pair.first.Scalar().empty()) {
          sink_.Add(key_pos, q->path,
                    fmt::format("GPU model names must be non-empty strings, found {}",
                                Describe(pair.first)));
          continue;
        }
        const std::string& model = pair.first.Scalar();
        const std::string path = Child(q->path, model);
        std::string lower = model;
        std::transform(lower.begin(), lower.end(), lower.begin(),
                       [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
        if (auto seen = first_line.find(lower); seen != first_line.end()) {
          sink_.Add(key_pos, path,
                    fmt::format("duplicate GPU model '{}'; it is already set at line {} (models "
                                "are compared without case)",
                                model, seen->second));
          continue;
        }
        first_line[lower] = key_pos.line;
        if (!pair.second.IsDefined() || pair.second.IsNull()) {
          sink_.Add(key_pos, path, "must not be empty");
          continue;
        }
        const Value amount{pair.second, path, PosOf(pair.second.Mark()), key_pos};
        add("gpu:" + lower, amount,
            ReadQuantity<std::int64_t>(amount, sink_, &ParseMillis, "4 or 2500m"));
      }
    }
  }

  // {max_running_jobs, cpu, memory, gpu, gpu_models}.
  model::Limits ReadLimits(const Value& v) {
    model::Limits limits;
    if (!ExpectMap(v, sink_)) return limits;
    static const std::vector<std::string> kKeys = [] {
      std::vector<std::string> keys = {"max_running_jobs"};
      keys.insert(keys.end(), ResourceKeys().begin(), ResourceKeys().end());
      return keys;
    }();
    Fields f(v.node, v.path, kKeys, ResourceAliases(), sink_);
    if (auto q = f.Get("max_running_jobs")) {
      if (auto n = ReadCount(*q, sink_, 0)) limits.max_running_jobs = *n;
    }
    ReadAmounts(f, limits.max_resources, nullptr);
    return limits;
  }

  std::optional<DurationMs> ReadDuration(const std::optional<Value>& v, std::string_view example) {
    if (!v) return std::nullopt;
    return ReadQuantity<DurationMs>(*v, sink_, &ParseDuration, example);
  }

  void ReadFairShare(const Value& v, model::Policy& policy) {
    if (!ExpectMap(v, sink_)) return;
    Fields f(v.node, v.path, {"half_life"}, {{"halflife", "half_life"}, {"decay", "half_life"}},
             sink_);
    if (auto d = ReadDuration(f.Get("half_life"), "1h")) policy.fair_share_half_life = *d;
  }

  void ReadAging(const Value& v, model::Policy& policy) {
    if (!ExpectMap(v, sink_)) return;
    Fields f(v.node, v.path, {"interval", "step", "max"},
             {{"every", "interval"},
              {"period", "interval"},
              {"increment", "step"},
              {"maximum", "max"},
              {"limit", "max"},
              {"cap", "max"}},
             sink_);
    if (auto d = ReadDuration(f.Get("interval"), "10m")) policy.aging_interval = *d;
    if (auto q = f.Get("step")) policy.aging_step = ReadCount(*q, sink_, 1).value_or(100);
    if (auto q = f.Get("max")) policy.aging_max = ReadCount(*q, sink_, 0).value_or(1000);
  }

  void ReadScoring(const Value& v, model::Policy& policy) {
    std::optional<std::string> name = ReadString(v, sink_);
    if (!name) return;
    if (auto scoring = model::ParseScoring(*name)) {
      policy.scoring = *scoring;
      return;
    }
    sink_.Add(v.pos, v.path,
              fmt::format("unknown scoring '{}'", *name) +
                  DidYouMean(*name, model::kScoringNames.Choices(),
                             "expected one of " + model::kScoringNames.ChoiceList(),
                             HintForm::kAsideThenExpected));
  }

  void ReadOrder(const Value& v, model::Policy& policy) {
    std::optional<std::string> name = ReadString(v, sink_);
    if (!name) return;
    if (auto order = model::ParseQueueOrder(*name)) {
      policy.order = *order;
      return;
    }
    sink_.Add(v.pos, v.path,
              fmt::format("unknown order '{}'", *name) +
                  DidYouMean(*name, model::kQueueOrderNames.Choices(),
                             "expected one of " + model::kQueueOrderNames.ChoiceList(),
                             HintForm::kAsideThenExpected));
  }

  // {thresholds: [GPU-seconds, ...]}: at least one, each a whole number of at least 1, each
  // greater than the one before.
  void ReadLas(const Value& v, model::Policy& policy) {
    if (!ExpectMap(v, sink_)) return;
    Fields f(v.node, v.path, {"thresholds"},
             {{"threshold", "thresholds"}, {"queue_limit", "thresholds"}, {"limits", "thresholds"}},
             sink_);
    auto q = f.Get("thresholds");
    if (!q) return;
    auto items = ReadList(*q, "a list of GPU-seconds such as [3250, 7200]", sink_);
    if (!items) return;
    if (items->empty()) {
      sink_.Add(q->pos, q->path,
                "must list at least one threshold in GPU-seconds (such as [3250, 7200])");
      return;
    }
    std::vector<std::int64_t> thresholds;
    bool ok = true;
    std::optional<int> previous;  // the last valid threshold
    for (const Value& item : *items) {
      std::optional<int> threshold =
          ReadCount(item, sink_, 1, "GPU-seconds are whole numbers: write 3250, not 3250.5");
      if (!threshold) {
        ok = false;
        continue;
      }
      if (previous && *threshold <= *previous) {
        sink_.Add(item.pos, item.path,
                  fmt::format("must be greater than the threshold before it ({}), found {}; "
                              "thresholds are ascending",
                              *previous, *threshold));
        ok = false;
      }
      previous = threshold;
      thresholds.push_back(*threshold);
    }
    if (ok) policy.las_thresholds = std::move(thresholds);
  }

  void ReadPreemption(const Value& v, model::Policy& policy) {
    if (!ExpectMap(v, sink_)) return;
    Fields f(v.node, v.path, {"enabled", "min_run_time", "grace_period"},
             {{"enable", "enabled"}, {"grace", "grace_period"}, {"min_runtime", "min_run_time"}},
             sink_);
    if (auto q = f.Get("enabled")) policy.preemption = ReadBool(*q, sink_).value_or(true);
    if (auto d = ReadDuration(f.Get("min_run_time"), "5m")) policy.min_run_time = *d;
    if (auto d = ReadDuration(f.Get("grace_period"), "30s")) policy.preemption_grace = *d;
  }

  // `access: {TEAM: [VERB, ...], "*": [...]}` (docs/security.md): a team name as owners' teams are
  // written, or "*" for every team; each verb one a queue may grant (model::IsGrantable).
  std::optional<model::AccessGrants> ReadAccess(const Value& v) {
    if (!ExpectMap(v, sink_)) return std::nullopt;
    std::vector<std::string> grantable;
    for (model::Verb verb : model::kVerbNames.Values()) {
      if (model::IsGrantable(verb)) grantable.emplace_back(model::kVerbNames.Name(verb));
    }
    model::AccessGrants grants;
    for (const auto& pair : v.node) {
      const Pos key_pos = PosOf(pair.first.Mark());
      if (!pair.first.IsScalar()) {
        sink_.Add(key_pos, v.path,
                  fmt::format("teams must be strings, found {}", Describe(pair.first)));
        continue;
      }
      const std::string team = pair.first.Scalar();
      const Value entry{pair.second, Child(v.path, team), PosOf(pair.second, key_pos), key_pos};
      if (team != "*" && !IsValidPrincipal(team)) {
        sink_.Add(key_pos, entry.path, InvalidPrincipalMessage("team", team));
        continue;
      }
      std::vector<model::Verb>& verbs = grants[team];
      const std::string choices = fmt::format("{}", fmt::join(grantable, ", "));
      auto items = ReadList(entry, "a list of verbs (" + choices + ")", sink_);
      if (!items) continue;
      for (const Value& item : *items) {
        std::optional<std::string> name = ReadString(item, sink_);
        if (!name) continue;
        std::optional<model::Verb> verb = model::kVerbNames.Parse(*name);
        if (!verb || !model::IsGrantable(*verb)) {
          sink_.Add(item.pos, item.path,
                    fmt::format("'{}' is not a verb a queue grants", EscapeForMessage(*name)) +
                        DidYouMean(*name, grantable, "expected one of " + choices,
                                   HintForm::kAsideThenExpected));
          continue;
        }
        if (std::find(verbs.begin(), verbs.end(), *verb) == verbs.end()) verbs.push_back(*verb);
      }
    }
    return grants;
  }

  // `submit_limits: {per_user: {max_pending_jobs: N, max_submitted_jobs: N}, per_team: {...}}`.
  void ReadSubmitLimits(const Value& v, model::Policy& policy) {
    if (!ExpectMap(v, sink_)) return;
    Fields f(
        v.node, v.path, {"per_user", "per_team"},
        {{"user", "per_user"}, {"users", "per_user"}, {"team", "per_team"}, {"teams", "per_team"}},
        sink_);
    auto read = [&](const char* key, model::SubmitLimits& limits) {
      auto q = f.Get(key);
      if (!q || !ExpectMap(*q, sink_)) return;
      Fields g(q->node, q->path, {"max_pending_jobs", "max_submitted_jobs"},
               {{"max_pending", "max_pending_jobs"},
                {"max_submit_jobs", "max_submitted_jobs"},
                {"max_jobs", "max_submitted_jobs"},
                {"max_submitted", "max_submitted_jobs"}},
               sink_);
      if (auto n = g.Get("max_pending_jobs")) {
        if (auto count = ReadCount(*n, sink_, 0)) limits.max_pending_jobs = *count;
      }
      if (auto n = g.Get("max_submitted_jobs")) {
        if (auto count = ReadCount(*n, sink_, 0)) limits.max_submitted_jobs = *count;
      }
    };
    read("per_user", policy.user_submit_limits);
    read("per_team", policy.team_submit_limits);
  }

  // `accounts: {map: {IDENTITY: ACCOUNT, ...}, allow_root: [IDENTITY, ...]}`: identities as
  // owners are written (IsValidPrincipal), accounts as Unix account names.
  void ReadAccounts(const Value& v, model::Accounts& accounts) {
    if (!ExpectMap(v, sink_)) return;
    Fields f(v.node, v.path, {"map", "allow_root"},
             {{"mapping", "map"},
              {"users", "map"},
              {"root", "allow_root"},
              {"root_users", "allow_root"}},
             sink_);
    if (auto q = f.Get("map")) {
      auto check_identity = [](const std::string& user) {
        return IsValidPrincipal(user) ? std::string() : InvalidPrincipalMessage("identity", user);
      };
      if (auto map = ReadStringMap(*q, sink_, check_identity)) {
        bool ok = true;
        for (const auto& pair : q->node) {
          const std::string& account = (*map)[pair.first.Scalar()];
          if (IsValidUnixAccount(account)) continue;
          sink_.Add(PosOf(pair.second, PosOf(pair.first.Mark())),
                    Child(q->path, pair.first.Scalar()), InvalidUnixAccountMessage(account));
          ok = false;
        }
        if (ok) accounts.map = std::move(*map);
      }
    }
    if (auto q = f.Get("allow_root")) {
      if (auto items = ReadList(*q, "a list of identities", sink_)) {
        for (const Value& item : *items) {
          std::optional<std::string> user = ReadString(item, sink_);
          if (!user) continue;
          if (IsValidPrincipal(*user)) {
            accounts.allow_root.push_back(*user);
          } else {
            sink_.Add(item.pos, item.path, InvalidPrincipalMessage("identity", *user));
          }
        }
      }
    }
  }

  // Leaf names are unique in the whole tree (jobs name leaves), and siblings have distinct names;
  // the first in file order is kept and each later one reported, once.
  void CheckNames(const std::vector<ParsedQueue>& roots) {
    std::vector<const ParsedQueue*> reported;
    CheckSiblingNames(roots, reported);
    std::vector<const ParsedQueue*> leaves;
    CollectLeaves(roots, leaves);
    std::stable_sort(leaves.begin(), leaves.end(), [](const ParsedQueue* a, const ParsedQueue* b) {
      return std::pair(a->name_pos.line, a->name_pos.column) <
             std::pair(b->name_pos.line, b->name_pos.column);
    });
    std::map<std::string, int> first_line;
    for (const ParsedQueue* leaf : leaves) {
      auto [it, inserted] = first_line.emplace(leaf->config.name, leaf->name_pos.line);
      if (inserted || std::find(reported.begin(), reported.end(), leaf) != reported.end()) {
        continue;
      }
      sink_.Add(leaf->name_pos, leaf->name_path,
                fmt::format("duplicate leaf queue name '{}'; the first is at line {} (jobs name "
                            "leaf queues, so their names are unique in the whole tree)",
                            leaf->config.name, it->second));
    }
  }

  void CheckSiblingNames(const std::vector<ParsedQueue>& siblings,
                         std::vector<const ParsedQueue*>& reported) {
    std::map<std::string, int> first_line;
    for (const ParsedQueue& queue : siblings) {
      CheckSiblingNames(queue.children, reported);
      if (!queue.name_valid) continue;
      auto [it, inserted] = first_line.emplace(queue.config.name, queue.name_pos.line);
      if (inserted) continue;
      sink_.Add(queue.name_pos, queue.name_path,
                fmt::format("duplicate queue name '{}' among its siblings; the first is at line "
                            "{}",
                            queue.config.name, it->second));
      reported.push_back(&queue);
    }
  }

  static void CollectLeaves(const std::vector<ParsedQueue>& queues,
                            std::vector<const ParsedQueue*>& out) {
    for (const ParsedQueue& queue : queues) {
      if (queue.children.empty() && queue.name_valid) out.push_back(&queue);
      CollectLeaves(queue.children, out);
    }
  }

  // The quota of `resource` a queue has: its own, or for a grouping queue that sets none, the sum
  // of its children's (a leaf that sets none has 0). Saturates at the int64 maximum.
  static std::int64_t EffectiveQuota(const ParsedQueue& queue, const std::string& resource) {
    if (auto it = queue.config.nominal.find(resource); it != queue.config.nominal.end()) {
      return it->second;
    }
    std::int64_t sum = 0;
    for (const ParsedQueue& child : queue.children) {
      const std::int64_t part = EffectiveQuota(child, resource);
      sum = part > std::numeric_limits<std::int64_t>::max() - sum
                ? std::numeric_limits<std::int64_t>::max()
                : sum + part;
    }
    return sum;
  }

  static void CollectGoverned(const std::vector<ParsedQueue>& queues,
                              std::set<std::string>& governed) {
    for (const ParsedQueue& queue : queues) {
      for (const auto& [resource, amount] : queue.config.nominal) governed.insert(resource);
      CollectGoverned(queue.children, governed);
    }
  }

  // A queue lends at most its quota (what it does not have, it cannot lend), and a borrowing
  // limit of a resource no queue sets a quota of would limit nothing (quotas do not govern it).
  void CheckLimits(const std::vector<ParsedQueue>& roots) {
    std::set<std::string> governed;
    CollectGoverned(roots, governed);
    CheckLimits(roots, governed);
  }

  void CheckLimits(const std::vector<ParsedQueue>& queues, const std::set<std::string>& governed) {
    for (const ParsedQueue& queue : queues) {
      for (const auto& [resource, lend] : queue.config.lending_limit) {
        const std::int64_t quota = EffectiveQuota(queue, resource);
        if (lend <= quota) continue;
        const bool summed = !queue.children.empty() && !queue.config.nominal.count(resource);
        const AmountSite& at = queue.lending_pos.at(resource);
        sink_.Add(
            at.pos, at.path,
            fmt::format("must not exceed the queue's quota of {} ({}{}), found {}", resource,
                        FormatAmount(resource, quota), summed ? ", the sum of its children's" : "",
                        FormatAmount(resource, lend)));
      }
      for (const auto& [resource, amount] : queue.config.borrowing_limit) {
        if (governed.count(resource)) continue;
        const AmountSite& at = queue.borrowing_pos.at(resource);
        sink_.Add(at.pos, at.path,
                  fmt::format("no queue sets a quota of {}, so quotas do not limit it and this "
                              "borrowing limit would limit nothing; set a quota of {} or remove "
                              "this",
                              resource, resource));
      }
      CheckLimits(queue.children, governed);
    }
  }

  static model::QueueConfig Take(ParsedQueue& queue) {
    model::QueueConfig config = std::move(queue.config);
    for (ParsedQueue& child : queue.children) config.children.push_back(Take(child));
    return config;
  }

  Sink& sink_;
};

}  // namespace

PolicyParseOutput ParsePolicyWithDiagnostics(std::string_view text, const ParseOptions& options) {
  Sink sink(options.file_name);
  model::Policy policy;
  internal::ReadGuarded(sink, "policy", [&] {
    std::optional<std::vector<YAML::Node>> documents =
        internal::LoadDocuments(text, options.limits.max_expanded_bytes, sink);
    if (!documents) return;
    bool found = false;
    for (const YAML::Node& document : *documents) {
      if (!document.IsDefined() || document.IsNull()) continue;  // empty documents
      const Pos pos = PosOf(document.Mark());
      if (!document.IsMap()) {
        sink.Add(pos, "",
                 fmt::format("expected a policy (a mapping with kind: Policy), found {}",
                             Describe(document)));
      } else if (found) {
        sink.Add(pos, "", "a policy file holds one policy; this is a second document");
      } else {
        policy = PolicyParser(sink).Parse(document);
      }
      found = true;
    }
    if (!found && sink.size() == 0) {
      sink.Add(Pos{}, "", "no policy found; write a mapping with kind: Policy");
    }
  });
  PolicyParseOutput out;
  out.diagnostics = sink.TakeSorted();
  if (out.diagnostics.empty()) out.policy = std::move(policy);
  return out;
}

Result<model::Policy> ParsePolicy(std::string_view text, const ParseOptions& options) {
  PolicyParseOutput out = ParsePolicyWithDiagnostics(text, options);
  if (out.diagnostics.empty()) return std::move(*out.policy);
  return DiagnosticsError(out.diagnostics, options.file_name);
}

}  // namespace drover::spec
