#include "drover/spec/service_parser.h"

#include <fmt/format.h>

#include <map>
#include <optional>
#include <string>
#include <vector>

#include "drover/common/prometheus.h"
#include "drover/common/quantity.h"
#include "drover/spec/job_graph.h"
#include "drover/spec/job_parser.h"
#include "drover/spec/job_sweep.h"

namespace drover::spec::internal {
namespace {

// A duration field of `f` ("30s", "5m") into `out`; `positive`: zero is refused too.
void ReadDurationField(const Fields& f, const std::string& key, bool positive, DurationMs& out,
                       Sink& sink) {
  const std::optional<Value> v = f.Get(key);
  if (!v) return;
  std::optional<DurationMs> d = ReadQuantity<DurationMs>(*v, sink, &ParseDuration, "30s");
  if (!d) return;
  if (*d < 0 || (positive && *d == 0)) {
    sink.Add(v->pos, v->path, positive ? "must be greater than zero" : "must not be negative");
    return;
  }
  out = *d;
}

std::optional<model::ProbeSpec> ReadProbe(const Value& v, Sink& sink) {
  if (!ExpectMap(v, sink)) return std::nullopt;
  static const std::vector<std::string> kKeys = {"path", "interval", "timeout", "failure_threshold",
                                                 "initial_delay"};
  static const std::map<std::string, std::string> kAliases = {
      {"httpGet", "path"},
      {"http_get", "path"},
      {"periodSeconds", "interval"},
      {"period", "interval"},
      {"failureThreshold", "failure_threshold"},
      {"failures", "failure_threshold"},
      {"initialDelaySeconds", "initial_delay"},
      {"delay", "initial_delay"}};
  Fields f(v.node, v.path, kKeys, kAliases, sink);
  model::ProbeSpec probe;
  if (auto p = f.Get("path")) {
    if (auto path = ReadNonEmptyString(*p, sink)) {
      if (path->front() != '/' || path->find_first_of(" \t\r\n") != std::string::npos ||
          path->size() > 1024) {
        sink.Add(p->pos, p->path,
                 fmt::format("invalid probe path '{}': an HTTP path starting with '/', without "
                             "spaces, at most 1024 characters",
                             *path));
      } else {
        probe.path = *path;
      }
    }
  }
  ReadDurationField(f, "interval", /*positive=*/true, probe.interval_ms, sink);
  ReadDurationField(f, "timeout", /*positive=*/true, probe.timeout_ms, sink);
  ReadDurationField(f, "initial_delay", /*positive=*/false, probe.initial_delay_ms, sink);
  if (auto t = f.Get("failure_threshold")) {
    probe.failure_threshold = ReadCount(*t, sink, 1, {}, 100).value_or(probe.failure_threshold);
  }
  return probe;
}

// autoscaling.saturation: {metric, target_per_replica (required), path, interval, timeout}.
std::optional<model::SaturationSpec> ReadSaturation(const Value& v, Sink& sink) {
  if (!ExpectMap(v, sink)) return std::nullopt;
  static const std::vector<std::string> kKeys = {"metric", "target_per_replica", "path", "interval",
                                                 "timeout"};
  static const std::map<std::string, std::string> kAliases = {{"target", "target_per_replica"},
                                                              {"name", "metric"}};
  Fields f(v.node, v.path, kKeys, kAliases, sink);
  model::SaturationSpec saturation;
  if (auto m = f.Get("metric")) {
    if (auto metric = ReadNonEmptyString(*m, sink)) {
      if (prometheus::IsMetricName(*metric)) {
        saturation.metric = *metric;
      } else {
        sink.Add(m->pos, m->path,
                 fmt::format("invalid metric name '{}': {}", *metric, prometheus::kMetricNameRule));
      }
    }
  }
  if (auto t = f.Get("target_per_replica")) {
    if (auto millis = ReadQuantity<std::int64_t>(*t, sink, &ParseMillis, "2")) {
      if (*millis <= 0 || *millis > 1'000'000'000) {
        sink.Add(t->pos, t->path, "must be above 0 and at most 1000000");
      } else {
        saturation.target_per_replica = static_cast<double>(*millis) / 1000.0;
      }
    }
  } else {
    ReportMissing(f, v.pos, v.path, "target_per_replica",
                  "required field is missing (the metric's value per replica to aim for)", sink);
  }
  if (auto p = f.Get("path")) {
    if (auto path = ReadNonEmptyString(*p, sink)) {
      if (path->front() != '/' || path->find_first_of(" \t\r\n") != std::string::npos ||
          path->size() > 1024) {
        sink.Add(p->pos, p->path, "an HTTP path starting with '/', without spaces");
      } else {
        saturation.path = *path;
      }
    }
  }
  ReadDurationField(f, "interval", /*positive=*/true, saturation.interval_ms, sink);
  ReadDurationField(f, "timeout", /*positive=*/true, saturation.timeout_ms, sink);
  if (auto i = f.Get("interval");
      i && (saturation.interval_ms < 100 || saturation.interval_ms > kMillisPerHour)) {
    sink.Add(i->pos, i->path, "must be between 100ms and 1h");
  }
  if (auto t = f.Get("timeout"); t && saturation.timeout_ms > kMillisPerMinute) {
    sink.Add(t->pos, t->path, "must be at most 1m");
  }
  return saturation;
}

// The fields of a job that a replica cannot have, and why.
const std::map<std::string, std::string>& ForbiddenTemplateFields() {
  static const std::map<std::string, std::string> kFields = {
      {"name", "a replica is named after its service"},
      {"owner", "set owner on the service"},
      {"team", "set team on the service"},
      {"queue", "set queue on the service"},
      {"priority", "set priority on the service"},
      {"pipeline", "a replica is not part of a pipeline"},
      {"workers", "a replica is one worker; scale with replicas"},
      {"min_workers", "a replica is one worker; scale with replicas"},
      {"depends_on", "a replica starts whenever it is placed"},
      {"if", "a replica starts whenever it is placed"},
      {"inputs", "a replica starts whenever it is placed"},
      {"outputs", "a replica publishes no outputs"},
      {"timeout", "a replica runs until it is stopped"},
      {"retry", "a dead replica is replaced by the service"},
      {"checkpoint_dir", "a replica keeps no checkpoints"},
      {"resume", "a replica keeps no checkpoints"},
      {"interruptible", "replicas up to replicas.min are protected, the rest interruptible"},
      {"hold_infeasible", "set hold_infeasible on the service"},
  };
  return kFields;
}

}  // namespace

model::ServiceSpec ParseService(const YAML::Node& map, const ParseOptions& options, Sink& sink) {
  static const std::vector<std::string> kKeys = {
      "kind",     "name",     "models",    "owner",    "team",        "queue",          "priority",
      "template", "replicas", "readiness", "liveness", "autoscaling", "hold_infeasible"};
  static const std::map<std::string, std::string> kAliases = {{"model", "models"},
                                                              {"replica", "template"},
                                                              {"spec", "template"},
                                                              {"job", "template"},
                                                              {"command", "template.command"},
                                                              {"script", "template.script"},
                                                              {"resources", "template.resources"},
                                                              {"image", "template.image"},
                                                              {"env", "template.env"},
                                                              {"readinessProbe", "readiness"},
                                                              {"livenessProbe", "liveness"},
                                                              {"autoscale", "autoscaling"},
                                                              {"min_replicas", "replicas.min"},
                                                              {"max_replicas", "replicas.max"}};
  const Pos pos = PosOf(map.Mark());
  Fields f(map, "", kKeys, kAliases, sink);
  model::ServiceSpec service;

  if (auto v = f.Get("name")) {
    if (auto name = ReadString(*v, sink)) {
      if (IsValidName(*name)) {
        service.name = *name;
      } else {
        sink.Add(v->pos, v->path, InvalidNameMessage("service name", *name));
      }
    }
  } else {
    ReportMissing(f, pos, "", "name", "required field is missing", sink);
  }

  if (auto v = f.Get("models")) {
    if (auto models = ReadStringList(*v, sink)) {
      if (models->empty()) sink.Add(v->pos, v->path, "must name at least one model");
      for (std::size_t i = 0; i < models->size(); ++i) {
        const std::string& model = (*models)[i];
        if (model.empty() || model.size() > 256 ||
            model.find_first_of(" \t\r\n") != std::string::npos) {
          sink.Add(v->pos, Index(v->path, i),
                   fmt::format("invalid model name '{}': 1 to 256 characters, no spaces", model));
        }
      }
      service.models = *models;
    }
  } else {
    ReportMissing(f, pos, "", "models",
                  "required field is missing (the model names the gateway routes here)", sink);
  }

  model::JobSpec base;
  base.hold_infeasible = options.hold_infeasible;
  ReadJobDefaults(f, base, sink);
  base.name = service.name.empty() ? "replica" : service.name;

  if (auto v = f.Get("template"); v && ExpectMap(*v, sink)) {
    for (const auto& [key, why] : ForbiddenTemplateFields()) {
      const YAML::Node field = v->node[key];
      if (!field.IsDefined()) continue;
      sink.Add(PosOf(field, v->pos), Child(v->path, key),
               fmt::format("not allowed in a service's template: {}", why));
    }
    std::vector<ParsedJob> jobs;
    jobs.push_back(ParseJob(v->node, v->path, JobForm::kCronJob, base, options, sink));
    CheckGroup(jobs, /*pipeline=*/false, sink);
    std::vector<model::JobSpec> expanded = ExpandGroup(jobs, options.base_dir);
    if (!expanded.empty()) service.replica = std::move(expanded.front());
  } else if (!v) {
    ReportMissing(f, pos, "", "template",
                  "required field is missing (the replica: command or script, resources, env)",
                  sink);
  }
  service.replica.retry = model::RetryPolicy{};
  service.replica.timeout.reset();

  if (auto v = f.Get("replicas"); v && ExpectMap(*v, sink)) {
    static const std::vector<std::string> kReplicaKeys = {"min", "max"};
    static const std::map<std::string, std::string> kReplicaAliases = {
        {"minimum", "min"}, {"maximum", "max"}, {"count", "min"}};
    Fields r(v->node, v->path, kReplicaKeys, kReplicaAliases, sink);
    std::optional<int> min, max;
    if (auto m = r.Get("min")) min = ReadCount(*m, sink, 0, {}, model::kMaxReplicas);
    if (auto m = r.Get("max")) max = ReadCount(*m, sink, 1, {}, model::kMaxReplicas);
    service.min_replicas = min.value_or(max ? std::min(*max, 1) : 1);
    service.max_replicas = max.value_or(std::max(service.min_replicas, 1));
    if (min && max && *min > *max) {
      sink.Add(r.Get("min")->pos, r.Get("min")->path,
               fmt::format("min ({}) must not exceed max ({})", *min, *max));
    }
  }

  if (auto v = f.Get("readiness")) service.readiness = ReadProbe(*v, sink);
  if (auto v = f.Get("liveness")) service.liveness = ReadProbe(*v, sink);

  if (auto v = f.Get("autoscaling"); v && ExpectMap(*v, sink)) {
    static const std::vector<std::string> kScaleKeys = {"target_in_flight_per_replica",
                                                        "scale_up_delay", "scale_down_delay",
                                                        "scale_to_zero_after", "saturation"};
    static const std::map<std::string, std::string> kScaleAliases = {
        {"target", "target_in_flight_per_replica"},
        {"target_in_flight", "target_in_flight_per_replica"},
        {"min", "replicas.min"},
        {"max", "replicas.max"},
        {"min_replicas", "replicas.min"},
        {"max_replicas", "replicas.max"}};
    Fields a(v->node, v->path, kScaleKeys, kScaleAliases, sink);
    if (auto s = a.Get("saturation")) service.autoscaling.saturation = ReadSaturation(*s, sink);
    if (auto t = a.Get("target_in_flight_per_replica")) {
      service.autoscaling.target_in_flight_per_replica =
          ReadCount(*t, sink, 1, {}, 1'000'000).value_or(0);
    } else if (!a.Get("saturation")) {
      ReportMissing(a, v->pos, v->path, "target_in_flight_per_replica",
                    "required field is missing (requests in flight per replica to aim for), "
                    "unless saturation is given",
                    sink);
    }
    ReadDurationField(a, "scale_up_delay", false, service.autoscaling.scale_up_delay_ms, sink);
    ReadDurationField(a, "scale_down_delay", false, service.autoscaling.scale_down_delay_ms, sink);
    if (auto z = a.Get("scale_to_zero_after")) {
      ReadDurationField(a, "scale_to_zero_after", false, service.autoscaling.scale_to_zero_after_ms,
                        sink);
      if (service.autoscaling.scale_to_zero_after_ms > kMillisPerDay) {
        sink.Add(z->pos, z->path, "must be at most 24h");
      }
      if (service.min_replicas != 0) {
        sink.Add(z->pos, z->path, "scale to zero needs replicas.min: 0");
      }
    }
  }
  return service;
}

}  // namespace drover::spec::internal
