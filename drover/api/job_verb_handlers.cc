#include "drover/api/job_verb_handlers.h"

#include <fmt/format.h>

#include <string>

#include "drover/api/views.h"
#include "drover/common/quantity.h"
#include "drover/model/access.h"
#include "drover/spec/limits.h"

namespace drover::api {
namespace {

using nlohmann::json;

// Longest reason kept with a transition.
constexpr std::size_t kMaxReasonBytes = 1024;

// The string field `field` of a verb's body. kInvalidArgument naming it otherwise.
Result<std::string> StringField(const json& value, std::string_view field) {
  if (!value.is_string()) return InvalidArgument(fmt::format("{}: expected a string", field));
  return value.get<std::string>();
}

// The verb of `kind` from the request's body: empty, or a JSON object with "reason" and, for
// kUpdate, "priority", "timeout" and "queue". kInvalidArgument naming the field.
Result<JobVerb> ParseVerb(JobVerb::Kind kind, const Request& request) {
  JobVerb verb;
  verb.kind = kind;
  if (request.body.empty()) return verb;
  DROVER_ASSIGN_OR_RETURN(json body, JsonBody(request));
  if (!body.is_object()) return InvalidArgument("request body: expected a JSON object");
  const bool update = kind == JobVerb::Kind::kUpdate;
  for (const auto& [field, value] : body.items()) {
    if (field == "reason") {
      DROVER_ASSIGN_OR_RETURN(verb.reason, StringField(value, field));
      if (verb.reason.size() > kMaxReasonBytes) {
        return InvalidArgument(
            fmt::format("reason: {} bytes, at most {}", verb.reason.size(), kMaxReasonBytes));
      }
    } else if (update && field == "priority") {
      DROVER_ASSIGN_OR_RETURN(verb.update.priority_class, StringField(value, field));
    } else if (update && field == "queue") {
      DROVER_ASSIGN_OR_RETURN(verb.update.queue, StringField(value, field));
    } else if (update && field == "timeout") {
      DROVER_ASSIGN_OR_RETURN(std::string text, StringField(value, field));
      Result<DurationMs> timeout = ParseDuration(text);
      if (!timeout) {
        return InvalidArgument(fmt::format("timeout: '{}' is not a duration (e.g. 90m, 2h30m)",
                                           spec::EscapeForMessage(text)));
      }
      verb.update.timeout = *timeout;
    } else {
      return InvalidArgument(
          fmt::format("{}: unknown field; {} takes {}", spec::EscapeForMessage(field), request.path,
                      update ? "priority, timeout, queue and reason" : "reason"));
    }
  }
  return verb;
}

Result<Response> Apply(JobVerb::Kind kind, Service& service, const Request& request) {
  DROVER_ASSIGN_OR_RETURN(JobId id, PathJobId(request));
  DROVER_ASSIGN_OR_RETURN(model::Identity caller, CallerIdentity(request));
  DROVER_ASSIGN_OR_RETURN(JobVerb verb, ParseVerb(kind, request));
  if (verb.update.queue) {
    // Into another queue only as a submission there would be allowed.
    DROVER_ASSIGN_OR_RETURN(model::Job job, service.GetJob(id));
    model::Resource target = model::ResourceOf(job);
    target.queue = *verb.update.queue;
    DROVER_RETURN_IF_ERROR(model::Decide(caller, model::Verb::kSubmit, target, service.Policy()));
  }
  DROVER_ASSIGN_OR_RETURN(model::Job job, service.ApplyJobVerb(id, verb, caller));
  return JsonResponse(200, JobSummary(job, service.Now()));
}

}  // namespace

Result<Response> HoldJob(Service& service, const Request& request) {
  return Apply(JobVerb::Kind::kHold, service, request);
}

Result<Response> ReleaseJob(Service& service, const Request& request) {
  return Apply(JobVerb::Kind::kRelease, service, request);
}

Result<Response> UpdateJob(Service& service, const Request& request) {
  return Apply(JobVerb::Kind::kUpdate, service, request);
}

Result<Response> RequeueJob(Service& service, const Request& request) {
  return Apply(JobVerb::Kind::kRequeue, service, request);
}

}  // namespace drover::api
