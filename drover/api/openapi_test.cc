// docs/openapi.json (as built into the binary) against the code it describes: the route table
// both ways (every route is an operation of the same method and path, every operation a route),
// each operation's security and request body against the route's access rule and body, and the
// document's enums against the name tables. tests/openapi/responses_test.cc checks the
// response schemas against a real server's answers.

#include "drover/api/openapi.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "drover/api/routes.h"
#include "drover/model/cron.h"
#include "drover/model/decision.h"
#include "drover/model/diagnosis.h"
#include "drover/model/hold_layer.h"
#include "drover/model/identity.h"
#include "drover/model/job.h"
#include "drover/model/launch.h"
#include "drover/workflow/rollup.h"

namespace drover::api {
namespace {

using nlohmann::json;
using ::testing::UnorderedElementsAreArray;

const json& Document() {
  static const json document = json::parse(OpenApiDocument());
  return document;
}

// `node`, or what its "$ref" (a pointer into the document) names.
const json& Deref(const json& node) {
  if (!node.contains("$ref")) return node;
  return Document().at(json::json_pointer(node["$ref"].get<std::string>().substr(1)));
}

// The route table's pattern of OpenAPI path `path`: each {param} becomes the group the route
// table writes for its schema's type: (\d+) for an integer, ([^/]+) for a string, and for a
// string with a "pattern" ("^CLASS+$") that pattern's body as the group.
std::string PatternOf(const std::string& path, const json& operation) {
  std::map<std::string, std::string> groups;
  for (const json& item : operation.value("parameters", json::array())) {
    const json& parameter = Deref(item);
    if (parameter["in"] != "path") continue;
    const json& schema = parameter["schema"];
    std::string group = schema["type"] == "integer" ? R"((\d+))" : "([^/]+)";
    if (schema.contains("pattern")) {
      const std::string anchored = schema["pattern"].get<std::string>();
      group = "(" + anchored.substr(1, anchored.size() - 2) + ")";
    }
    groups[parameter["name"]] = group;
  }
  std::string pattern;
  for (std::size_t i = 0; i < path.size(); ++i) {
    if (path[i] != '{') {
      pattern += path[i];
      continue;
    }
    const std::size_t end = path.find('}', i);
    const std::string name = path.substr(i + 1, end - i - 1);
    pattern += groups.count(name) ? groups[name] : "{undeclared " + name + "}";
    i = end;
  }
  return pattern;
}

// Every operation of the document by "METHOD PATTERN", as routes are named below.
std::map<std::string, json> Operations() {
  std::map<std::string, json> operations;
  for (const auto& [path, item] : Document()["paths"].items()) {
    for (const auto& [method, operation] : item.items()) {
      std::string name = method;
      for (char& c : name) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
      operations[name + " " + PatternOf(path, operation)] = operation;
    }
  }
  return operations;
}

std::string NameOf(const Route& route) {
  return std::string(MethodName(route.method)) + " " + std::string(route.pattern);
}

TEST(OpenApi, IsOpenApi31) {
  EXPECT_EQ(Document()["openapi"], "3.1.0");
  EXPECT_EQ(Document()["security"], json::parse(R"([{"bearerAuth": []}])"));
}

TEST(OpenApi, EveryRouteIsAnOperationAndEveryOperationARoute) {
  std::vector<std::string> routes;
  for (const Route& route : Routes()) routes.push_back(NameOf(route));
  std::vector<std::string> operations;
  for (const auto& [name, operation] : Operations()) operations.push_back(name);
  EXPECT_THAT(operations, UnorderedElementsAreArray(routes));
}

TEST(OpenApi, SecurityIsTheRoutesAccessRule) {
  const std::map<std::string, json> operations = Operations();
  for (const Route& route : Routes()) {
    auto it = operations.find(NameOf(route));
    if (it == operations.end()) continue;  // EveryRouteIsAnOperationAndEveryOperationARoute
    json expected;
    switch (route.access.kind) {
      case Access::Kind::kUnstated:
        ADD_FAILURE() << NameOf(route) << " has no access rule";
        continue;
      case Access::Kind::kPublic:
        expected = json::array();
        break;
      case Access::Kind::kToken:
        expected = nullptr;  // the document's default: bearerAuth
        break;
      case Access::Kind::kAgentRegistration:
        expected = json::parse(R"([{"joinToken": []}, {"agentCredential": []}])");
        break;
      case Access::Kind::kAgentOfNode:
        expected = json::parse(R"([{"agentCredential": []}])");
        break;
    }
    EXPECT_EQ(it->second.value("security", json()), expected) << NameOf(route);
    const json& responses = it->second["responses"];
    if (route.access.kind != Access::Kind::kPublic) {
      EXPECT_TRUE(responses.contains("401")) << NameOf(route) << " documents no 401";
    }
    if (route.access.kind == Access::Kind::kToken ||
        route.access.kind == Access::Kind::kAgentOfNode) {
      EXPECT_TRUE(responses.contains("403")) << NameOf(route) << " documents no 403";
    }
  }
}

TEST(OpenApi, RequestBodyIsRequiredExactlyWhereTheRouteNeedsOne) {
  const std::map<std::string, json> operations = Operations();
  for (const Route& route : Routes()) {
    auto it = operations.find(NameOf(route));
    if (it == operations.end()) continue;
    const bool required =
        it->second.contains("requestBody") && it->second["requestBody"].value("required", false);
    EXPECT_EQ(required, !route.body.empty()) << NameOf(route) << " takes " << route.body;
  }
}

std::vector<std::string> Enum(const std::string& schema) {
  return Document()["components"]["schemas"].at(schema).at("enum").get<std::vector<std::string>>();
}

TEST(OpenApi, EnumsAreTheNameTables) {
  EXPECT_THAT(Enum("JobState"), UnorderedElementsAreArray(model::kJobStateNames.Choices()));
  EXPECT_THAT(Enum("WorkerState"), UnorderedElementsAreArray(model::kWorkerStateNames.Choices()));
  EXPECT_THAT(Enum("Disruption"), UnorderedElementsAreArray(model::kDisruptionNames.Choices()));
  EXPECT_THAT(Enum("FindingKind"), UnorderedElementsAreArray(model::kFindingKindNames.Choices()));
  EXPECT_THAT(Enum("HoldLayer"), UnorderedElementsAreArray(model::kHoldLayerNames.Choices()));
  EXPECT_THAT(Enum("DecisionKind"), UnorderedElementsAreArray(model::kDecisionKindNames.Choices()));
  EXPECT_THAT(Enum("Role"), UnorderedElementsAreArray(model::kRoleNames.Choices()));
  EXPECT_THAT(Enum("ConcurrencyPolicy"),
              UnorderedElementsAreArray(model::kConcurrencyPolicyNames.Choices()));
  EXPECT_THAT(Enum("WorkerEventKind"),
              UnorderedElementsAreArray(model::kWorkerEventKindNames.Choices()));
  EXPECT_THAT(Enum("StageState"), UnorderedElementsAreArray(workflow::kStageStateNames.Choices()));
  EXPECT_THAT(Enum("RunState"), UnorderedElementsAreArray(workflow::kRunStateNames.Choices()));
  std::vector<std::string> codes;
  for (ErrorCode code : kErrorCodes) codes.emplace_back(ErrorCodeName(code));
  codes.emplace_back("standby");  // a standby server's answer (server/http_server.h SetStandby)
  EXPECT_THAT(Enum("ErrorCode"), UnorderedElementsAreArray(codes));
}

}  // namespace
}  // namespace drover::api
