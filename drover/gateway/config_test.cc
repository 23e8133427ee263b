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
        endpoints: [https://provider.example:443]
        api_key_env: DROVER_GATEWAY_TEST_KEY
        model: other
        cost_per_1k_tokens: 0.6
breaker: {failure_threshold: 5, open_ms: 2000}
retry_budget: {ratio: 0.1, min_retries: 1, window_ms: 5000}
limits: {max_body_bytes: 1000, max_connections: 50, stream_buffer_bytes: 4096}
dns: {nameservers: ["127.0.0.1:5353"], timeout_ms: 800, attempts: 3}
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
  EXPECT_EQ(config->limits.max_connections, 50);
  EXPECT_EQ(config->limits.stream_buffer_bytes, 4096);
  EXPECT_EQ(config->dns.nameservers, std::vector<std::string>{"127.0.0.1:5353"});
  EXPECT_EQ(config->dns.timeout_ms, 800);
  EXPECT_EQ(config->dns.attempts, 3);
}

TEST(GatewayConfig, NamesTheFileLineColumnAndFieldOfAnError) {
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"models:\n  - name: m\n    backend: []\n", "gw.yaml:3:5: models[0].backend: unknown field"},
      {"models:\n  - name: m\n    backends:\n      - {name: a, endpoints: [ftp://x:1]}\n",
       "models[0].backends[0].endpoints[0]: must be http://HOST:PORT or https://HOST:PORT"},
      {"models:\n  - {name: m, backends: [{name: a, service: s, ca_file: /nonexistent.pem}]}\n",
       "models[0].backends[0].ca_file: cannot read /nonexistent.pem"},
      {"models:\n  - {name: m, backends: [{name: a, service: s}]}\nlimits: {max_connections: 0}\n",
       "limits.max_connections: must be positive"},
      {"models:\n  - {name: m, backends: [{name: a, service: s}]}\n"
       "dns: {nameservers: [\"resolver.example\"]}\n",
       "dns.nameservers[0]: must be IP or IP:PORT"},
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

TEST(ParseEndpointUrl, AcceptsHttpAndHttps) {
  const auto plain = ParseEndpointUrl("http://10.0.0.1:8000/");
  ASSERT_TRUE(plain);
  EXPECT_FALSE(plain->tls);
  EXPECT_EQ(plain->host, "10.0.0.1");
  EXPECT_EQ(plain->port, 8000);
  const auto tls = ParseEndpointUrl("https://api.provider.example:443");
  ASSERT_TRUE(tls);
  EXPECT_TRUE(tls->tls);
  EXPECT_EQ(tls->host, "api.provider.example");
  EXPECT_EQ(tls->port, 443);
  EXPECT_FALSE(ParseEndpointUrl("https://a"));
  EXPECT_FALSE(ParseEndpointUrl("ftp://a:1"));
}

}  // namespace
}  // namespace drover::gateway
