#pragma once

// GET /v1/events (docs/api.md, "Events"): the live events a caller may view, as Server-Sent
// Events, answered by a stream (Response::stream) that the transport sends without a thread.

#include <cstddef>

#include "drover/api/request.h"
#include "drover/api/service.h"

namespace drover::api {

// The longest ?types= list taken (every type named once is 18 bytes).
inline constexpr std::size_t kMaxEventTypesBytes = 64;

// GET /v1/events?job=ID&types=job,decision,node&since=ID, or with Last-Event-ID (which wins over
// since): a text/event-stream of the selected events the caller may view (Service::OpenEvents).
// kInvalidArgument naming the parameter and the position of what is wrong in it (since or
// Last-Event-ID not an id, types with an unknown or repeated name or over kMaxEventTypesBytes, job
// not an id); job: GET /v1/jobs/{id}'s rule (kNotFound, kPermissionDenied); OpenEvents' limits.
Result<Response> StreamEvents(Service& service, const Request& request);

}  // namespace drover::api
