#include "drover/codec/json.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "drover/codec/sample_values.h"
#include "drover/model/outputs.h"

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
  for (int i = 0; i <= static_cast<int>(model::JobState::kSkipped); ++i) {
    model::Job job = testing::SampleJob();
    job.state = static_cast<model::JobState>(i);
    EXPECT_EQ(RoundTrip(job, JobFromJson), job) << i;
  }
}

TEST(JsonCodec, RoundTripsCronSpec) {
  const model::CronSpec cron = testing::SampleCronSpec();
  EXPECT_EQ(RoundTrip(cron, CronSpecFromJson), cron);
  EXPECT_EQ(RoundTrip(model::CronSpec{}, CronSpecFromJson), model::CronSpec{});
  const json j = ToJson(cron);
  EXPECT_EQ(j["concurrency_policy"], "forbid");
  EXPECT_EQ(j["starting_deadline_ms"], 3'600'000);
  EXPECT_FALSE(ToJson(model::CronSpec{}).contains("starting_deadline_ms"));
  auto bad = CronSpecFromJson(json{{"concurrency_policy", "queue"}});
  ASSERT_FALSE(bad.has_value());
  EXPECT_THAT(bad.error().message,
              HasSubstr("cron.concurrency_policy: unknown concurrency policy"));
}

TEST(JsonCodec, EncodesWorkflowFields) {
  const json spec = ToJson(testing::SampleJobSpec());
  EXPECT_EQ(spec["depends_on"][1], (json{{"name", "tokenize"}, {"condition", "done"}}));
  EXPECT_EQ(spec["admission"], "whole");
  EXPECT_EQ(spec["trial"]["params"]["lr"], "0.01");
  EXPECT_EQ(spec["trial"]["stop_at"], 0.05);
  EXPECT_EQ(spec["inputs"][0], (json{{"path", "/data/raw.csv"}}));
  EXPECT_EQ(spec["inputs"][1], (json{{"from_stage", "tokenize"}, {"from_output", "tokens"}}));
  EXPECT_EQ(spec["retry"]["on"], json::array({"node_lost", "timeout"}));
  EXPECT_EQ(spec["resume"], true);

  json bad = spec;
  bad["depends_on"][0]["condition"] = "finished";
  auto decoded = JobSpecFromJson(bad);
  ASSERT_FALSE(decoded.has_value());
  EXPECT_THAT(decoded.error().message,
              HasSubstr("spec.depends_on[0].condition: unknown dependency condition"));
  bad = spec;
  bad["retry"]["on"] = json::array({"oom"});
  EXPECT_THAT(JobSpecFromJson(bad).error().message,
              HasSubstr("spec.retry.on[0]: unknown failure kind \"oom\""));
  bad = spec;
  bad["depends_on"] = json::array({7});
  EXPECT_EQ(JobSpecFromJson(bad).error().message,
            "spec.depends_on[0]: expected a dependency object or a job name");
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

TEST(JsonCodec, RoundTripsCheckpointEvents) {
  model::WorkerEvent event = testing::SampleWorkerEvent();
  event.kind = model::WorkerEvent::Kind::kCheckpoint;
  event.exit = {};
  EXPECT_EQ(ToJson(event)["kind"], "checkpoint");
  EXPECT_EQ(RoundTrip(event, WorkerEventFromJson), event);
}

TEST(JsonCodec, RoundTripsDecision) {
  const model::Decision decision = testing::SampleDecision();
  EXPECT_EQ(RoundTrip(decision, DecisionFromJson), decision);
  EXPECT_EQ(RoundTrip(model::Decision{}, DecisionFromJson), model::Decision{});
  for (auto kind : {model::Decision::Kind::kPlaced, model::Decision::Kind::kReserved,
                    model::Decision::Kind::kPreempted, model::Decision::Kind::kEvicted}) {
    model::Decision d = decision;
    d.kind = kind;
    EXPECT_EQ(RoundTrip(d, DecisionFromJson), d);
  }
  const json j = ToJson(decision);
  EXPECT_EQ(j["kind"], "preempted");
  EXPECT_EQ(j["victims"][0]["job_id"], 40);
  EXPECT_EQ(j["victims"][0]["lost_gpu_seconds"], 1234.5);
  EXPECT_EQ(j["preemptor"], 39);
  EXPECT_EQ(j["reserved_start_at"], 1'700'000'600'000);
}

TEST(JsonCodec, RoundTripsPolicy) {
  const model::Policy policy = testing::SamplePolicy();
  EXPECT_EQ(RoundTrip(policy, PolicyFromJson), policy);
  EXPECT_EQ(RoundTrip(model::Policy{}, PolicyFromJson), model::Policy{});
  EXPECT_EQ(RoundTrip(policy.queues[0], QueueConfigFromJson), policy.queues[0]);
  for (auto scoring :
       {model::Scoring::kBinpack, model::Scoring::kSpread, model::Scoring::kFragmentation}) {
    model::Policy p = policy;
    p.scoring = scoring;
    EXPECT_EQ(RoundTrip(p, PolicyFromJson), p);
  }
  const json j = ToJson(policy);
  EXPECT_EQ(j["scoring"], "fragmentation");
  EXPECT_EQ(j["queues"][0]["children"][0]["nominal"]["gpu:h100"], 2000);
  EXPECT_EQ(j["queues"][0]["children"][0]["limits"]["max_running_jobs"], 10);
  EXPECT_FALSE(j["queues"][0]["limits"].contains("max_running_jobs"));
  EXPECT_EQ(j["queues"][0]["children"][1]["user_limits"]["max_running_jobs"], 0);
  EXPECT_EQ(j["fair_share_half_life_ms"], 7'200'000);
  EXPECT_EQ(j["accounts"]["map"]["alice"], "alice-unix");
  EXPECT_EQ(j["accounts"]["allow_root"], json::array({"ops-admin"}));
}

TEST(JsonCodec, RejectsBadPoliciesAndDecisions) {
  json j = ToJson(testing::SamplePolicy());
  j["scoring"] = "packed";
  auto policy = PolicyFromJson(j);
  ASSERT_FALSE(policy.has_value());
  EXPECT_THAT(policy.error().message, HasSubstr("policy.scoring: unknown scoring \"packed\""));

  j = ToJson(testing::SamplePolicy());
  j["queues"][0]["children"][0]["nominal"]["gpu"] = 1.5;
  policy = PolicyFromJson(j);
  ASSERT_FALSE(policy.has_value());
  EXPECT_EQ(policy.error().message,
            "policy.queues[0].children[0].nominal.gpu: expected a 64-bit integer");

  j = ToJson(testing::SamplePolicy());
  j["queues"][0]["weight"] = "heavy";
  EXPECT_EQ(PolicyFromJson(j).error().message, "policy.queues[0].weight: expected a number");

  auto decision = DecisionFromJson(json{{"kind", "moved"}});
  ASSERT_FALSE(decision.has_value());
  EXPECT_THAT(decision.error().message, HasSubstr("decision.kind: unknown decision kind"));

  json node = ToJson(testing::SampleNode());
  node["gpus"][0]["sharing"] = "shared";
  auto decoded = NodeFromJson(node);
  ASSERT_FALSE(decoded.has_value());
  EXPECT_THAT(decoded.error().message, HasSubstr("node.gpus[0].sharing: unknown GPU sharing mode"));
}

// Values that do not use the fields added for sharing, topology, pipelines, preemption and
// checkpoints encode as before: the new keys are left out while they hold their defaults, and
// snapshots written before them still decode.
TEST(JsonCodec, OmitsNewFieldsAtTheirDefaultsAndDecodesOldSnapshots) {
  model::Job job = testing::SampleJob();
  job.spec.pipeline.clear();
  job.spec.requirements.gpu_share_millis = 0;
  job.spec.requirements.mig_profile.clear();
  job.spec.requirements.topology_level.clear();
  job.spec.preferences = {};
  job.spec.stage.clear();
  job.spec.trial = {};
  job.spec.admission = model::PipelineAdmission::kStagewise;
  job.spec.run_if.clear();
  job.spec.inputs.clear();
  job.spec.outputs.clear();
  job.spec.resume = false;
  job.spec.retry.on = model::RetryPolicy{}.on;
  job.pipeline_run = JobId(0);
  job.released_at = 0;
  job.outputs.clear();
  job.run_as.clear();
  job.may_run_as_root = false;
  for (model::Attempt& attempt : job.attempts) {
    attempt.resumed = false;
    attempt.last_checkpoint_at = 0;
    attempt.preempted_by.reset();
    attempt.disruption = model::Disruption::kNone;
    attempt.useful_work_at = 0;
    attempt.progress = -1;
    attempt.throughput = -1;
    attempt.throughput_unit.clear();
    for (model::Worker& worker : attempt.workers) {
      if (worker.exit) worker.exit->preempted = false;
      if (worker.exit) worker.exit->oom_killed = false;
    }
  }
  const json j = ToJson(job);
  for (const char* key :
       {"pipeline", "stage", "trial", "admission", "run_if", "inputs", "outputs", "resume"}) {
    EXPECT_FALSE(j["spec"].contains(key)) << key;
  }
  EXPECT_FALSE(j["spec"]["retry"].contains("on"));
  for (const char* key : {"pipeline_run", "released_at", "outputs", "run_as", "may_run_as_root"}) {
    EXPECT_FALSE(j.contains(key)) << key;
  }
  for (const char* key : {"gpu_share_millis", "mig_profile", "topology_level"}) {
    EXPECT_FALSE(j["spec"]["requirements"].contains(key)) << key;
  }
  EXPECT_EQ(j["spec"]["preferences"], json::object());
  for (const char* key : {"resumed", "last_checkpoint_at", "preempted_by", "disruption",
                          "useful_work_at", "progress", "throughput", "throughput_unit"}) {
    EXPECT_FALSE(j["attempts"][1].contains(key)) << key;
  }
  EXPECT_FALSE(j["attempts"][1]["workers"][1]["exit"].contains("preempted"));
  EXPECT_FALSE(j["attempts"][1]["workers"][1]["exit"].contains("oom_killed"));
  EXPECT_EQ(RoundTrip(job, JobFromJson), job);

  model::Node node = testing::SampleNode();
  for (model::Gpu& gpu : node.gpus) {
    gpu.sharing = model::GpuSharing::kExclusive;
    gpu.mig.clear();
  }
  EXPECT_FALSE(ToJson(node)["gpus"][1].contains("sharing"));
  EXPECT_FALSE(ToJson(node)["gpus"][1].contains("mig"));
  model::LaunchSpec launch = testing::SampleLaunchSpec();
  launch.checkpoint_dir.clear();
  launch.make_dirs.clear();
  launch.value_outputs.clear();
  launch.run_as.clear();
  launch.may_run_as_root = false;
  for (const char* key :
       {"checkpoint_dir", "make_dirs", "value_outputs", "run_as", "may_run_as_root"}) {
    EXPECT_FALSE(ToJson(launch).contains(key)) << key;
  }

  // A snapshot as stored before these fields existed.
  auto old = JobFromJson(json::parse(R"({"id": 3, "state": "running",
      "spec": {"name": "a", "requirements": {"per_worker": {"gpus": 1}}, "preferences": {},
               "depends_on": ["prep", "tokenize"]},
      "attempts": [{"number": 1, "workers": [{"rank": 0, "exit": {"exit_code": 0}}]}]})"));
  ASSERT_TRUE(old.has_value()) << old.error().ToString();
  EXPECT_EQ(old->spec.pipeline, "");
  EXPECT_EQ(old->spec.depends_on,
            (std::vector<model::Dependency>{
                {.name = "prep", .condition = model::DependencyCondition::kSucceeded},
                {.name = "tokenize", .condition = model::DependencyCondition::kSucceeded}}));
  EXPECT_EQ(old->spec.retry.on, model::RetryPolicy{}.on);
  EXPECT_EQ(old->spec.requirements.gpu_share_millis, 0);
  EXPECT_EQ(old->spec.preferences, model::Preferences{});
  EXPECT_FALSE(old->attempts[0].resumed);
  EXPECT_FALSE(old->attempts[0].preempted_by.has_value());
  EXPECT_FALSE(old->attempts[0].workers[0].exit->preempted);
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
  EXPECT_EQ(job["spec"]["pipeline"], "nightly-llm");
  EXPECT_EQ(job["spec"]["requirements"]["gpu_share_millis"], 250);
  EXPECT_EQ(job["spec"]["requirements"]["mig_profile"], "3g.40gb");
  EXPECT_EQ(job["spec"]["requirements"]["topology_level"], "rack");
  EXPECT_EQ(job["spec"]["preferences"]["node_labels"][0],
            (json{{"key", "zone"}, {"value", "a"}, {"weight", 10}}));
  EXPECT_EQ(job["spec"]["preferences"]["topology_level"], "nvlink-domain");
  EXPECT_EQ(job["attempts"][1]["preempted_by"], 77);
  EXPECT_EQ(job["attempts"][1]["resumed"], true);
  EXPECT_EQ(job["attempts"][1]["last_checkpoint_at"], 1'700'000'450'000);
  EXPECT_EQ(job["attempts"][1]["workers"][1]["exit"]["preempted"], true);

  const json transition = ToJson(testing::SampleTransition());
  EXPECT_EQ(transition["from_state"], "running");
  EXPECT_EQ(transition["to_state"], "timed_out");

  const json node = ToJson(testing::SampleNode());
  EXPECT_EQ(node["taints"][2]["effect"], "PreferNoSchedule");
  EXPECT_EQ(node["gpus"][0]["sharing"], "timeslice");
  EXPECT_EQ(node["gpus"][1]["sharing"], "mig");
  EXPECT_EQ(node["gpus"][1]["mig"][0], (json{{"profile", "3g.71gb"}, {"count", 2}}));
  EXPECT_EQ(ToJson(testing::SampleLaunchSpec())["checkpoint_dir"], "/ckpt/llm");
  EXPECT_EQ(ToJson(testing::SampleLaunchSpec())["run_as"], "alice-unix");
  EXPECT_EQ(ToJson(testing::SampleLaunchSpec())["may_run_as_root"], true);
  EXPECT_EQ(job["run_as"], "alice-unix");
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

// What a remote agent reports of a worker's value outputs is bounded as the node reads them.
TEST(JsonCodec, RefusesReportedValuesBeyondWhatANodeReads) {
  const auto error = [](const json& values) {
    json event = ToJson(testing::SampleWorkerEvent());
    event["exit"]["output_values"] = values;
    Result<model::WorkerEvent> decoded = WorkerEventFromJson(event);
    return decoded ? std::string("decoded") : decoded.error().message;
  };
  EXPECT_EQ(error(json{{"accuracy", std::string(model::kMaxOutputValueBytes, '9')}}), "decoded");
  EXPECT_EQ(error(json{{"accuracy", std::string(model::kMaxOutputValueBytes + 1, '9')}}),
            "event.exit.output_values.accuracy: expected one line of at most 4096 bytes");
  EXPECT_EQ(error(json{{"accuracy", "0.9\nsecond line"}}),
            "event.exit.output_values.accuracy: expected one line of at most 4096 bytes");
  EXPECT_EQ(error(json{{"../x", "1"}}),
            "event.exit.output_values: expected output names of 1 to 63 bytes without '/'");
  EXPECT_EQ(error(json{{std::string(64, 'a'), "1"}}),
            "event.exit.output_values: expected output names of 1 to 63 bytes without '/'");
  EXPECT_EQ(error(json{{"accuracy", 0.9}}), "event.exit.output_values.accuracy: expected a string");
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
    EXPECT_FALSE(DecisionFromJson(bad).has_value());
    EXPECT_FALSE(PolicyFromJson(bad).has_value());
    EXPECT_FALSE(QueueConfigFromJson(bad).has_value());
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

// Issue 15, finding 2: nlohmann built every level of a deeply nested body before failing (about
// 76 MB for 1 MB of '['); the depth is now refused first, and brackets in strings do not count.
TEST(JsonCodec, ParseJsonRefusesDeepNestingBeforeParsing) {
  auto parsed = ParseJson(std::string(1 << 20, '['));
  ASSERT_FALSE(parsed.has_value());
  EXPECT_EQ(parsed.error().code, ErrorCode::kInvalidArgument);
  EXPECT_EQ(parsed.error().message,
            "invalid JSON: nested too deeply at byte 499 (more than 499 levels)");
  const std::string deepest = std::string(499, '[') + std::string(499, ']');
  EXPECT_TRUE(ParseJson(deepest).has_value());
  EXPECT_TRUE(ParseJson("{\"a\": \"" + std::string(1000, '[') + "\"}").has_value());
}

TEST(JsonCodec, RoundTripsNodeAdminAndNamesABadField) {
  model::NodeAdmin admin;
  admin.cordoned = true;
  admin.cordoned_at = 1'700'000'000'000;
  admin.cordoned_by = "root (admin)";
  admin.reason = "disk swap";
  admin.draining = true;
  admin.draining_at = 1'700'000'000'001;
  admin.drain_deadline = 1'700'000'600'000;
  admin.drained_at = 1'700'000'300'000;
  admin.maintenance =
      model::MaintenanceWindow{1'700'000'100'000, 1'700'000'200'000, "root (admin)", 5, "bios"};
  EXPECT_EQ(RoundTrip(admin, NodeAdminFromJson), admin);
  EXPECT_EQ(RoundTrip(model::NodeAdmin{}, NodeAdminFromJson), model::NodeAdmin{});
  auto bad = NodeAdminFromJson(json{{"maintenance", {{"from", "soon"}}}});
  ASSERT_FALSE(bad.has_value());
  EXPECT_THAT(bad.error().message, ::testing::HasSubstr("maintenance.from"));
}

}  // namespace
}  // namespace drover::codec
