#include "drover/api/secret_handlers.h"

#include <fmt/format.h>

#include <nlohmann/json.hpp>
#include <optional>
#include <vector>

#include "drover/spec/limits.h"

namespace drover::api {

using nlohmann::json;

Result<Response> PutSecret(Service& service, const Request& request) {
  const std::string& team = request.path_params.at(0);
  const std::string& name = request.path_params.at(1);
  DROVER_RETURN_IF_ERROR(service.PutSecret(team, name, request.body));
  DROVER_ASSIGN_OR_RETURN(std::vector<SecretInfo> secrets, service.ListSecrets(team));
  json out{{"team", team}, {"name", name}, {"updated_at", nullptr}};
  for (const SecretInfo& secret : secrets) {
    if (secret.name == name) out["updated_at"] = secret.updated_at;
  }
  return JsonResponse(200, out);
}

Result<Response> ListSecrets(Service& service, const Request& request) {
  const std::string& team = request.path_params.at(0);
  DROVER_ASSIGN_OR_RETURN(std::vector<SecretInfo> secrets, service.ListSecrets(team));
  json list = json::array();
  for (const SecretInfo& secret : secrets) {
    list.push_back(json{{"name", secret.name}, {"updated_at", secret.updated_at}});
  }
  return JsonResponse(200, json{{"team", team}, {"secrets", std::move(list)}});
}

Result<Response> DeleteSecret(Service& service, const Request& request) {
  const std::string& team = request.path_params.at(0);
  const std::string& name = request.path_params.at(1);
  DROVER_RETURN_IF_ERROR(service.DeleteSecret(team, name));
  return JsonResponse(200, json{{"deleted", name}, {"team", team}});
}

model::Resource TeamResource(const std::string& team) {
  return model::Resource{fmt::format("team {}", spec::EscapeForMessage(team)), "", team, "",
                         std::nullopt};
}

}  // namespace drover::api
