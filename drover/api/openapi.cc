#include "drover/api/openapi.h"

#include <string>

namespace drover::api {

Result<Response> GetOpenApi(Service&, const Request&) {
  return Response{200, std::string(OpenApiDocument()), "application/json", {}, {}, {}};
}

}  // namespace drover::api
