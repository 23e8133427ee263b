#pragma once

// Fully populated model values for tests: every field differs from its default, so a codec or
// store that drops or swaps a field fails an == comparison. Test-only; header-only so that it
// adds nothing to the library. (A candidate for drover/testing once that folder grows.)
// The values exercise the codecs, not the scheduler: SampleJobSpec, for one, asks for whole GPUs,
// a GPU share and a MIG instance at once, which the spec parser would reject.

#include <cstdint>
#include <string>

#include "drover/model/cron.h"
#include "drover/model/decision.h"
#include "drover/model/job.h"
#include "drover/model/job_spec.h"
#include "drover/model/launch.h"
#include "drover/model/node.h"
#include "drover/model/policy.h"

namespace drover::codec::testing {

inline model::JobSpec SampleJobSpec(const std::string& name = "train-llm") {
  model::JobSpec spec;
  spec.name = name;
  spec.owner = "alice";
  spec.team = "research";
  spec.queue = "gpu-large";
  spec.priority_class = "high";
  spec.pipeline = "nightly-llm";
  spec.command = {"python", "train.py", "--epochs=3", "unicode: \xc3\xa9\xe2\x9c\x93"};
  spec.script = "echo \"quoted\" 'single' \\ backslash\nsecond line";
  spec.working_dir = "/home/alice/llm";
  spec.image = "nvcr.io/nvidia/pytorch:24.05-py3";
  spec.env = {{"NCCL_DEBUG", "INFO"}, {"EMPTY", ""}};
  spec.secret_env = {{"WANDB_API_KEY", "wandb-key"}};
  spec.requirements.per_worker = {.cpu_millis = 8500, .memory_bytes = 68719476736, .gpus = 8};
  spec.requirements.gpu_memory_bytes = 85899345920;
  spec.requirements.gpu_models = {"H100", "H200"};
  spec.requirements.node_selector = {{"zone", "eu-1"}, {"fabric", "ib"}};
  spec.requirements.tolerations = {{.key = "dedicated",
                                    .op = model::Toleration::Operator::kEqual,
                                    .value = "ml",
                                    .effect = model::TaintEffect::kNoSchedule},
                                   {.key = "maintenance",
                                    .op = model::Toleration::Operator::kExists,
                                    .value = "",
                                    .effect = std::nullopt},
                                   {.key = "",
                                    .op = model::Toleration::Operator::kExists,
                                    .value = "",
                                    .effect = model::TaintEffect::kNoExecute}};
  spec.requirements.same_node = true;
  spec.requirements.gpu_share_millis = 250;
  spec.requirements.mig_profile = "3g.40gb";
  spec.requirements.topology_level = "rack";
  spec.preferences.node_labels = {{.key = "zone", .value = "a", .weight = 10},
                                  {.key = "spot", .value = "", .weight = 1}};
  spec.preferences.topology_level = "nvlink-domain";
  spec.workers = 4;
  spec.min_workers = 2;
  spec.stage = "train";
  spec.trial = {.index = 2,
                .count = 6,
                .params = {{"lr", "0.01"}, {"batch", "64"}},
                .concurrency = 2,
                .objective = "accuracy",
                .maximize = false,
                .stop_at = 0.05};
  spec.admission = model::PipelineAdmission::kWhole;
  spec.depends_on = {{.name = "prepare-data", .condition = model::DependencyCondition::kSucceeded},
                     {.name = "tokenize", .condition = model::DependencyCondition::kDone}};
  spec.run_if = "${{ stages.tokenize.outputs.tokens }} > 1000";
  spec.inputs = {{.path = "/data/raw.csv", .from_stage = "", .from_output = ""},
                 {.path = "", .from_stage = "tokenize", .from_output = "tokens"}};
  spec.outputs = {{.name = "model", .path = "/out/model-2"}, {.name = "accuracy", .path = ""}};
  spec.timeout = 7'200'000;
  spec.retry = {.max_attempts = 3,
                .backoff_ms = 30'000,
                .on = {model::FailureKind::kNodeLost, model::FailureKind::kTimeout}};
  spec.checkpoint_dir = "/ckpt/llm";
  spec.resume = true;
  spec.interruptible = true;
  spec.hold_infeasible = true;
  return spec;
}

inline model::ExitStatus SampleExitStatus() {
  return {.exit_code = 137,
          .signal = 9,
          .timed_out = true,
          .cancelled = true,
          .preempted = true,
          .node_lost = true,
          .oom_killed = true,
          .message = "killed after timeout",
          .output_values = {{"accuracy", "0.93"}}};
}

inline model::Worker SampleWorker(int rank = 1) {
  model::Worker worker;
  worker.rank = rank;
  worker.node = NodeId("gpu-node-07");
  worker.gpus = {4, 5, 6, 7};
  worker.state = model::WorkerState::kExited;
  worker.launched_at = 1'700'000'001'000;
  worker.started_at = 1'700'000'002'000;
  worker.finished_at = 1'700'000'900'000;
  worker.exit = SampleExitStatus();
  return worker;
}

inline model::Attempt SampleAttempt(int number = 2) {
  model::Attempt attempt;
  attempt.number = number;
  attempt.ready_at = 1'700'000'000'100;
  attempt.dequeued_at = 1'700'000'000'200;
  attempt.admitted_at = 1'700'000'000'300;
  attempt.placed_at = 1'700'000'000'400;
  attempt.workers_started_at = 1'700'000'000'500;
  attempt.running_at = 1'700'000'000'600;
  attempt.finished_at = 1'700'000'900'700;
  attempt.outcome = model::JobState::kTimedOut;
  attempt.outcome_reason = "ran past the 2h timeout";
  attempt.resumed = true;
  attempt.last_checkpoint_at = 1'700'000'450'000;
  attempt.preempted_by = JobId(77);
  attempt.disruption = model::Disruption::kNodeDrain;
  attempt.useful_work_at = 1'700'000'000'650;
  attempt.progress = 0.375;
  attempt.throughput = 1250.5;
  attempt.throughput_unit = "samples/s";
  model::Worker running = SampleWorker(0);
  running.state = model::WorkerState::kRunning;
  running.exit.reset();
  attempt.workers = {running, SampleWorker(1)};
  return attempt;
}

inline model::Job SampleJob(std::int64_t id = 42, const std::string& name = "train-llm") {
  model::Job job;
  job.id = JobId(id);
  job.spec = SampleJobSpec(name);
  job.dependencies = {JobId(40), JobId(41)};
  job.submission_key = "idem-7f3a";
  job.submission_hash = "fnv1a64:0123456789abcdef";
  job.run_as = "alice-unix";
  job.may_run_as_root = true;
  job.pipeline_run = JobId(39);
  job.released_at = 1'700'000'000'050;
  job.outputs = {{"model", "/out/model-2"}, {"accuracy", "0.93"}};
  job.state = model::JobState::kTimedOut;
  job.created_at = 1'700'000'000'000;
  job.finished_at = 1'700'000'900'800;
  job.not_before = 1'700'000'030'000;
  job.status_message = "attempt 2 timed out";
  model::Attempt first = SampleAttempt(1);
  first.outcome = model::JobState::kReady;
  // The second attempt ran under Slurm.
  model::Attempt second = SampleAttempt(2);
  second.executor = "slurm";
  second.external_id = "4711";
  second.external_reason = "Priority: higher priority jobs are ahead";
  second.external_submitted_at = 1'700'000'000'310;
  second.external_eligible_at = 1'700'000'000'320;
  second.workers[1].host = "n3";
  first.requeued_by = "alice";
  job.attempts = {first, second};
  job.hold = model::JobHold{.by = "bob", .since = 1'700'000'000'400, .reason = "wait for data"};
  return job;
}

inline model::Transition SampleTransition(std::int64_t job = 42) {
  return {.job = JobId(job),
          .attempt = 2,
          .from = model::JobState::kRunning,
          .to = model::JobState::kTimedOut,
          .at = 1'700'000'900'800,
          .cause = "timeout after 2h",
          .actor = "alice"};
}

inline model::Node SampleNode() {
  model::Node node;
  node.name = NodeId("gpu-node-07");
  node.labels = {{"zone", "eu-1"}, {"fabric", "ib"}};
  node.taints = {{.key = "dedicated", .value = "ml", .effect = model::TaintEffect::kNoSchedule},
                 {.key = "maintenance", .value = "", .effect = model::TaintEffect::kNoExecute},
                 {.key = "spot", .value = "true", .effect = model::TaintEffect::kPreferNoSchedule}};
  node.cpu_millis = 224'000;
  node.memory_bytes = 2'199'023'255'552;
  for (int i = 0; i < 2; ++i) {
    node.gpus.push_back({.index = i,
                         .uuid = "GPU-1234-" + std::to_string(i),
                         .model = "H200",
                         .memory_bytes = 150'323'855'360,
                         .topology_group = i < 1 ? "nvl-0" : "nvl-1",
                         .sharing = model::GpuSharing::kExclusive,
                         .mig = {}});
  }
  node.gpus[0].sharing = model::GpuSharing::kTimeslice;
  node.gpus[1].sharing = model::GpuSharing::kMig;
  node.gpus[1].mig = {{.profile = "3g.71gb", .count = 2}, {.profile = "1g.18gb", .count = 1}};
  node.address = "10.0.3.7";
  return node;
}

inline model::LaunchSpec SampleLaunchSpec() {
  model::LaunchSpec launch;
  launch.key = {.job = JobId(42), .attempt = 2, .rank = 3};
  launch.node = NodeId("gpu-node-07");
  launch.argv = {"python", "train.py"};
  launch.working_dir = "/home/alice/llm";
  launch.env = {{"CUDA_VISIBLE_DEVICES", "4,5"}, {"DROVER_JOB_ID", "42"}};
  launch.gpus = {4, 5};
  launch.timeout_ms = 7'200'000;
  launch.kill_grace_ms = 5'000;
  launch.checkpoint_dir = "/ckpt/llm";
  launch.make_dirs = {"/out/.drover-staging/job-42.attempt-2"};
  launch.value_outputs = {"accuracy", "best_step"};
  launch.run_as = "alice-unix";
  launch.may_run_as_root = true;
  return launch;
}

inline model::CronSpec SampleCronSpec() {
  model::CronSpec cron;
  cron.name = "nightly";
  cron.schedule = "30 2 * * *";
  cron.time_zone = "Europe/Berlin";
  cron.concurrency_policy = model::ConcurrencyPolicy::kForbid;
  cron.starting_deadline = 3'600'000;
  cron.successful_history_limit = 5;
  cron.failed_history_limit = 2;
  cron.suspend = true;
  cron.jobs = {SampleJobSpec("report"), SampleJobSpec("publish")};
  return cron;
}

inline model::WorkerEvent SampleWorkerEvent() {
  model::WorkerEvent event;
  event.key = {.job = JobId(42), .attempt = 2, .rank = 3};
  event.kind = model::WorkerEvent::Kind::kExited;
  event.at = 1'700'000'900'000;
  event.exit = SampleExitStatus();
  return event;
}

inline model::Decision SampleDecision() {
  model::Decision decision;
  decision.job = JobId(42);
  decision.attempt = 2;
  decision.at = 1'700'000'000'400;
  decision.kind = model::Decision::Kind::kPreempted;
  decision.queue = "team-b";
  decision.summary = "preempted 2 jobs of team-a to reclaim team-b's quota";
  decision.candidates = 12;
  decision.nodes = {"gpu-node-07", "gpu-node-08"};
  decision.score = 0.625;
  decision.reason = "reclaim";
  decision.victims = {{.job = JobId(40),
                       .queue = "team-a",
                       .gpus = 4,
                       .lost_gpu_seconds = 1234.5,
                       .has_checkpoint = true},
                      {.job = JobId(41),
                       .queue = "team-a",
                       .gpus = 2,
                       .lost_gpu_seconds = 0.25,
                       .has_checkpoint = false}};
  decision.preemptor = JobId(39);
  decision.reserved_start = 1'700'000'600'000;
  return decision;
}

inline model::Policy SamplePolicy() {
  model::QueueConfig team_a;
  team_a.name = "team-a";
  team_a.weight = 2.5;
  team_a.nominal = {
      {"gpu", 4000}, {"gpu:h100", 2000}, {"cpu", 64'000}, {"memory", 549'755'813'888}};
  team_a.borrowing_limit = {{"gpu", 4000}};
  team_a.lending_limit = {{"gpu", 2000}};
  team_a.limits = {.max_running_jobs = 10, .max_resources = {{"gpu", 8000}}};
  team_a.user_limits = {.max_running_jobs = 4, .max_resources = {{"gpu", 2500}}};
  model::QueueConfig team_b;
  team_b.name = "team-b";
  team_b.nominal = {{"gpu", 0}};
  team_b.user_limits.max_running_jobs = 0;
  model::QueueConfig org;
  org.name = "org";
  org.weight = 0.5;
  org.limits.max_resources = {{"gpu", 64'000}};
  org.children = {team_a, team_b};

  model::Policy policy;
  policy.queues = {org};
  policy.pipeline_limits = {.max_running_jobs = 2, .max_resources = {{"cpu", 500}}};
  policy.fair_share_half_life = 7'200'000;
  policy.aging_interval = 600'000;
  policy.aging_step = 50;
  policy.aging_max = 500;
  policy.scoring = model::Scoring::kFragmentation;
  policy.preemption = false;
  policy.min_run_time = 300'000;
  policy.preemption_grace = 45'000;
  policy.backfill = false;
  policy.order = model::QueueOrder::kLas;
  policy.las_thresholds = {600, 3600};
  policy.accounts.map = {{"alice", "alice-unix"}, {"bob", "shared-gpu"}};
  policy.accounts.allow_root = {"ops-admin"};
  return policy;
}

}  // namespace drover::codec::testing
