#pragma once

// The dashboard (web/; docs/dashboard.md) as the server serves it: its bundle, built into the
// binary by cmake/embed_web.cmake, and the handlers of / and /assets/NAME (docs/architecture.md,
// "Dashboard"). The assets hold no data (the app reads everything through the API with the
// user's token), so their routes are open to anyone. A path is looked up in the embedded table
// and never touches the file system: no path can reach a file outside the bundle.

#include <span>
#include <string_view>

#include "drover/api/request.h"
#include "drover/api/service.h"

namespace drover::api {

struct WebAsset {
  std::string_view path;  // relative to web/dist: "index.html", "assets/app-HASH.js"
  std::string_view data;
};

// The bundle as it was when the binary was built; empty where it was not built (no npm).
// Thread-safe (static data).
std::span<const WebAsset> WebAssets();

// The answer for `path` ("" or "index.html": the app's page; "assets/NAME": a file of the
// bundle) from `assets`: the file with its Content-Type by extension, X-Content-Type-Options:
// nosniff, a Content-Security-Policy that allows only the server's own origin, and
// Cache-Control "no-cache" for the page (it names the assets of this build) and "public,
// max-age=31536000, immutable" for assets (their names carry a hash of their content).
// An empty `assets` answers the page with a "dashboard not built" text (200, no-cache);
// kNotFound naming the path for a file the bundle lacks.
Result<Response> WebAssetResponse(std::span<const WebAsset> assets, std::string_view path);

// GET / and GET /index.html: WebAssetResponse(WebAssets(), "index.html").
Result<Response> GetWebIndex(Service& service, const Request& request);
// GET /assets/NAME (path param 0: NAME, without '/'): WebAssetResponse(WebAssets(),
// "assets/NAME").
Result<Response> GetWebAsset(Service& service, const Request& request);

}  // namespace drover::api
