#include "drover/api/web_assets.h"

#include <gtest/gtest.h>

#include "drover/api/routes.h"

namespace drover::api {
namespace {

constexpr WebAsset kBundle[] = {
    {"index.html", "<!doctype html><title>Drover</title>"},
    {"assets/app-ABC123.js", "console.log(1)"},
    {"assets/app-ABC123.css", "body{}"},
};

TEST(WebAssets, ThePageIsNeverCachedAndHashedAssetsForever) {
  Result<Response> page = WebAssetResponse(kBundle, "");
  ASSERT_TRUE(page.has_value());
  EXPECT_EQ(page->body, "<!doctype html><title>Drover</title>");
  EXPECT_EQ(page->content_type, "text/html; charset=utf-8");
  EXPECT_EQ(page->headers.at("Cache-Control"), "no-cache");
  EXPECT_EQ(page->headers.at("X-Content-Type-Options"), "nosniff");
  EXPECT_NE(page->headers.at("Content-Security-Policy").find("default-src 'self'"),
            std::string::npos);

  Result<Response> script = WebAssetResponse(kBundle, "assets/app-ABC123.js");
  ASSERT_TRUE(script.has_value());
  EXPECT_EQ(script->body, "console.log(1)");
  EXPECT_EQ(script->content_type, "text/javascript; charset=utf-8");
  EXPECT_EQ(script->headers.at("Cache-Control"), "public, max-age=31536000, immutable");
  EXPECT_EQ(WebAssetResponse(kBundle, "assets/app-ABC123.css")->content_type,
            "text/css; charset=utf-8");
}

TEST(WebAssets, AFileTheBundleLacksIsNotFoundNamingIt) {
  Result<Response> missing = WebAssetResponse(kBundle, "assets/nope.js");
  ASSERT_FALSE(missing.has_value());
  EXPECT_EQ(missing.error().code, ErrorCode::kNotFound);
  EXPECT_NE(missing.error().message.find("assets/nope.js"), std::string::npos);
}

TEST(WebAssets, WithoutABundleThePageSaysTheDashboardIsNotBuilt) {
  Result<Response> page = WebAssetResponse({}, "index.html");
  ASSERT_TRUE(page.has_value());
  EXPECT_EQ(page->status, 200);
  EXPECT_NE(page->body.find("Dashboard not built"), std::string::npos);
  EXPECT_FALSE(WebAssetResponse({}, "assets/app.js").has_value());
}

TEST(WebAssets, OnlyNamesWithoutSlashesReachTheAssetRoute) {
  // The route's pattern takes one path segment: nothing can climb out of the bundle (and the
  // bundle is a table in memory, not a directory).
  EXPECT_NE(Resolve("GET", "/assets/app-ABC123.js").route, nullptr);
  EXPECT_EQ(Resolve("GET", "/assets/../../etc/passwd").route, nullptr);
  EXPECT_EQ(Resolve("GET", "/assets/%2e%2e%2fetc").route, nullptr);
  EXPECT_EQ(Resolve("GET", "/assets/a/b.js").route, nullptr);
  EXPECT_FALSE(WebAssetResponse(kBundle, "assets/..").has_value());
}

}  // namespace
}  // namespace drover::api
