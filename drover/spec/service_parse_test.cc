// kind: Service documents (docs/inference.md, "The Service spec").

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "drover/spec/spec_test_util.h"

namespace drover::spec {
namespace {

using ::testing::ElementsAre;
using ::testing::IsEmpty;
using testing::Options;

constexpr char kService[] = R"(kind: Service
name: chat
models: [llama-3-8b, llama-3-8b-instruct]
team: serving
queue: inference
priority: high
template:
  command: [python3, server.py, --port, "$DROVER_PORT"]
  resources: {gpus: 1, cpu: 4, memory: 16Gi}
  env: {MODEL: llama-3-8b}
replicas: {min: 2, max: 6}
readiness: {path: /health, interval: 2s, failure_threshold: 2, initial_delay: 5s}
liveness: {path: /live, interval: 10s}
autoscaling: {target_in_flight_per_replica: 8, scale_up_delay: 15s, scale_down_delay: 2m}
)";

std::vector<std::string> ServiceErrors(std::string_view text) {
  ParseOutput out = ParseDocumentsWithDiagnostics(text, Options());
  std::vector<std::string> lines;
  for (const Diagnostic& d : out.diagnostics) lines.push_back(d.ToString());
  if (!lines.empty()) {
    EXPECT_THAT(out.services, IsEmpty());
  }
  return lines;
}

TEST(ParseService, ReadsEveryField) {
  ParseOutput out = ParseDocumentsWithDiagnostics(kService, Options());
  ASSERT_THAT(out.diagnostics, IsEmpty());
  ASSERT_EQ(out.services.size(), 1u);
  EXPECT_THAT(out.jobs, IsEmpty());
  const model::ServiceSpec& s = out.services[0];
  EXPECT_EQ(s.name, "chat");
  EXPECT_THAT(s.models, ElementsAre("llama-3-8b", "llama-3-8b-instruct"));
  EXPECT_EQ(s.replica.name, "chat");
  EXPECT_EQ(s.replica.team, "serving");
  EXPECT_EQ(s.replica.queue, "inference");
  EXPECT_EQ(s.replica.priority_class, "high");
  EXPECT_EQ(s.replica.requirements.per_worker.gpus, 1);
  EXPECT_EQ(s.replica.env.at("MODEL"), "llama-3-8b");
  EXPECT_FALSE(s.replica.timeout.has_value());
  EXPECT_EQ(s.min_replicas, 2);
  EXPECT_EQ(s.max_replicas, 6);
  ASSERT_TRUE(s.readiness.has_value());
  EXPECT_EQ(s.readiness->path, "/health");
  EXPECT_EQ(s.readiness->interval_ms, 2'000);
  EXPECT_EQ(s.readiness->failure_threshold, 2);
  EXPECT_EQ(s.readiness->initial_delay_ms, 5'000);
  ASSERT_TRUE(s.liveness.has_value());
  EXPECT_EQ(s.liveness->path, "/live");
  EXPECT_EQ(s.liveness->failure_threshold, 3);
  EXPECT_EQ(s.autoscaling.target_in_flight_per_replica, 8);
  EXPECT_EQ(s.autoscaling.scale_up_delay_ms, 15'000);
  EXPECT_EQ(s.autoscaling.scale_down_delay_ms, 120'000);
}

TEST(ParseService, NamesBadFieldsWithTheirPosition) {
  EXPECT_THAT(ServiceErrors("kind: Service\n"
                            "name: Chat\n"
                            "models: []\n"
                            "template:\n"
                            "  command: [x]\n"
                            "  timeout: 1h\n"
                            "  workers: 2\n"
                            "replicas: {min: 3, max: 2}\n"
                            "readiness: {path: health, interval: 0s}\n"
                            "autoscaling: {scale_up_delay: -1s}\n"),
              ElementsAre("jobs.yaml:2:7: error: name: invalid service name 'Chat': use 1 to 63 "
                          "lowercase letters, digits, '.', '_' or '-', starting with a letter or "
                          "digit",
                          "jobs.yaml:3:9: error: models: must name at least one model",
                          "jobs.yaml:6:12: error: template.timeout: not allowed in a service's "
                          "template: a replica runs until it is stopped",
                          "jobs.yaml:7:12: error: template.workers: not allowed in a service's "
                          "template: a replica is one worker; scale with replicas",
                          "jobs.yaml:8:17: error: replicas.min: min (3) must not exceed max (2)",
                          "jobs.yaml:9:19: error: readiness.path: invalid probe path 'health': an "
                          "HTTP path starting with '/', without spaces, at most 1024 characters",
                          "jobs.yaml:9:37: error: readiness.interval: must be greater than zero",
                          "jobs.yaml:10:14: error: autoscaling.target_in_flight_per_replica: "
                          "required field is missing (requests in flight per replica to aim "
                          "for), unless saturation is given",
                          "jobs.yaml:10:31: error: autoscaling.scale_up_delay: must not be "
                          "negative"));
}

TEST(ParseService, ReadsScaleToZeroAndTheSaturationSignal) {
  ParseOutput out = ParseDocumentsWithDiagnostics(
      "kind: Service\nname: chat\nmodels: [m]\ntemplate: {command: [x]}\n"
      "replicas: {min: 0, max: 3}\n"
      "autoscaling:\n  scale_to_zero_after: 10m\n"
      "  saturation: {target_per_replica: 2.5, interval: 2s}\n",
      Options());
  ASSERT_THAT(out.diagnostics, IsEmpty());
  ASSERT_EQ(out.services.size(), 1u);
  const model::AutoscalingSpec& a = out.services[0].autoscaling;
  EXPECT_EQ(a.target_in_flight_per_replica, 0) << "saturation alone is enough";
  EXPECT_EQ(a.scale_to_zero_after_ms, 600'000);
  ASSERT_TRUE(a.saturation.has_value());
  EXPECT_EQ(a.saturation->metric, "vllm:num_requests_waiting");
  EXPECT_EQ(a.saturation->target_per_replica, 2.5);
  EXPECT_EQ(a.saturation->path, "/metrics");
  EXPECT_EQ(a.saturation->interval_ms, 2'000);
  EXPECT_TRUE(a.enabled());
}

TEST(ParseService, RefusesScaleToZeroAboveMinZeroAndABadSaturation) {
  EXPECT_THAT(
      ServiceErrors("kind: Service\nname: chat\nmodels: [m]\ntemplate: {command: [x]}\n"
                    "replicas: {min: 1, max: 3}\n"
                    "autoscaling:\n"
                    "  target_in_flight_per_replica: 4\n"
                    "  scale_to_zero_after: 10m\n"
                    "  saturation: {metric: 'bad name', target_per_replica: 0, interval: 10ms}\n"),
      ElementsAre("jobs.yaml:8:24: error: autoscaling.scale_to_zero_after: scale to zero needs "
                  "replicas.min: 0",
                  "jobs.yaml:9:24: error: autoscaling.saturation.metric: invalid metric name "
                  "'bad name': [a-zA-Z_:][a-zA-Z0-9_:]*, at most 200 characters",
                  "jobs.yaml:9:56: error: autoscaling.saturation.target_per_replica: must be "
                  "above 0 and at most 1000000",
                  "jobs.yaml:9:69: error: autoscaling.saturation.interval: must be between 100ms "
                  "and 1h"));
}

TEST(ParseService, RequiresNameModelsAndTemplate) {
  EXPECT_THAT(ServiceErrors("kind: Service\nreplicas: {max: 2}\n"),
              ElementsAre("jobs.yaml:1:1: error: name: required field is missing",
                          "jobs.yaml:1:1: error: models: required field is missing (the model "
                          "names the gateway routes here)",
                          "jobs.yaml:1:1: error: template: required field is missing (the "
                          "replica: command or script, resources, env)"));
}

TEST(ParseService, SuggestsAndRefusesMixingAndDuplicates) {
  std::string two = std::string(kService) + "---\n" + kService;
  EXPECT_THAT(ServiceErrors(two),
              ElementsAre("jobs.yaml:17:7: error: name: duplicate service name 'chat'; the "
                          "first is at line 2"));
  EXPECT_THAT(ServiceErrors(std::string(kService) + "---\nkind: Job\nname: a\nscript: x\n"),
              ElementsAre("jobs.yaml:16:7: error: kind: a file holds jobs, one pipeline, cron "
                          "jobs or services, not a mix: this Job follows a Service at line 1"));
  // A job file may not hold a service.
  EXPECT_THAT(testing::Errors(kService),
              ElementsAre("jobs.yaml:1:7: error: kind: a Service is not accepted here: services "
                          "are registered with the server (drover submit sends them to "
                          "/v1/services), not submitted as jobs"));
}

TEST(ParseService, DefaultsToOneReplicaWithoutProbesOrAutoscaling) {
  ParseOutput out = ParseDocumentsWithDiagnostics(
      "kind: Service\nname: a\nmodels: [m]\ntemplate: {script: ./serve}\n", Options());
  ASSERT_THAT(out.diagnostics, IsEmpty());
  const model::ServiceSpec& s = out.services.at(0);
  EXPECT_EQ(s.min_replicas, 1);
  EXPECT_EQ(s.max_replicas, 1);
  EXPECT_FALSE(s.readiness.has_value());
  EXPECT_EQ(s.autoscaling.target_in_flight_per_replica, 0);
}

}  // namespace
}  // namespace drover::spec
