#include "drover/codec/json.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "drover/codec/sample_values.h"

namespace drover::codec {
namespace {

using ::nlohmann::json;
using ::testing::HasSubstr;

// Encodes, serializes to text, parses back and decodes: the path every stored or sent value
// takes.
template <typename T, typename Decoder>
T RoundTrip(const T& value, Decoder decode) {
  const std::string text = DumpJson(ToJson(value));
  auto parsed = ParseJson(text);
  EXPECT_TRUE(parsed.has_value()) << text;
  auto decoded = decode(*parsed, "root");
  EXPECT_TRUE(decoded.has_value()) << decoded.error().ToString() << "\n" << text;
  return decoded.has_value() ? *decoded : T{};
}

TEST(JsonCodec, RoundTripsJobSpec) {
  const model::JobSpec spec = testing::SampleJobSpec();
  EXPECT_EQ(RoundTrip(spec, JobSpecFromJson), spec);
  model::JobSpec no_timeout = spec;
  no_timeout.timeout.reset();
  EXPECT_EQ(RoundTrip(no_timeout, JobSpecFromJson), no_timeout);
}

TEST(JsonCodec, RoundTripsDefaultValues) {
  EXPECT_EQ(RoundTrip(model::JobSpec{}, JobSpecFromJson), model::JobSpec{});
  EXPECT_EQ(RoundTrip(model::Job{}, JobFromJson), model::Job{});
  EXPECT_EQ(RoundTrip(model::Node{}, NodeFromJson), model::Node{});
  EXPECT_EQ(RoundTrip(model::WorkerEvent{}, WorkerEventFromJson), model::WorkerEvent{});
}

TEST(JsonCodec, RoundTripsExitStatus) {
  const model::ExitStatus exit = testing::SampleExitStatus();
  EXPECT_EQ(RoundTrip(exit, ExitStatusFromJson), exit);
}

TEST(JsonCodec, RoundTripsWorker) {
  const model::Worker worker = testing::SampleWorker();
  EXPECT_EQ(RoundTrip(worker, WorkerFromJson), worker);
  model::Worker no_exit = worker;
  no_exit.exit.reset();
  EXPECT_EQ(RoundTrip(no_exit, WorkerFromJson), no_exit);
}

TEST(JsonCodec, RoundTripsAttempt) {
  const model::Attempt attempt = testing::SampleAttempt();
  EXPECT_EQ(RoundTrip(attempt, AttemptFromJson), attempt);
}

TEST(JsonCodec, RoundTripsJob) {
  const model::Job job = testing::SampleJob();
  EXPECT_EQ(RoundTrip(job, JobFromJson), job);
}

TEST(JsonCodec, RoundTripsEveryJobState) {
  for (int i = 0; i <= static_cast<int>(model::JobState::kTimedOut); ++i) {
    model::Job job = testing::SampleJob();
    job.state = static_cast<model::JobState>(i);
    EXPECT_EQ(RoundTrip(job, JobFromJson), job) << i;
  }
}

TEST(JsonCodec, RoundTripsTransition) {
  const model::Transition transition = testing::SampleTransition();
  EXPECT_EQ(RoundTrip(transition, TransitionFromJson), transition);
}

TEST(JsonCodec, RoundTripsNode) {
  const model::Node node = testing::SampleNode();
  EXPECT_EQ(RoundTrip(node, NodeFromJson), node);
}

TEST(JsonCodec, RoundTripsLaunchSpec) {
  const model::LaunchSpec launch = testing::SampleLaunchSpec();
  EXPECT_EQ(RoundTrip(launch, LaunchSpecFromJson), launch);
}

TEST(JsonCodec, RoundTripsWorkerEvent) {
  model::WorkerEvent event = testing::SampleWorkerEvent();
  EXPECT_EQ(RoundTrip(event, WorkerEventFromJson), event);
  event.kind = model::WorkerEvent::Kind::kStarted;
  event.exit = {};
  EXPECT_EQ(RoundTrip(event, WorkerEventFromJson), event);
}

TEST(JsonCodec, UsesReadableKeysAndEnumNames) {
  const json job = ToJson(testing::SampleJob());
  EXPECT_EQ(job["id"], 42);
  EXPECT_EQ(job["state"], "timed_out");
  EXPECT_EQ(job["created_at"], 1'700'000'000'000);
  EXPECT_EQ(job["dependencies"], json::array({40, 41}));
  EXPECT_EQ(job["spec"]["timeout_ms"], 7'200'000);
  EXPECT_EQ(job["spec"]["requirements"]["per_worker"]["cpu_millis"], 8500);
  EXPECT_EQ(job["spec"]["requirements"]["per_worker"]["memory_bytes"], 68719476736);
  EXPECT_EQ(job["spec"]["requirements"]["tolerations"][0]["operator"], "Equal");
  EXPECT_EQ(job["spec"]["requirements"]["tolerations"][0]["effect"], "NoSchedule");
  EXPECT_EQ(job["spec"]["requirements"]["tolerations"][1]["operator"], "Exists");
  EXPECT_FALSE(job["spec"]["requirements"]["tolerations"][1].contains("effect"));
  EXPECT_EQ(job["attempts"][1]["workers"][1]["node"], "gpu-node-07");
  EXPECT_EQ(job["attempts"][1]["workers"][1]["state"], "exited");
  EXPECT_EQ(job["attempts"][0]["outcome"], "ready");

  const json transition = ToJson(testing::SampleTransition());
  EXPECT_EQ(transition["from_state"], "running");
  EXPECT_EQ(transition["to_state"], "timed_out");

  const json node = ToJson(testing::SampleNode());
  EXPECT_EQ(node["taints"][2]["effect"], "PreferNoSchedule");
  EXPECT_EQ(ToJson(testing::SampleWorkerEvent())["kind"], "exited");
}

TEST(JsonCodec, MissingKeysTakeDefaults) {
  auto spec = JobSpecFromJson(json{{"name", "x"}});
  ASSERT_TRUE(spec.has_value()) << spec.error().ToString();
  model::JobSpec expected;
  expected.name = "x";
  EXPECT_EQ(*spec, expected);
  EXPECT_EQ(spec->queue, "default");

  auto timeout_null = JobSpecFromJson(json{{"timeout_ms", nullptr}});
  ASSERT_TRUE(timeout_null.has_value());
  EXPECT_FALSE(timeout_null->timeout.has_value());
}

// Decodes `j` as a Job and returns the error message ("" if it decoded).
std::string JobError(const json& j) {
  auto job = JobFromJson(j);
  if (job.has_value()) return "";
  EXPECT_EQ(job.error().code, ErrorCode::kInvalidArgument);
  return job.error().message;
}

TEST(JsonCodec, ErrorsNameTheFieldPath) {
  json j = ToJson(testing::SampleJob());
  j["attempts"][0]["workers"][1]["gpus"] = json::array({1, "two"});
  EXPECT_EQ(JobError(j), "job.attempts[0].workers[1].gpus: expected an array of integers");

  j = ToJson(testing::SampleJob());
  j["spec"]["requirements"]["per_worker"]["cpu_millis"] = "8";
  EXPECT_EQ(JobError(j), "job.spec.requirements.per_worker.cpu_millis: expected a 64-bit integer");

  j = ToJson(testing::SampleJob());
  j["spec"]["env"]["NCCL_DEBUG"] = 3;
  EXPECT_EQ(JobError(j), "job.spec.env.NCCL_DEBUG: expected a string");

  j = ToJson(testing::SampleJob());
  j["attempts"][1] = "not an object";
  EXPECT_EQ(JobError(j), "job.attempts[1]: expected an object");

  EXPECT_EQ(JobError(json::array()), "job: expected an object");
  EXPECT_EQ(JobError(json{{"dependencies", json::array({1, -2.5})}}),
            "job.dependencies: expected an array of integer job ids");
}

TEST(JsonCodec, RejectsUnknownEnumNames) {
  EXPECT_THAT(JobError(json{{"state", "sleeping"}}),
              HasSubstr("job.state: unknown job state \"sleeping\" (expected one of pending"));
  EXPECT_THAT(JobError(json{{"state", 3}}), HasSubstr("job.state: expected a job state name"));

  json spec = ToJson(testing::SampleJobSpec());
  spec["requirements"]["tolerations"][0]["effect"] = "noschedule";
  auto decoded = JobSpecFromJson(spec);
  ASSERT_FALSE(decoded.has_value());
  EXPECT_THAT(decoded.error().message,
              HasSubstr("spec.requirements.tolerations[0].effect: unknown taint effect"));

  spec = ToJson(testing::SampleJobSpec());
  spec["requirements"]["tolerations"][1]["operator"] = "In";
  decoded = JobSpecFromJson(spec);
  ASSERT_FALSE(decoded.has_value());
  EXPECT_THAT(decoded.error().message,
              HasSubstr("spec.requirements.tolerations[1].operator: unknown toleration operator"));

  auto event = WorkerEventFromJson(json{{"kind", "crashed"}}, "body");
  ASSERT_FALSE(event.has_value());
  EXPECT_THAT(event.error().message, HasSubstr("body.kind: unknown worker event kind"));
}

TEST(JsonCodec, RejectsNonIntegralAndOutOfRangeNumbers) {
  EXPECT_THAT(JobError(json{{"created_at", 1.5}}), HasSubstr("job.created_at: expected"));
  EXPECT_THAT(JobError(json{{"created_at", 1.0}}), HasSubstr("job.created_at: expected"));
  EXPECT_THAT(JobError(json{{"created_at", 18446744073709551615ULL}}),
              HasSubstr("job.created_at: expected a 64-bit integer"));
  EXPECT_THAT(JobError(json{{"attempts", json::array({json{{"number", 4294967296LL}}})}}),
              HasSubstr("job.attempts[0].number: expected a 32-bit integer"));
  EXPECT_EQ(JobError(json{{"created_at", -5}}), "");
}

TEST(JsonCodec, RejectsWrongTypesWithoutThrowing) {
  for (const json& bad : {json(nullptr), json(true), json(1), json("s"), json::array({1})}) {
    EXPECT_FALSE(JobSpecFromJson(bad).has_value());
    EXPECT_FALSE(NodeFromJson(bad).has_value());
    EXPECT_FALSE(LaunchSpecFromJson(bad).has_value());
    EXPECT_FALSE(WorkerEventFromJson(bad).has_value());
    EXPECT_FALSE(TransitionFromJson(bad).has_value());
    EXPECT_FALSE(ExitStatusFromJson(bad).has_value());
  }
  auto node = NodeFromJson(json{{"name", 7}});
  ASSERT_FALSE(node.has_value());
  EXPECT_EQ(node.error().message, "node.name: expected a string node name");
  auto launch = LaunchSpecFromJson(json{{"argv", json::array({"a", 1})}});
  ASSERT_FALSE(launch.has_value());
  EXPECT_EQ(launch.error().message, "launch.argv: expected an array of strings");
}

TEST(JsonCodec, DumpReplacesInvalidUtf8InsteadOfThrowing) {
  model::JobSpec spec;
  spec.name = "bad\xff";
  std::string text;
  EXPECT_NO_THROW(text = DumpJson(ToJson(spec)));
  EXPECT_THAT(text, HasSubstr("bad\xef\xbf\xbd"));
}

TEST(JsonCodec, ParseJsonReportsSyntaxErrors) {
  auto parsed = ParseJson("{\"a\": ");
  ASSERT_FALSE(parsed.has_value());
  EXPECT_EQ(parsed.error().code, ErrorCode::kInvalidArgument);
  EXPECT_THAT(parsed.error().message, HasSubstr("invalid JSON"));
}

TEST(JsonCodec, ParsesTaintEffects) {
  EXPECT_EQ(ParseTaintEffect("NoExecute"), model::TaintEffect::kNoExecute);
  EXPECT_EQ(ParseTaintEffect("PreferNoSchedule"), model::TaintEffect::kPreferNoSchedule);
  EXPECT_EQ(ParseTaintEffect("NoSchedule"), model::TaintEffect::kNoSchedule);
  EXPECT_EQ(ParseTaintEffect("noschedule"), std::nullopt);
}

}  // namespace
}  // namespace drover::codec
