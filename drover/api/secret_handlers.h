#pragma once

// Handlers of the team secrets endpoints (docs/api.md, "Secrets"; docs/security.md, "Secrets").
// Authorize has checked the caller may use the secrets verb on the team (path param 0) before
// any of them runs. No handler returns a secret's value: it goes in with PUT and out only to the
// workers of the team's jobs.

#include <string>

#include "drover/api/request.h"
#include "drover/api/service.h"
#include "drover/model/access.h"

namespace drover::api {

// PUT /v1/teams/{team}/secrets/{name} with the value as the body, raw bytes taken as they are
// (a trailing newline is part of the value): {"team", "name", "updated_at"}. Errors:
// Service::PutSecret's.
Result<Response> PutSecret(Service& service, const Request& request);
// GET /v1/teams/{team}/secrets: {"team", "secrets": [{"name", "updated_at"}...]} by name.
Result<Response> ListSecrets(Service& service, const Request& request);
// DELETE /v1/teams/{team}/secrets/{name}: {"deleted": name, "team": team}. kNotFound when the
// team has no such secret.
Result<Response> DeleteSecret(Service& service, const Request& request);

// A team as a resource (model/access.h): "team T" with team T, for the secrets verb.
model::Resource TeamResource(const std::string& team);

}  // namespace drover::api
