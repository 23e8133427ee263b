#include "drover/api/request.h"

#include <fmt/format.h>

#include <charconv>

#include "drover/api/views.h"
#include "drover/codec/json.h"

namespace drover::api {

std::string Request::Query(const std::string& name, const std::string& fallback) const {
  auto it = query.find(name);
  return it == query.end() ? fallback : it->second;
}

std::string Request::Header(std::string_view name) const {
  auto it = headers.find(std::string(name));
  return it == headers.end() ? std::string() : it->second;
}

bool Request::HasHeader(std::string_view name) const {
  return headers.count(std::string(name)) > 0;
}

Response JsonResponse(int status, const nlohmann::json& body) {
  return Response{status, codec::DumpJson(body), "application/json", {}, {}, {}};
}

Response Parked(std::string key, DurationMs wait_ms) {
  Response response;
  response.park = Park{std::move(key), wait_ms};
  return response;
}

Response ErrorResponse(const Error& error) {
  return JsonResponse(HttpStatusFor(error.code), ErrorBody(error));
}

std::optional<std::int64_t> ParseInt(std::string_view text) {
  std::int64_t value = 0;
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (ec != std::errc() || end != text.data() + text.size()) return std::nullopt;
  return value;
}

Result<model::Identity> CallerIdentity(const Request& request) {
  if (!request.caller.identity) {
    return Unauthenticated(
        fmt::format("{} {}: no authenticated caller", request.method, request.path));
  }
  return *request.caller.identity;
}

Result<std::int64_t> IntQuery(const Request& request, const std::string& name,
                              std::int64_t fallback) {
  if (!request.HasQuery(name)) return fallback;
  const std::string text = request.Query(name);
  std::optional<std::int64_t> value = ParseInt(text);
  if (!value) {
    return InvalidArgument(
        fmt::format("query parameter {}: expected an integer, got '{}'", name, text));
  }
  return *value;
}

Result<JobId> PathJobId(const Request& request, std::string_view what, int index) {
  const std::string text = request.path_params.at(index);
  std::optional<std::int64_t> value = ParseInt(text);
  if (!value || *value <= 0) return NotFound(fmt::format("{} {} does not exist", what, text));
  return JobId(*value);
}

Result<nlohmann::json> JsonBody(const Request& request) {
  auto parsed = codec::ParseJson(request.body);
  if (!parsed) return InvalidArgument("request body: " + parsed.error().message);
  return parsed;
}

}  // namespace drover::api
