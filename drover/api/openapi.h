#pragma once

// The API's OpenAPI 3.1 document (docs/openapi.json; docs/architecture.md, "OpenAPI"), built
// into the binary by cmake/embed_text.cmake and served at GET /v1/openapi.json. Its paths and
// methods are the route table's (drover/api/openapi_test.cc checks both ways); the integration
// test tests/openapi/responses_test.cc validates the server's real answers against it.

#include <string_view>

#include "drover/api/request.h"
#include "drover/api/service.h"

namespace drover::api {

// The text of docs/openapi.json as it was when the binary was built. Thread-safe (static data).
std::string_view OpenApiDocument();

// GET /v1/openapi.json: OpenApiDocument() as application/json. Never fails.
Result<Response> GetOpenApi(Service& service, const Request& request);

}  // namespace drover::api
