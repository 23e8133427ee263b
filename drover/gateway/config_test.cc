#include "drover/gateway/config.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstdlib>

namespace drover::gateway {
namespace {

using ::testing::HasSubstr;

TEST(GatewayConfig, ParsesModelsBackendsAndSettings) {
  setenv("DROVER_GATEWAY_TEST_KEY", "sk-secret", 1);
  auto config = ParseConfig(R"(
models:
  - name: llama
    policy: prefix-affinity
    epsilon: 0.5
    backends:
      - name: local
        service: llama
        endpoints: [http://127.0.0.1:8000/]
      - name: provider
        endpoints: [http://provider.example:80]
        api_key_env: DROVER_GATEWAY_TEST_KEY
        model: other
        cost_per_1k_tokens: 0.6
breaker: {failure_threshold: 5, open_ms: 2000}
retry_budget: {ratio: 0.1, min_retries: 1, window_ms: 5000}
limits: {max_body_bytes: 1000}
)",
                            "gw.yaml");
  ASSERT_TRUE(config) << config.error().message;
  ASSERT_EQ(config->models.size(), 1u);
  const ModelConfig& model = config->models[0];
  EXPECT_EQ(model.route.policy, Policy::kPrefixAffinity);
  EXPECT_EQ(model.route.epsilon, 0.5);
  EXPECT_EQ(model.backends[0].endpoints[0], "http://127.0.0.1:8000");
  EXPECT_EQ(model.backends[0].service, "llama");
  EXPECT_EQ(model.backends[1].api_key, "sk-secret");
  EXPECT_EQ(model.backends[1].model, "other");
  EXPECT_EQ(model.backends[1].cost_per_1k_tokens, 0.6);
  EXPECT_EQ(config->breaker.failure_threshold, 5);
  EXPECT_EQ(config->retry_budget.window_ms, 5000);
  EXPECT_EQ(config->limits.max_body_bytes, 1000);
  EXPECT_EQ(config->limits.max_json_depth, GatewayLimits{}.max_json_depth);
}

TEST(GatewayConfig, NamesTheFileLineColumnAndFieldOfAnError) {
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"models:\n  - name: m\n    backend: []\n", "gw.yaml:3:5: models[0].backend: unknown field"},
      {"models:\n  - name: m\n    backends:\n      - {name: a, endpoints: [ftp://x:1]}\n",
       "models[0].backends[0].endpoints[0]: must be http://HOST:PORT"},
      {"models:\n  - name: m\n    backends:\n      - {name: a}\n", "needs endpoints or a service"},
      {"models:\n  - {name: m, backends: [{name: a, service: s}]}\n"
       "  - {name: m, backends: [{name: a, service: s}]}\n",
       "duplicate model \"m\""},
      {"models:\n  - {name: m, backends: [{name: a, service: s, api_key_env: "
       "DROVER_GATEWAY_UNSET_VARIABLE}]}\n",
       "api_key_env: is not set"},
      {"models:\n  - {name: m, backends: [{name: a, service: s, health_path: x}]}\n",
       "health_path: must be a path starting with /"},
      {"models:\n  - {name: m, backends: [{name: a, service: s}]}\n"
       "breaker: {open_ms: 5000, max_open_ms: 10}\n",
       "breaker.max_open_ms: must be at least open_ms"},
  };
  for (const auto& [text, expected] : cases) {
    auto config = ParseConfig(text, "gw.yaml");
    ASSERT_FALSE(config) << text;
    EXPECT_THAT(config.error().message, HasSubstr(expected)) << text;
  }
}

TEST(SplitHttpUrl, AcceptsHostPortOnly) {
  EXPECT_EQ(*SplitHttpUrl("http://127.0.0.1:8000"), std::make_pair(std::string("127.0.0.1"), 8000));
  EXPECT_FALSE(SplitHttpUrl("https://a:1"));
  EXPECT_FALSE(SplitHttpUrl("http://a"));
  EXPECT_FALSE(SplitHttpUrl("http://a:99999"));
  EXPECT_FALSE(SplitHttpUrl("http://a:1/v1"));
}

}  // namespace
}  // namespace drover::gateway
