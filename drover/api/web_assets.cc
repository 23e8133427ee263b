#include "drover/api/web_assets.h"

#include <fmt/format.h>

#include <string>

#include "drover/spec/limits.h"

namespace drover::api {
namespace {

constexpr std::string_view kIndex = "index.html";

// The Content-Type of a bundle file by its extension.
std::string_view ContentTypeOf(std::string_view path) {
  struct Type {
    std::string_view extension;
    std::string_view content_type;
  };
  static constexpr Type kTypes[] = {
      {".html", "text/html; charset=utf-8"}, {".js", "text/javascript; charset=utf-8"},
      {".css", "text/css; charset=utf-8"},   {".svg", "image/svg+xml"},
      {".json", "application/json"},         {".map", "application/json"},
      {".txt", "text/plain; charset=utf-8"},
  };
  for (const Type& type : kTypes) {
    if (path.ends_with(type.extension)) return type.content_type;
  }
  return "application/octet-stream";
}

// The headers of every dashboard response: the page may load and call only its own origin.
void AddSecurityHeaders(Response& response) {
  response.headers["X-Content-Type-Options"] = "nosniff";
  response.headers["Content-Security-Policy"] =
      "default-src 'self'; style-src 'self' 'unsafe-inline'; img-src 'self' data:; "
      "frame-ancestors 'none'";
}

constexpr std::string_view kNotBuilt = R"(<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>Drover: dashboard not built</title></head>
<body><h1>Dashboard not built</h1>
<p>This drover binary was built without the web dashboard (web/dist was absent: npm was not
found when it was built). Build it with <code>make build</code> on a machine with Node.js and
npm, or build web/ with <code>npm ci &amp;&amp; npm run build</code> there and rebuild the
binary.</p>
<p>The HTTP API works without it: see <code>drover --help</code> and docs/api.md.</p>
</body></html>
)";

}  // namespace

Result<Response> WebAssetResponse(std::span<const WebAsset> assets, std::string_view path) {
  if (path.empty()) path = kIndex;
  Response response;
  AddSecurityHeaders(response);
  if (assets.empty() && path == kIndex) {
    response.body = kNotBuilt;
    response.content_type = ContentTypeOf(kIndex);
    response.headers["Cache-Control"] = "no-cache";
    return response;
  }
  for (const WebAsset& asset : assets) {
    if (asset.path != path) continue;
    response.body = asset.data;
    response.content_type = ContentTypeOf(path);
    response.headers["Cache-Control"] =
        path == kIndex ? "no-cache" : "public, max-age=31536000, immutable";
    return response;
  }
  return NotFound(
      fmt::format("the dashboard has no file {}", spec::EscapeForMessage(std::string(path))));
}

Result<Response> GetWebIndex(Service&, const Request&) {
  return WebAssetResponse(WebAssets(), kIndex);
}

Result<Response> GetWebAsset(Service&, const Request& request) {
  return WebAssetResponse(WebAssets(), "assets/" + request.path_params.at(0));
}

}  // namespace drover::api
