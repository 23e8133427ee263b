#pragma once

// Handlers of the identity endpoints (docs/api.md, "Tokens" and "Audit log"; docs/security.md):
// tokens, whoami and the audit log. Each answers a request that matched its route in routes.cc,
// whose access rule Authorize has already applied; errors are the Service's, plus those named.

#include "drover/api/request.h"
#include "drover/api/service.h"

namespace drover::api {

// POST /v1/tokens with {user, team, role, queues?, expires_in_ms?}: {id, token, user, team,
// role, queues, created_at, expires_at} (expires_at 0: never), the only reply that holds a token.
// kInvalidArgument naming the field for a missing or invalid one.
Result<Response> CreateToken(Service& service, const Request& request);
// GET /v1/tokens: {"tokens": [{id, user, team, role, queues, created_by, created_at, expires_at,
// revoked_at, state}]} by id; never a token or its hash.
Result<Response> ListTokens(Service& service, const Request& request);
// POST /v1/tokens/{id}/revoke: the token's listing entry, revoked. kNotFound for an unknown id.
Result<Response> RevokeToken(Service& service, const Request& request);
// GET /v1/whoami: the caller's {user, team, role, queues, job, token_id, describe}.
Result<Response> WhoAmI(Service& service, const Request& request);
// GET /v1/audit?since=MS&user=U&team=T&job=ID&limit=N: {"records": [...]} in seq order, the
// newest `limit` (default 1000; 0: all) of those model::Visible lets the caller read (an admin:
// all; a coordinator: its team's). kInvalidArgument
// for a since, job or limit that is not a non-negative integer.
Result<Response> ListAudit(Service& service, const Request& request);

}  // namespace drover::api
