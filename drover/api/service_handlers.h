#pragma once

// Handlers of the service endpoints (docs/api.md, "Services"; docs/inference.md): inference
// services and their replicas. Each answers a request that matched its route in routes.cc;
// errors are the Service's, plus those named.

#include <nlohmann/json.hpp>

#include "drover/api/request.h"
#include "drover/api/service.h"
#include "drover/api/views.h"
#include "drover/model/access.h"

namespace drover::api {

// POST /v1/services with a service spec as JSON (codec::ToJson(ServiceSpec)): its ServiceView.
// kInvalidArgument naming the field.
Result<Response> PutService(Service& service, const Request& request);
// GET /v1/services: {"services": [ServiceView...]} by name, those the caller may view.
Result<Response> ListServices(Service& service, const Request& request);
// GET /v1/services/{name}: its ServiceView. kNotFound for an unknown name.
Result<Response> GetService(Service& service, const Request& request);
// DELETE /v1/services/{name}: {"deleted": name} once every replica is asked to stop.
Result<Response> DeleteService(Service& service, const Request& request);
// POST /v1/services/{name}/load with {"in_flight", "waiting", "requests", "window_ms"}: each an
// integer in [0, kMaxLoadValue] (window_ms at most an hour); in_flight required, the others 0
// when absent. {"accepted": true}. kInvalidArgument naming the field; nothing is recorded then.
Result<Response> PostServiceLoad(Service& service, const Request& request);

// The largest in_flight, waiting or requests a load signal may carry.
inline constexpr std::int64_t kMaxLoadValue = 1'000'000'000;

// The API's view of a service: name, models, owner, team, queue, priority, generation,
// created_at, updated_at, state, replicas {min, max, desired, ready}, autoscaling
// {target_in_flight_per_replica, scale_up_delay_ms, scale_down_delay_ms}, readiness and
// liveness (the probes, or null), endpoints [{job, url, node, port, state, ready, since,
// generation, protected}], load (the latest signal with received_at, or null), last_scaling
// {reason, at} (or null), blocked (or null), and spec (the replica template, its command, script
// and env values redacted unless `disclosure` is kFull). state: "ready" (desired replicas, all
// ready and current), "rolling" (replicas of an older template remain), "scaling" (fewer or more
// ready replicas than desired), "unavailable" (none ready while some are desired), "idle"
// (none desired).
nlohmann::json ServiceView(const ServiceStatus& status, Disclosure disclosure);

// A service as a resource (model/access.h): "service NAME", its owner, team and queue.
model::Resource ServiceResource(const store::ServiceRecord& service);

}  // namespace drover::api
