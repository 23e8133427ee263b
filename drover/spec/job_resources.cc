#include "drover/spec/job_resources.h"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "drover/common/quantity.h"
#include "drover/model/mig.h"
#include "drover/spec/suggest.h"

namespace drover::spec::internal {
namespace {

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

// {level: rack, mode: required|preferred}.
void ReadTopology(const Value& v, model::JobSpec& spec, Sink& sink) {
  if (!ExpectMap(v, sink)) return;
  static const std::vector<std::string> kKeys = {"level", "mode"};
  static const std::map<std::string, std::string> kAliases = {
      {"label", "level"}, {"key", "level"}, {"domain", "level"}, {"policy", "mode"}};
  Fields f(v.node, v.path, kKeys, kAliases, sink);
  bool required = true;
  if (auto q = f.Get("mode")) {
    if (auto mode = ReadString(*q, sink)) {
      if (*mode == "preferred") {
        required = false;
      } else if (*mode != "required") {
        static const std::vector<std::string> kModes = {"required", "preferred"};
        sink.Add(q->pos, q->path,
                 fmt::format("unknown mode '{}'", *mode) +
                     DidYouMean(*mode, kModes,
                                "expected required (every worker in one domain, or wait) or "
                                "preferred (one domain when one has room, else anywhere)",
                                HintForm::kAsideThenExpected));
      }
    }
  }
  std::optional<Value> level = f.Get("level");
  if (!level) {
    ReportMissing(f, v.pos, v.path, "level",
                  "required field is missing (the node label that names a domain, e.g. level: "
                  "rack)",
                  sink);
    return;
  }
  std::optional<std::string> label = ReadNonEmptyString(*level, sink);
  if (!label) return;
  if (label->find_first_of("= \t") != std::string::npos) {
    sink.Add(level->pos, level->path,
             fmt::format("invalid label name '{}': write the label's name only (level: rack), "
                         "without a value",
                         *label));
    return;
  }
  (required ? spec.requirements.topology_level : spec.preferences.topology_level) = *label;
}

// {label: "zone=a", weight: 10}.
std::optional<model::LabelPreference> ReadLabelPreference(const Value& v, Sink& sink) {
  if (!ExpectMap(v, sink)) return std::nullopt;
  const std::size_t errors = sink.size();
  static const std::vector<std::string> kKeys = {"label", "weight"};
  static const std::map<std::string, std::string> kAliases = {
      {"labels", "label"}, {"node_label", "label"}, {"score", "weight"}};
  Fields f(v.node, v.path, kKeys, kAliases, sink);
  model::LabelPreference preference;
  if (auto q = f.Get("label")) {
    if (auto label = ReadNonEmptyString(*q, sink)) {
      if (auto kv = SplitLabel(*label)) {
        preference.key = std::move(kv->first);
        preference.value = std::move(kv->second);
      } else {
        sink.Add(q->pos, q->path,
                 fmt::format("invalid label '{}': write key=value, e.g. zone=a", *label));
      }
    }
  } else {
    ReportMissing(f, v.pos, v.path, "label", "required field is missing (write label: key=value)",
                  sink);
  }
  if (auto q = f.Get("weight")) preference.weight = ReadCount(*q, sink, 1, {}, 100).value_or(1);
  if (sink.size() != errors) return std::nullopt;
  return preference;
}

std::optional<model::Toleration> ReadToleration(const Value& v, Sink& sink) {
  if (!v.node.IsDefined() || v.node.IsNull()) {
    sink.Add(v.pos, v.path, "expected a toleration (a mapping with key, operator, value, effect)");
    return std::nullopt;
  }
  if (!ExpectMap(v, sink)) return std::nullopt;
  const std::size_t errors = sink.size();
  static const std::vector<std::string> kKeys = {"key", "operator", "value", "effect"};
  static const std::map<std::string, std::string> kAliases = {{"op", "operator"}};
  Fields f(v.node, v.path, kKeys, kAliases, sink);
  model::Toleration t;
  if (auto q = f.Get("key")) t.key = ReadString(*q, sink).value_or("");
  if (auto q = f.Get("operator")) {
    if (auto op = ReadString(*q, sink)) {
      if (auto parsed = model::kTolerationOperatorNames.Parse(*op)) {
        t.op = *parsed;
      } else {
        sink.Add(q->pos, q->path,
                 fmt::format("unknown operator '{}'; expected {}", *op,
                             model::kTolerationOperatorNames.AlternativeList()));
      }
    }
  }
  std::optional<Value> value = f.Get("value");
  if (value) t.value = ReadString(*value, sink).value_or("");
  if (auto q = f.Get("effect")) {
    if (auto effect = ReadString(*q, sink)) {
      if (auto parsed = model::ParseTaintEffect(*effect)) {
        t.effect = *parsed;
      } else {
        sink.Add(q->pos, q->path,
                 fmt::format("unknown effect '{}'", *effect) +
                     DidYouMean(*effect, model::kTaintEffectNames.Choices(),
                                fmt::format("expected {}, or leave it out to tolerate every "
                                            "effect",
                                            model::kTaintEffectNames.AlternativeList()),
                                HintForm::kAsideThenExpected));
      }
    }
  }
  if (t.op == model::Toleration::Operator::kExists && value && !t.value.empty()) {
    sink.Add(value->pos, value->path, "must be empty when operator is Exists");
  }
  if (t.op == model::Toleration::Operator::kEqual && t.key.empty() && sink.size() == errors) {
    sink.Add(f.Written("key") ? f.KeyPos("key") : v.pos, Child(v.path, "key"),
             "is required when operator is Equal (use operator: Exists to tolerate every "
             "taint)");
  }
  if (sink.size() != errors) return std::nullopt;
  return t;
}

}  // namespace

void ReadResources(const std::optional<Value>& v, model::JobSpec& spec, Sink& sink) {
  model::Requirements& req = spec.requirements;
  req.per_worker.cpu_millis = 1000;
  req.per_worker.memory_bytes = 1LL << 30;
  req.per_worker.gpus = 0;
  if (!v || !ExpectMap(*v, sink)) return;
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
  Fields f(v->node, v->path, kKeys, kAliases, sink);
  if (auto q = f.Get("cpu")) {
    req.per_worker.cpu_millis =
        ReadQuantity<std::int64_t>(*q, sink, &ParseCpuMillis, "4 or 500m").value_or(1000);
  }
  if (auto q = f.Get("memory")) {
    req.per_worker.memory_bytes =
        ReadQuantity<std::int64_t>(*q, sink, &ParseBytes, "16Gi").value_or(1LL << 30);
  }
  std::optional<int> gpus = 0;
  if (auto q = f.Get("gpus")) {
    gpus = ReadCount(*q, sink, 0, q->node.IsScalar() ? FractionalGpusMessage(q->node) : "");
  }
  req.per_worker.gpus = gpus.value_or(0);

  // A part of one GPU: gpu_share (time-slicing) or mig (a MIG instance), never with whole
  // GPUs and never both.
  const std::optional<Value> share = f.Get("gpu_share");
  const std::optional<Value> mig = f.Get("mig");
  auto whole_gpus_conflict = [&](const Value& q) {
    sink.Add(q.pos, q.path,
             fmt::format("cannot be combined with gpus ({}): a worker gets whole GPUs or a "
                         "part of one GPU, not both; remove gpus or set it to 0",
                         *gpus));
  };
  if (share) {
    if (auto millis = ReadQuantity<std::int64_t>(*share, sink, &ParseMillis, "500m or 0.5")) {
      if (*millis < 1 || *millis > 999) {
        sink.Add(share->pos, share->path,
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
    if (auto written = ReadNonEmptyString(*mig, sink)) {
      std::string profile = *written;
      std::transform(profile.begin(), profile.end(), profile.begin(),
                     [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
      if (auto parsed = model::ParseMigProfile(profile); !parsed) {
        sink.Add(mig->pos, mig->path,
                 parsed.error().message + " (nvidia-smi mig -lgip lists a GPU's profiles)");
      } else if (share) {
        sink.Add(mig->pos, mig->path,
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
    if (auto bytes = ReadQuantity<std::int64_t>(*q, sink, &ParseBytes, "40Gi")) {
      if (!any_gpu) {
        sink.Add(q->pos, q->path, std::string(no_gpus));
      } else if (mig && !share && !(gpus && *gpus > 0)) {
        sink.Add(q->pos, q->path,
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
      models = ReadStringList(*q, sink);
    } else {
      sink.Add(
          q->pos, q->path,
          fmt::format("expected a GPU model or a list of models, found {}", Describe(q->node)));
    }
    if (models) {
      const bool has_empty =
          std::any_of(models->begin(), models->end(), [](const auto& m) { return m.empty(); });
      if (has_empty || models->empty()) {
        sink.Add(q->pos, q->path, "GPU model names must not be empty");
      } else if (!any_gpu) {
        sink.Add(q->pos, q->path, std::string(no_gpus));
      } else {
        req.gpu_models = std::move(*models);
      }
    }
  }
}

void ReadPlacement(const std::optional<Value>& v, model::JobSpec& spec, Sink& sink) {
  model::Requirements& req = spec.requirements;
  if (!v || !ExpectMap(*v, sink)) return;
  static const std::vector<std::string> kKeys = {"node_selector", "tolerations", "same_node",
                                                 "topology", "prefer"};
  static const std::map<std::string, std::string> kAliases = {
      {"selector", "node_selector"},  {"labels", "node_selector"}, {"toleration", "tolerations"},
      {"preferences", "prefer"},      {"preferred", "prefer"},     {"affinity", "prefer"},
      {"topology_level", "topology"}, {"locality", "topology"}};
  Fields f(v->node, v->path, kKeys, kAliases, sink);
  if (auto q = f.Get("node_selector")) {
    req.node_selector = ReadStringMap(*q, sink, NoKeyCheck).value_or(decltype(req.node_selector){});
  }
  if (auto q = f.Get("tolerations")) {
    if (auto items = ReadList(*q, "a list of tolerations", sink)) {
      for (const Value& item : *items) {
        if (auto toleration = ReadToleration(item, sink)) req.tolerations.push_back(*toleration);
      }
    }
  }
  if (auto q = f.Get("same_node")) req.same_node = ReadBool(*q, sink).value_or(false);
  if (auto q = f.Get("topology")) ReadTopology(*q, spec, sink);
  if (auto q = f.Get("prefer")) {
    if (auto items =
            ReadList(*q, "a list of label preferences ({label: zone=a, weight: 10})", sink)) {
      for (const Value& item : *items) {
        if (auto preference = ReadLabelPreference(item, sink)) {
          spec.preferences.node_labels.push_back(std::move(*preference));
        }
      }
    }
  }
}

}  // namespace drover::spec::internal
