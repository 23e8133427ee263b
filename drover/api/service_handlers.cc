#include "drover/api/service_handlers.h"

#include <fmt/format.h>

#include <algorithm>

#include "drover/codec/json.h"
#include "drover/spec/limits.h"

namespace drover::api {

using json = nlohmann::json;

namespace {

Result<ServiceStatus> FindService(const Service& service, const std::string& name) {
  for (ServiceStatus& status : service.Services()) {
    if (status.record.spec.name == name) return std::move(status);
  }
  return NotFound(fmt::format("service {} does not exist", spec::EscapeForMessage(name)));
}

std::string StateOf(const ServiceStatus& status, int ready) {
  const int desired = status.record.desired;
  const bool old = std::any_of(
      status.endpoints.begin(), status.endpoints.end(),
      [&](const ServiceEndpoint& e) { return e.generation < status.record.generation; });
  if (old) return "rolling";
  if (desired == 0 && status.endpoints.empty()) return "idle";
  if (ready == 0 && desired > 0) return "unavailable";
  if (ready == desired && static_cast<int>(status.endpoints.size()) == desired) return "ready";
  return "scaling";
}

// `key` of the load body: an integer in [0, max]; 0 when absent unless `required`.
Result<std::int64_t> LoadField(const json& body, const char* key, std::int64_t max, bool required) {
  const std::string path = fmt::format("request.body.{}", key);
  if (!body.contains(key) || body[key].is_null()) {
    if (required) return InvalidArgument(path + ": required");
    return 0;
  }
  const json& v = body[key];
  if (!v.is_number_integer()) return InvalidArgument(path + ": expected an integer");
  if (v.is_number_unsigned() ? v.get<std::uint64_t>() > static_cast<std::uint64_t>(max)
                             : (v.get<std::int64_t>() < 0 || v.get<std::int64_t>() > max)) {
    return InvalidArgument(fmt::format("{}: must be between 0 and {}", path, max));
  }
  return v.get<std::int64_t>();
}

}  // namespace

model::Resource ServiceResource(const store::ServiceRecord& service) {
  return model::Resource{fmt::format("service {}", service.spec.name), service.owner, service.team,
                         service.spec.replica.queue, std::nullopt};
}

json ServiceView(const ServiceStatus& status, Disclosure disclosure) {
  const model::ServiceSpec& spec = status.record.spec;
  json endpoints = json::array();
  int ready = 0;
  for (const ServiceEndpoint& e : status.endpoints) {
    if (e.ready) ++ready;
    endpoints.push_back(json{{"job", e.job.value()},
                             {"url", e.url},
                             {"node", e.node},
                             {"port", e.port},
                             {"state", model::JobStateName(e.state)},
                             {"ready", e.ready},
                             {"since", e.since},
                             {"generation", e.generation},
                             {"protected", e.is_protected}});
  }
  json template_json = codec::ToJson(spec.replica);
  if (disclosure == Disclosure::kRedacted) RedactSpec(template_json);
  json load = nullptr;
  if (status.load) {
    load = json{{"in_flight", status.load->in_flight},
                {"waiting", status.load->waiting},
                {"requests", status.load->requests},
                {"window_ms", status.load->window_ms},
                {"received_at", status.load->received_at}};
  }
  json last_scaling = nullptr;
  if (!status.last_scaling.empty()) {
    last_scaling = json{{"reason", status.last_scaling}, {"at", status.last_scaling_at}};
  }
  return json{
      {"name", spec.name},
      {"models", spec.models},
      {"owner", status.record.owner},
      {"team", status.record.team},
      {"queue", spec.replica.queue},
      {"priority", spec.replica.priority_class},
      {"generation", status.record.generation},
      {"created_at", status.record.created_at},
      {"updated_at", status.record.updated_at},
      {"state", StateOf(status, ready)},
      {"replicas", json{{"min", spec.min_replicas},
                        {"max", spec.max_replicas},
                        {"desired", status.record.desired},
                        {"ready", ready}}},
      {"autoscaling", codec::ToJson(spec.autoscaling)},
      {"readiness", spec.readiness ? codec::ToJson(*spec.readiness) : json(nullptr)},
      {"liveness", spec.liveness ? codec::ToJson(*spec.liveness) : json(nullptr)},
      {"endpoints", std::move(endpoints)},
      {"load", std::move(load)},
      {"last_scaling", std::move(last_scaling)},
      {"blocked", status.blocked.empty() ? json(nullptr) : json(status.blocked)},
      {"spec", std::move(template_json)},
  };
}

Result<Response> PutService(Service& service, const Request& request) {
  DROVER_ASSIGN_OR_RETURN(json body, JsonBody(request));
  DROVER_ASSIGN_OR_RETURN(model::ServiceSpec spec,
                          codec::ServiceSpecFromJson(body, "request.body"));
  DROVER_ASSIGN_OR_RETURN(model::Identity caller, CallerIdentity(request));
  DROVER_ASSIGN_OR_RETURN(ServiceStatus status, service.PutService(spec, caller));
  return JsonResponse(200, ServiceView(status, Disclosure::kFull));  // the caller's own
}

Result<Response> ListServices(Service& service, const Request& request) {
  DROVER_ASSIGN_OR_RETURN(model::Identity caller, CallerIdentity(request));
  json services = VisibleViews(
      caller, service.Policy(), service.Services(),
      [](const ServiceStatus& status) { return ServiceResource(status.record); }, &ServiceView);
  return JsonResponse(200, json{{"services", std::move(services)}});
}

Result<Response> GetService(Service& service, const Request& request) {
  DROVER_ASSIGN_OR_RETURN(model::Identity caller, CallerIdentity(request));
  DROVER_ASSIGN_OR_RETURN(ServiceStatus status, FindService(service, request.path_params.at(0)));
  return JsonResponse(200, ServiceView(status, DisclosureOf(caller, ServiceResource(status.record),
                                                            service.Policy())));
}

Result<Response> DeleteService(Service& service, const Request& request) {
  const std::string& name = request.path_params.at(0);
  DROVER_ASSIGN_OR_RETURN(model::Identity caller, CallerIdentity(request));
  DROVER_RETURN_IF_ERROR(service.DeleteService(name, caller));
  return JsonResponse(200, json{{"deleted", name}});
}

Result<Response> PostServiceLoad(Service& service, const Request& request) {
  DROVER_ASSIGN_OR_RETURN(json body, JsonBody(request));
  if (!body.is_object()) return InvalidArgument("request.body: expected an object");
  model::LoadSignal signal;
  DROVER_ASSIGN_OR_RETURN(signal.in_flight, LoadField(body, "in_flight", kMaxLoadValue, true));
  DROVER_ASSIGN_OR_RETURN(signal.waiting, LoadField(body, "waiting", kMaxLoadValue, false));
  DROVER_ASSIGN_OR_RETURN(signal.requests, LoadField(body, "requests", kMaxLoadValue, false));
  DROVER_ASSIGN_OR_RETURN(signal.window_ms, LoadField(body, "window_ms", kMillisPerHour, false));
  DROVER_RETURN_IF_ERROR(service.ReportServiceLoad(request.path_params.at(0), signal));
  return JsonResponse(200, json{{"accepted", true}});
}

}  // namespace drover::api
