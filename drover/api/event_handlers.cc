#include "drover/api/event_handlers.h"

#include <fmt/format.h>

#include <string>
#include <string_view>

#include "drover/model/access.h"

namespace drover::api {
namespace {

// An event id: a whole non-negative number.
Result<std::uint64_t> EventIdOf(std::string_view what, const std::string& text) {
  std::optional<std::int64_t> id = ParseInt(text);
  if (!id || *id < 0) {
    return InvalidArgument(
        fmt::format("{}: '{}' is not an event id (a whole number from an event's id: line)", what,
                    text.substr(0, 40)));
  }
  return static_cast<std::uint64_t>(*id);
}

// ?types=: names of kEventTypes, comma-separated, each once.
Result<std::set<std::string>> TypesOf(const std::string& text) {
  if (text.size() > kMaxEventTypesBytes) {
    return InvalidArgument(
        fmt::format("types: {} bytes, over the limit of {}", text.size(), kMaxEventTypesBytes));
  }
  std::set<std::string> types;
  std::size_t position = 0;
  for (std::size_t start = 0; start <= text.size();) {
    std::size_t end = text.find(',', start);
    if (end == std::string::npos) end = text.size();
    const std::string name = text.substr(start, end - start);
    ++position;
    bool known = false;
    for (std::string_view type : kEventTypes) known = known || type == name;
    if (!known) {
      return InvalidArgument(
          fmt::format("types: '{}' (name {}) is not an event type; expected job, decision or node",
                      name, position));
    }
    if (!types.insert(name).second) {
      return InvalidArgument(fmt::format("types: '{}' (name {}) is named twice", name, position));
    }
    start = end + 1;
  }
  return types;
}

}  // namespace

Result<Response> StreamEvents(Service& service, const Request& request) {
  DROVER_ASSIGN_OR_RETURN(model::Identity caller, CallerIdentity(request));
  EventQuery query;
  if (request.HasHeader(kLastEventIdHeader)) {
    DROVER_ASSIGN_OR_RETURN(query.since,
                            EventIdOf(kLastEventIdHeader, request.Header(kLastEventIdHeader)));
  } else if (request.HasQuery("since")) {
    DROVER_ASSIGN_OR_RETURN(query.since, EventIdOf("since", request.Query("since")));
  }
  if (request.HasQuery("types")) {
    DROVER_ASSIGN_OR_RETURN(query.types, TypesOf(request.Query("types")));
  }
  if (request.HasQuery("job")) {
    const std::string text = request.Query("job");
    std::optional<std::int64_t> id = ParseInt(text);
    if (!id || *id <= 0) {
      return InvalidArgument(
          fmt::format("job: '{}' is not a job id (a positive whole number)", text.substr(0, 40)));
    }
    // GET /v1/jobs/{id}'s rule: a job the caller may not view is refused as that route does.
    DROVER_ASSIGN_OR_RETURN(model::Job job, service.GetJob(JobId(*id)));
    DROVER_RETURN_IF_ERROR(
        model::Decide(caller, model::Verb::kView, model::ResourceOf(job), service.Policy()));
    query.job = job.id;
  }
  query.caller = std::move(caller);
  DROVER_ASSIGN_OR_RETURN(std::shared_ptr<StreamBody> stream, service.OpenEvents(query));
  Response response;
  response.content_type = "text/event-stream";
  response.headers.emplace("X-Accel-Buffering", "no");  // nginx: pass each event on at once
  response.body = "retry: 3000\n\n";                    // an EventSource reconnects after 3 s
  response.stream = std::move(stream);
  return response;
}

}  // namespace drover::api
