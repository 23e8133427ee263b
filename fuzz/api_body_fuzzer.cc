// libFuzzer harness: an HTTP request body into the API's handlers. The first byte chooses one
// of the POST endpoints that read a body (submission, progress report, cron job, agent
// registration, agent events, token creation); the rest is the body. The request goes through the
// route table (api::Routes and api::Handle, as server/http_server.cc dispatches it) against
// FuzzService, so the handlers' parsing and validation run as in the server. Every answer must be a
// status with a body, and every error a JSON object with a code; a crash, a sanitizer report or a
// leak is a finding.

#include <cstddef>
#include <cstdint>
#include <iterator>
#include <regex>
#include <string>
#include <vector>

#include "drover/api/routes.h"
#include "fuzz/fuzz_check.h"
#include "fuzz/fuzz_service.h"

namespace {

using drover::api::Method;
using drover::api::Request;
using drover::api::Route;

constexpr const char* kPaths[] = {
    "/v1/jobs",  "/v1/jobs/1/report", "/v1/crons", "/v1/agents/register", "/v1/agents/gpu-a/events",
    "/v1/tokens"};

// A route of the table matched to one of kPaths, with its captures.
struct Target {
  const Route* route = nullptr;
  std::vector<std::string> path_params;
};

// kPaths resolved through the route table once, as the server's listener would route them.
std::vector<Target> ResolveTargets() {
  std::vector<Target> targets;
  for (const char* path : kPaths) {
    for (const Route& route : drover::api::Routes()) {
      std::cmatch match;
      if (route.method != Method::kPost ||
          !std::regex_match(path, match, std::regex(std::string(route.pattern)))) {
        continue;
      }
      Target target{&route, {}};
      for (std::size_t i = 1; i < match.size(); ++i) target.path_params.push_back(match[i].str());
      targets.push_back(std::move(target));
      break;
    }
  }
  FUZZ_CHECK(targets.size() == std::size(kPaths));
  return targets;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  static const std::vector<Target> targets = ResolveTargets();
  static drover::fuzz::FuzzService service;
  if (size == 0) return 0;
  const std::size_t which = data[0] % targets.size();
  Request request;
  request.method = "POST";
  request.path = kPaths[which];
  request.path_params = targets[which].path_params;
  request.headers[std::string(drover::api::kBaseDirHeader)] = "/work/base";
  request.headers[std::string(drover::api::kAuthorizationHeader)] = "Bearer fuzz";
  request.body.assign(reinterpret_cast<const char*>(data) + 1, size - 1);
  const drover::api::Response response =
      drover::api::Handle(*targets[which].route, service, request);
  FUZZ_CHECK(response.status >= 200 && response.status < 600);
  FUZZ_CHECK(!response.body.empty());
  if (response.status >= 400) {
    auto error = nlohmann::json::parse(response.body, nullptr, /*allow_exceptions=*/false);
    FUZZ_CHECK(error.is_object() && error.contains("code"));
  }
  return 0;
}
