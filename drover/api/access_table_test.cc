// docs/security.md's table of who may call each endpoint is written from the route table and
// DescribeAccess, the words of the one authorization function's rules: this test fails when the
// page and the code differ. DROVER_WRITE_DOCS=1 rewrites the table in place.

#include <gtest/gtest.h>

#include <cstdlib>
#include <fstream>
#include <map>
#include <sstream>
#include <string>

#include "drover/api/routes.h"

namespace drover::api {
namespace {

constexpr std::string_view kBegin = "<!-- access-table:begin (written by access_table_test) -->";
constexpr std::string_view kEnd = "<!-- access-table:end -->";

// "/v1/jobs/(\d+)/cancel" -> "/v1/jobs/{id}/cancel": each capture named after the segment
// before it.
std::string ReadablePath(std::string_view pattern) {
  static const std::map<std::string, std::string> kNames = {
      {"jobs", "{id}"},     {"pipelines", "{run}"}, {"tokens", "{id}"},  {"agents", "{node}"},
      {"crons", "{name}"},  {"secrets", "{name}"},  {"teams", "{team}"}, {"nodes", "{name}"},
      {"assets", "{name}"}, {"services", "{name}"}};
  std::string text(pattern);
  for (std::size_t at; (at = text.find("[^/]")) != std::string::npos;) text.replace(at, 4, ".");
  std::string out;
  std::string previous;
  std::stringstream segments{text};
  std::string segment;
  while (std::getline(segments, segment, '/')) {
    if (segment.empty()) continue;
    const bool capture = segment.front() == '(';
    auto name = kNames.find(previous);
    out += "/" + (capture ? (name != kNames.end() ? name->second : "{param}") : segment);
    previous = segment;
  }
  return out.empty() ? "/" : out;
}

std::string RenderTable() {
  std::string table = "| route | who may call it |\n|---|---|\n";
  for (const Route& route : Routes()) {
    table += "| `" + std::string(MethodName(route.method)) + " " + ReadablePath(route.pattern) +
             "` | " + DescribeAccess(route.access) + " |\n";
  }
  return table;
}

TEST(AccessTable, DocsSecurityListsEveryRoutesRuleAsTheCodeStatesIt) {
  const std::string path = std::string(DROVER_SOURCE_DIR) + "/docs/security.md";
  std::ifstream in(path);
  ASSERT_TRUE(in) << path;
  std::stringstream buffer;
  buffer << in.rdbuf();
  std::string page = buffer.str();
  const std::size_t begin = page.find(kBegin);
  const std::size_t end = page.find(kEnd);
  ASSERT_NE(begin, std::string::npos) << "no " << kBegin << " in " << path;
  ASSERT_NE(end, std::string::npos) << "no " << kEnd << " in " << path;
  const std::size_t from = begin + kBegin.size() + 1;
  const std::string rendered = RenderTable();
  if (const char* write = std::getenv("DROVER_WRITE_DOCS"); write && std::string(write) == "1") {
    page.replace(from, end - from, rendered);
    std::ofstream(path) << page;
    return;
  }
  EXPECT_EQ(page.substr(from, end - from), rendered)
      << "docs/security.md's access table is stale: run DROVER_WRITE_DOCS=1 "
         "drover_api_test --gtest_filter=AccessTable.*";
}

TEST(AccessTable, NamesEachCaptureAfterItsSegment) {
  EXPECT_EQ(ReadablePath(R"(/v1/jobs/(\d+)/cancel)"), "/v1/jobs/{id}/cancel");
  EXPECT_EQ(ReadablePath(R"(/v1/agents/([^/]+)/events)"), "/v1/agents/{node}/events");
  EXPECT_EQ(ReadablePath("/v1/health"), "/v1/health");
  EXPECT_EQ(ReadablePath("/"), "/");
  EXPECT_EQ(ReadablePath(R"(/assets/([A-Za-z0-9_.-]+))"), "/assets/{name}");
}

}  // namespace
}  // namespace drover::api
