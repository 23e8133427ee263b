#include "drover/spec/parse.h"

#include <fmt/format.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <map>
#include <random>
#include <string>
#include <vector>

#include "drover/spec/spec_test_util.h"

namespace drover::spec {
namespace {

using ::testing::ElementsAre;
using testing::Errors;
using ::testing::HasSubstr;
using ::testing::IsEmpty;
using testing::Options;
using ::testing::SizeIs;

constexpr std::int64_t kGi = 1LL << 30;

model::Dependency Dep(std::string name, model::DependencyCondition condition =
                                            model::DependencyCondition::kSucceeded) {
  return {std::move(name), condition};
}

model::JobSpec ParseOne(std::string_view text, const ParseOptions& options = Options()) {
  Result<std::vector<model::JobSpec>> jobs = ParseJobs(text, options);
  if (!jobs) {
    ADD_FAILURE() << jobs.error().ToString();
    return {};
  }
  EXPECT_THAT(*jobs, SizeIs(1));
  return jobs->empty() ? model::JobSpec{} : jobs->front();
}

constexpr std::string_view kQuickstart = R"(# Two jobs: train waits for prep.
kind: Job
name: prep
owner: alice
team: vision
script: |
  echo preparing
  ls
---
kind: Job
name: train
owner: alice
team: vision
queue: gpu
priority: high
command: ["python", "train.py", "--epochs", 3]
working_dir: src/../train
env: {EPOCHS: 3, DEBUG: true, NAME: "x y", EMPTY: }
resources:
  cpu: 500m
  memory: 16Gi
  gpus: 2
  gpu_memory: 40Gi
  gpu_model: [H100, A100]
workers: 4
min_workers: 2
placement:
  node_selector: {pool: a}
  tolerations:
    - {key: gpu, operator: Equal, value: reserved, effect: NoSchedule}
    - {operator: Exists}
  same_node: true
depends_on: [prep]
timeout: 1h30m
retry: {max_attempts: 3, backoff: 10s}
checkpoint_dir: /ckpt/train
interruptible: true
)";

TEST(ParseJobs, ReadsAMultiDocumentFileIntoJobSpecs) {
  ParseOptions options = Options();
  options.base_dir = "/home/alice/project";
  Result<std::vector<model::JobSpec>> jobs = ParseJobs(kQuickstart, options);
  ASSERT_TRUE(jobs) << jobs.error().ToString();
  ASSERT_THAT(*jobs, SizeIs(2));

  model::JobSpec prep;
  prep.name = "prep";
  prep.owner = "alice";
  prep.team = "vision";
  prep.script = "echo preparing\nls\n";
  prep.working_dir = "/home/alice/project";  // no working_dir: the spec file's directory
  prep.requirements.per_worker = {1000, kGi, 0};
  prep.min_workers = 1;  // = workers
  EXPECT_EQ((*jobs)[0], prep);

  model::JobSpec train;
  train.name = "train";
  train.owner = "alice";
  train.team = "vision";
  train.queue = "gpu";
  train.priority_class = "high";
  train.command = {"python", "train.py", "--epochs", "3"};
  train.working_dir = "/home/alice/project/train";
  train.env = {{"EPOCHS", "3"}, {"DEBUG", "true"}, {"NAME", "x y"}, {"EMPTY", ""}};
  train.requirements.per_worker = {500, 16 * kGi, 2};
  train.requirements.gpu_memory_bytes = 40 * kGi;
  train.requirements.gpu_models = {"H100", "A100"};
  train.requirements.node_selector = {{"pool", "a"}};
  train.requirements.tolerations = {
      {"gpu", model::Toleration::Operator::kEqual, "reserved", model::TaintEffect::kNoSchedule},
      {"", model::Toleration::Operator::kExists, "", std::nullopt}};
  train.requirements.same_node = true;
  train.workers = 4;
  train.min_workers = 2;
  train.depends_on = {Dep("prep")};
  train.timeout = 90 * 60 * 1000;
  train.retry = {3, 10'000};
  train.checkpoint_dir = "/ckpt/train";
  train.interruptible = true;
  EXPECT_EQ((*jobs)[1], train);
}

TEST(ParseJobs, AppliesDefaults) {
  model::JobSpec job = ParseOne("kind: Job\nname: a\ncommand: [true]\nworkers: 3\n");
  EXPECT_EQ(job.queue, "default");
  EXPECT_EQ(job.priority_class, "normal");
  EXPECT_EQ(job.requirements.per_worker, (model::Resources{1000, kGi, 0}));
  EXPECT_EQ(job.workers, 3);
  EXPECT_EQ(job.min_workers, 3);
  EXPECT_EQ(job.retry, (model::RetryPolicy{1, 0}));
  EXPECT_EQ(job.timeout, std::nullopt);
  EXPECT_FALSE(job.interruptible);
  EXPECT_TRUE(job.working_dir.empty());
}

TEST(ParseJobs, AcceptsAJsonObject) {
  model::JobSpec job = ParseOne(
      R"({"kind": "Job", "name": "a", "command": ["echo", "hi"],
          "resources": {"cpu": 2, "memory": "512Mi", "gpus": 1, "gpu_model": "H100"},
          "interruptible": false})");
  EXPECT_EQ(job.name, "a");
  EXPECT_EQ(job.command, (std::vector<std::string>{"echo", "hi"}));
  EXPECT_EQ(job.requirements.per_worker, (model::Resources{2000, 512LL << 20, 1}));
  EXPECT_EQ(job.requirements.gpu_models, std::vector<std::string>{"H100"});
}

TEST(ParseJobs, AcceptsAJsonArrayOfJobs) {
  Result<std::vector<model::JobSpec>> jobs = ParseJobs(
      R"([{"kind": "Job", "name": "a", "script": "true"},
          {"kind": "Job", "name": "b", "script": "true", "depends_on": ["a"]}])",
      Options());
  ASSERT_TRUE(jobs) << jobs.error().ToString();
  ASSERT_THAT(*jobs, SizeIs(2));
  EXPECT_EQ((*jobs)[1].depends_on, std::vector{Dep("a")});
}

TEST(ParseJobs, ReportsJsonErrorsWithPositions) {
  EXPECT_THAT(Errors(R"({"kind": "Job", "name": "a", "script": "x", "gpus": 1})"),
              ElementsAre("jobs.yaml:1:45: error: gpus: unknown field 'gpus'; did you mean "
                          "'resources.gpus'?"));
}

TEST(ParseJobs, ResolvesRelativePathsAgainstBaseDir) {
  ParseOptions options = Options();
  options.base_dir = "/srv/specs/";
  model::JobSpec job = ParseOne(
      "kind: Job\nname: a\nscript: x\nworking_dir: .\ncheckpoint_dir: run/../ckpt/./a/\n", options);
  EXPECT_EQ(job.working_dir, "/srv/specs");
  EXPECT_EQ(job.checkpoint_dir, "/srv/specs/ckpt/a");

  job = ParseOne("kind: Job\nname: a\nscript: x\nworking_dir: /abs/dir\n", options);
  EXPECT_EQ(job.working_dir, "/abs/dir");

  job = ParseOne("kind: Job\nname: a\nscript: x\n", options);  // defaults to the spec's dir
  EXPECT_EQ(job.working_dir, "/srv/specs");

  job = ParseOne("kind: Job\nname: a\nscript: x\nworking_dir: rel/dir\n");  // no base_dir
  EXPECT_EQ(job.working_dir, "rel/dir");
}

// The finding of issue 16: `checkpoint_dir: ../../../../../../etc/drover-ck` made the agent
// (root) create /etc/drover-ck. A relative path may not climb out of the base directory.
TEST(ParseJobs, RefusesRelativePathsThatClimbOutOfTheBaseDir) {
  ParseOptions options = Options();
  options.base_dir = "/home/alice/exp";
  EXPECT_THAT(
      Errors("kind: Job\nname: a\nscript: x\ncheckpoint_dir: ../../../../../../etc/drover-ck\n",
             options),
      ElementsAre("jobs.yaml:4:17: error: checkpoint_dir: '../../../../../../etc/drover-ck' "
                  "climbs out of the job's base directory (/home/alice/exp); write a path under "
                  "it, or an absolute path"));
  EXPECT_THAT(Errors("kind: Job\nname: a\nscript: x\nworking_dir: a/../..\n"
                     "outputs: [{name: m, path: ./../m}]\ninputs: [{path: x/../../y}]\n"),
              ElementsAre("jobs.yaml:4:14: error: working_dir: 'a/../..' climbs out of the job's "
                          "base directory; write a path under it, or an absolute path",
                          HasSubstr("jobs.yaml:5:27: error: outputs[0].path: './../m' climbs out"),
                          HasSubstr("jobs.yaml:6:17: error: inputs[0].path: 'x/../../y' climbs")));
  // Staying inside, and absolute paths (the job's Unix account confines those), are fine.
  model::JobSpec job = ParseOne(
      "kind: Job\nname: a\nscript: x\nworking_dir: a/../b\ncheckpoint_dir: /scratch/../ck\n",
      options);
  EXPECT_EQ(job.working_dir, "/home/alice/exp/b");
  EXPECT_EQ(job.checkpoint_dir, "/ck");
}

TEST(ParseJobs, SkipsEmptyDocuments) {
  Result<std::vector<model::JobSpec>> jobs =
      ParseJobs("---\n# nothing\n---\nkind: Job\nname: a\nscript: x\n---\n", Options());
  ASSERT_TRUE(jobs) << jobs.error().ToString();
  EXPECT_THAT(*jobs, SizeIs(1));
}

TEST(ParseJobs, ReportsEveryErrorWithPosition) {
  constexpr std::string_view kText = R"(kind: Job
name: Train
command: python train.py
resources:
  gpu: 1
  memory: 16Gb
  cpu: 4 cores
workers: 0
interruptible: yes
)";
  ParseOptions options = Options();
  Result<std::vector<model::JobSpec>> jobs = ParseJobs(kText, options);
  ASSERT_FALSE(jobs);
  EXPECT_EQ(jobs.error().code, ErrorCode::kInvalidArgument);
  EXPECT_EQ(jobs.error().message, "7 errors in jobs.yaml");
  EXPECT_THAT(
      jobs.error().details,
      ElementsAre(
          "jobs.yaml:2:7: error: name: invalid name 'Train': use 1 to 63 lowercase letters, "
          "digits, '.', '_' or '-', starting with a letter or digit",
          "jobs.yaml:3:10: error: command: expected a list of strings, found 'python train.py'",
          "jobs.yaml:5:3: error: resources.gpu: unknown field 'gpu'; did you mean 'gpus'?",
          "jobs.yaml:6:11: error: resources.memory: unknown memory unit 'Gb' (use Ki, Mi, Gi, Ti "
          "for powers of 1024 or K, M, G, T for powers of 1000)",
          "jobs.yaml:7:8: error: resources.cpu: unknown CPU unit ' cores' (write cores such as 8 "
          "or 0.5, or millicores such as 500m)",
          "jobs.yaml:8:10: error: workers: must be at least 1",
          "jobs.yaml:9:16: error: interruptible: expected true or false, found 'yes'"));
}

TEST(ParseJobs, ReportsErrorsInEveryDocument) {
  EXPECT_THAT(
      Errors("kind: Job\nname: a\nscript: x\nteam: [a]\n---\nkind: Jb\nname: b\n"),
      ElementsAre("jobs.yaml:4:7: error: team: expected a string, found a list",
                  "jobs.yaml:6:1: error: command: one of command (a list: program and "
                  "arguments) or script (run with /bin/sh -c) is required",
                  "jobs.yaml:6:7: error: kind: unsupported kind 'Jb' (did you mean 'Job'?); "
                  "expected Job, Pipeline, CronJob or Service"));
}

TEST(ParseJobs, SuggestsTheIntendedFieldAtEveryLevel) {
  EXPECT_THAT(
      Errors("kind: Job\nname: a\nscript: x\nnmae: b\nplacement:\n  same_nod: true\n"
             "retry: {max_attempt: 2}\nfoo: 1\n"),
      ElementsAre("jobs.yaml:4:1: error: nmae: unknown field 'nmae'; did you mean 'name'?",
                  "jobs.yaml:6:3: error: placement.same_nod: unknown field 'same_nod'; did you "
                  "mean 'same_node'?",
                  "jobs.yaml:7:9: error: retry.max_attempt: unknown field 'max_attempt'; did you "
                  "mean 'max_attempts'?",
                  "jobs.yaml:8:1: error: foo: unknown field 'foo'; expected one of: kind, name, "
                  "owner, team, queue, priority, pipeline, command, script, working_dir, env, "
                  "secret_env, resources, workers, min_workers, placement, depends_on, if, inputs, "
                  "outputs, "
                  "timeout, retry, checkpoint_dir, resume, interruptible, image, hold_infeasible"));
}

TEST(ParseJobs, ReadsTheContainerImage) {
  EXPECT_EQ(
      ParseOne("kind: Job\nname: a\nscript: x\nimage: nvcr.io/nvidia/pytorch:24.05-py3\n").image,
      "nvcr.io/nvidia/pytorch:24.05-py3");
  EXPECT_EQ(ParseOne("kind: Job\nname: a\nscript: x\n").image, "");
  EXPECT_THAT(Errors("kind: Job\nname: a\nscript: x\nimage: my image\n"),
              ElementsAre("jobs.yaml:4:8: error: image: invalid image 'my image': an image "
                          "reference has no spaces, e.g. nvcr.io/nvidia/pytorch:24.05-py3"));
  EXPECT_THAT(Errors("kind: Job\nname: a\nscript: x\nimage: [a]\n"),
              ElementsAre("jobs.yaml:4:8: error: image: expected a string, found a list"));
}

TEST(ParseJobs, ReportsDuplicateFields) {
  EXPECT_THAT(Errors("kind: Job\nname: a\nscript: x\nname: b\n"),
              ElementsAre("jobs.yaml:4:1: error: name: duplicate field 'name'; it is already set "
                          "at line 2"));
}

TEST(ParseJobs, ReportsWrongTypes) {
  EXPECT_THAT(
      Errors("kind: Job\nname: a\ncommand: [run, {x: 1}]\nenv: [A]\nworkers: two\n"
             "placement:\n  same_node: 1\n  node_selector: {pool: [a]}\nretry: 3\n"),
      ElementsAre("jobs.yaml:3:16: error: command[1]: expected a string, found a mapping",
                  "jobs.yaml:4:6: error: env: expected a mapping of names to strings, found a list",
                  "jobs.yaml:5:10: error: workers: expected a whole number, found 'two'",
                  "jobs.yaml:7:14: error: placement.same_node: expected true or false, found '1'",
                  "jobs.yaml:8:25: error: placement.node_selector.pool: expected a string, found "
                  "a list",
                  "jobs.yaml:9:8: error: retry: expected a mapping, found '3'"));
}

TEST(ParseJobs, RejectsNegativeAndFractionalGpus) {
  EXPECT_THAT(Errors("kind: Job\nname: a\nscript: x\nresources: {gpus: -1}\n"),
              ElementsAre("jobs.yaml:4:19: error: resources.gpus: must not be negative"));
  auto fractional = [](std::string_view share) {
    return fmt::format(
        "jobs.yaml:4:19: error: resources.gpus: GPU count must be a whole number; for part of one "
        "GPU write gpu_share: {} (a time-sliced share) or mig: <profile> (a MIG instance, e.g. "
        "mig: 1g.18gb) instead of gpus",
        share);
  };
  EXPECT_THAT(Errors("kind: Job\nname: a\nscript: x\nresources: {gpus: 0.5}\n"),
              ElementsAre(fractional("500m")));
  EXPECT_THAT(Errors("kind: Job\nname: a\nscript: x\nresources: {gpus: 250m}\n"),
              ElementsAre(fractional("250m")));
  EXPECT_THAT(Errors("kind: Job\nname: a\nscript: x\nresources: {gpus: 0.125}\n"),
              ElementsAre(fractional("125m")));
  EXPECT_THAT(Errors("kind: Job\nname: a\nscript: x\nresources: {gpus: 1.5}\n"),
              ElementsAre(fractional("500m")));
  EXPECT_EQ(ParseOne("kind: Job\nname: a\nscript: x\nresources: {gpus: 2.0}\n")
                .requirements.per_worker.gpus,
            2);
}

TEST(ParseJobs, RejectsGpuConstraintsWithoutGpus) {
  EXPECT_THAT(
      Errors("kind: Job\nname: a\nscript: x\nresources:\n  gpu_memory: 40Gi\n  gpu_model: H100\n"),
      ElementsAre("jobs.yaml:5:15: error: resources.gpu_memory: is only valid when the job asks "
                  "for GPUs (this job asks for none; add resources.gpus, resources.gpu_share or "
                  "resources.mig)",
                  "jobs.yaml:6:14: error: resources.gpu_model: is only valid when the job asks for "
                  "GPUs (this job asks for none; add resources.gpus, resources.gpu_share or "
                  "resources.mig)"));
}

TEST(ParseJobs, ReportsMissingRequiredFields) {
  EXPECT_THAT(Errors("owner: bob\n"),
              ElementsAre("jobs.yaml:1:1: error: kind: required field is missing (write kind: Job)",
                          "jobs.yaml:1:1: error: name: required field is missing",
                          "jobs.yaml:1:1: error: command: one of command (a list: program and "
                          "arguments) or script (run with /bin/sh -c) is required"));
  EXPECT_THAT(Errors("kind: Job\nname:\ncommand:\n"),
              ElementsAre("jobs.yaml:2:1: error: name: must not be empty",
                          "jobs.yaml:3:1: error: command: must not be empty"));
}

TEST(ParseJobs, RejectsBothCommandAndScriptAndEmptyCommands) {
  EXPECT_THAT(Errors("kind: Job\nname: a\ncommand: [x]\nscript: y\n"),
              ElementsAre("jobs.yaml:4:9: error: script: command and script are mutually "
                          "exclusive; give only one"));
  EXPECT_THAT(Errors("kind: Job\nname: a\ncommand: []\n"),
              ElementsAre("jobs.yaml:3:10: error: command: must not be empty; give the program "
                          "and its arguments, e.g. [python, train.py]"));
  EXPECT_THAT(Errors("kind: Job\nname: a\ncommand: ['', x]\n"),
              ElementsAre("jobs.yaml:3:11: error: command[0]: the program name must not be empty"));
}

TEST(ParseJobs, RejectsUnknownPriorityClassListingTheValidOnes) {
  EXPECT_THAT(Errors("kind: Job\nname: a\nscript: x\npriority: hgh\n"),
              ElementsAre("jobs.yaml:4:11: error: priority: unknown priority class 'hgh' (did you "
                          "mean 'high'?); valid classes are critical, high, normal, low"));
}

TEST(ParseJobs, RejectsInvalidAndDuplicateNames) {
  EXPECT_THAT(Errors("kind: Job\nname: -a\nscript: x\n---\nkind: Job\nname: b\nscript: x\n---\n"
                     "kind: Job\nname: b\nscript: y\n"),
              ElementsAre("jobs.yaml:2:7: error: name: invalid name '-a': use 1 to 63 lowercase "
                          "letters, digits, '.', '_' or '-', starting with a letter or digit",
                          "jobs.yaml:10:7: error: name: duplicate job name 'b'; the first is at "
                          "line 6"));
  EXPECT_THAT(Errors("kind: Job\nname: " + std::string(64, 'a') + "\nscript: x\n"), SizeIs(1));
  EXPECT_THAT(Errors("kind: Job\nname: " + std::string(63, 'a') + "\nscript: x\n"), IsEmpty());
}

TEST(ParseJobs, ReportsUnknownAndSelfDependencies) {
  EXPECT_THAT(
      Errors("kind: Job\nname: prep\nscript: x\n---\nkind: Job\nname: train\nscript: x\n"
             "depends_on: [prepp, train, zzz]\n"),
      ElementsAre("jobs.yaml:8:14: error: depends_on[0]: unknown job 'prepp' (dependencies name "
                  "jobs in the same file); did you mean 'prep'?",
                  "jobs.yaml:8:21: error: depends_on[1]: a job cannot depend on itself",
                  "jobs.yaml:8:28: error: depends_on[2]: unknown job 'zzz' (dependencies name jobs "
                  "in the same file)"));
}

TEST(ParseJobs, ReportsADependencyCycleWithItsPath) {
  EXPECT_THAT(Errors("kind: Job\nname: a\nscript: x\ndepends_on: [b]\n---\n"
                     "kind: Job\nname: b\nscript: x\ndepends_on: [c]\n---\n"
                     "kind: Job\nname: c\nscript: x\ndepends_on: [a]\n---\n"
                     "kind: Job\nname: d\nscript: x\ndepends_on: [a, c]\n"),
              ElementsAre("jobs.yaml:4:14: error: depends_on[0]: dependency cycle: a -> b -> c -> "
                          "a"));
  EXPECT_THAT(Errors("[{kind: Job, name: x, script: s, depends_on: [y]},\n"
                     " {kind: Job, name: y, script: s, depends_on: [x]}]\n"),
              ElementsAre("jobs.yaml:1:47: error: depends_on[0]: dependency cycle: x -> y -> x"));
}

TEST(ParseJobs, ChecksWorkerCounts) {
  EXPECT_THAT(Errors("kind: Job\nname: a\nscript: x\nworkers: 2\nmin_workers: 3\n"),
              ElementsAre("jobs.yaml:5:14: error: min_workers: must not exceed workers (2), found "
                          "3"));
  EXPECT_THAT(Errors("kind: Job\nname: a\nscript: x\nmin_workers: 0\n"),
              ElementsAre("jobs.yaml:4:14: error: min_workers: must be at least 1"));
  EXPECT_EQ(ParseOne("kind: Job\nname: a\nscript: x\nworkers: 2\nplacement: {same_node: true}\n")
                .requirements.same_node,
            true);
}

TEST(ParseJobs, ChecksTolerations) {
  EXPECT_THAT(
      Errors("kind: Job\nname: a\nscript: x\nplacement:\n  tolerations:\n"
             "    - {key: gpu, effect: NoSchedule}\n"
             "    - {key: gpu, operator: Exists, value: v, effect: NoSchedul}\n"
             "    - {operator: Equals}\n"
             "    - {value: v}\n"),
      ElementsAre("jobs.yaml:7:43: error: placement.tolerations[1].value: must be empty when "
                  "operator is Exists",
                  "jobs.yaml:7:54: error: placement.tolerations[1].effect: unknown effect "
                  "'NoSchedul' (did you mean 'NoSchedule'?); expected NoSchedule, "
                  "PreferNoSchedule or NoExecute, or leave it out to tolerate every effect",
                  "jobs.yaml:8:18: error: placement.tolerations[2].operator: unknown operator "
                  "'Equals'; expected Equal or Exists",
                  "jobs.yaml:9:7: error: placement.tolerations[3].key: is required when operator "
                  "is Equal (use operator: Exists to tolerate every taint)"));
}

TEST(ParseJobs, ChecksDurationsAndRetry) {
  EXPECT_THAT(Errors("kind: Job\nname: a\nscript: x\ntimeout: 0s\nretry:\n  max_attempts: 0\n"
                     "  backoff: soon\n"),
              ElementsAre("jobs.yaml:4:10: error: timeout: must be greater than zero",
                          "jobs.yaml:6:17: error: retry.max_attempts: must be at least 1",
                          "jobs.yaml:7:12: error: retry.backoff: expected a number"));
}

TEST(ParseJobs, ChecksEnvironmentVariableNames) {
  EXPECT_THAT(Errors("kind: Job\nname: a\nscript: x\nenv:\n  1X: a\n  OK_1: b\n"),
              ElementsAre("jobs.yaml:5:3: error: env.1X: invalid environment variable name '1X': "
                          "use letters, digits and '_', not starting with a digit"));
}

TEST(ParseJobs, ReadsSecretEnv) {
  EXPECT_EQ(ParseOne("kind: Job\nname: a\nscript: x\nenv: {A: 1}\n"
                     "secret_env: {WANDB_API_KEY: wandb-key, HF_TOKEN: hf.token_2}\n")
                .secret_env,
            (std::map<std::string, std::string>{{"WANDB_API_KEY", "wandb-key"},
                                                {"HF_TOKEN", "hf.token_2"}}));
  EXPECT_TRUE(ParseOne("kind: Job\nname: a\nscript: x\n").secret_env.empty());
}

TEST(ParseJobs, ChecksSecretEnvNamesAndSecretNames) {
  EXPECT_THAT(
      Errors("kind: Job\nname: a\nscript: x\nsecret_env:\n  1X: a\n  B: ok\n  C: ok\n"
             "  D: ok\n  E: [a]\n"),
      ElementsAre("jobs.yaml:5:3: error: secret_env.1X: invalid environment variable name '1X': "
                  "use letters, digits and '_', not starting with a digit",
                  "jobs.yaml:9:6: error: secret_env.E: expected a string, found a list"));
  EXPECT_THAT(
      Errors("kind: Job\nname: a\nscript: x\nsecret_env:\n  B: ../etc\n  C: .hidden\n"
             "  D: \"\"\n  E: a/b\n  F: " +
             std::string(65, 'k') + "\n  G: ok\n"),
      ElementsAre("jobs.yaml:5:6: error: secret_env.B: invalid secret name '../etc': use 1 to 64 "
                  "letters, digits, '.', '_' or '-', not starting with '.'",
                  HasSubstr("jobs.yaml:6:6: error: secret_env.C: invalid secret name '.hidden'"),
                  HasSubstr("jobs.yaml:7:6: error: secret_env.D: invalid secret name ''"),
                  HasSubstr("jobs.yaml:8:6: error: secret_env.E: invalid secret name 'a/b'"),
                  HasSubstr("jobs.yaml:9:6: error: secret_env.F: invalid secret name 'kkk")));
}

TEST(ParseJobs, RefusesAVariableInBothEnvAndSecretEnv) {
  EXPECT_THAT(Errors("kind: Job\nname: a\nscript: x\nenv: {KEY: plain}\n"
                     "secret_env:\n  OTHER: b\n  KEY: wandb-key\n"),
              ElementsAre("jobs.yaml:7:3: error: secret_env.KEY: KEY is set in both env and "
                          "secret_env; keep one"));
}

TEST(ParseJobs, ReportsYamlSyntaxErrorsAtTheirPosition) {
  EXPECT_THAT(Errors("kind: Job\nname: [a, b\nscript: x\n"),
              ElementsAre(HasSubstr("jobs.yaml:3:")));
  EXPECT_THAT(Errors("kind: Job\nname: a: b\n"),
              ElementsAre("jobs.yaml:2:8: error: invalid YAML: illegal map value"));
  EXPECT_THAT(Errors(std::string(100000, '[')),
              ElementsAre(HasSubstr("the document is nested too deeply")));
}

// yaml-cpp 0.7 loops forever on these (jbeder/yaml-cpp#1040); see yaml_load.h.
TEST(ParseJobs, ReportsAStrayTopLevelCommaInsteadOfHanging) {
  EXPECT_THAT(Errors(","), ElementsAre("jobs.yaml:1:1: error: invalid YAML: unexpected ','"));
  EXPECT_THAT(Errors("[a],"), ElementsAre("jobs.yaml:1:4: error: invalid YAML: unexpected ','"));
  EXPECT_THAT(Errors("kind: Job\nname: a\nscript: x\n---\n,\n"),
              ElementsAre("jobs.yaml:5:1: error: invalid YAML: unexpected ','"));
}

TEST(ParseJobs, RejectsDocumentsThatAreNotMappings) {
  EXPECT_THAT(Errors("just text\n---\n- 1\n- {kind: Job, name: a, script: x}\n"),
              ElementsAre("jobs.yaml:1:1: error: expected a job (a mapping with kind: Job), found "
                          "'just text'",
                          "jobs.yaml:3:3: error: expected a job (a mapping with kind: Job), found "
                          "'1'"));
}

TEST(ParseJobs, RejectsInputWithoutJobs) {
  Result<std::vector<model::JobSpec>> jobs = ParseJobs("# only a comment\n", Options());
  ASSERT_FALSE(jobs);
  EXPECT_EQ(jobs.error().message, "1 error in jobs.yaml");
  EXPECT_THAT(jobs.error().details, ElementsAre(HasSubstr("jobs.yaml:1:1: error: no job found")));
}

TEST(ParseJobs, NeverCrashesOnGarbage) {
  std::mt19937 rng(42);
  const std::string alphabet = "kind:Job name-[]{}\"',\n\t #&*!|>?%@`\\0.5m\x01\xff";
  const std::string valid(kQuickstart);
  for (int round = 0; round < 2000; ++round) {
    std::string text;
    if (round % 2 == 0) {
      std::uniform_int_distribution<std::size_t> len(0, 200);
      std::uniform_int_distribution<std::size_t> pick(0, alphabet.size() - 1);
      for (std::size_t n = len(rng); n > 0; --n) text += alphabet[pick(rng)];
    } else {
      text = testing::Mutate(valid, alphabet, rng);  // flip, insert or delete bytes
    }
    ParseOutput out = ParseJobsWithDiagnostics(text, Options());
    for (const Diagnostic& d : out.diagnostics) {
      EXPECT_GE(d.line, 1);
      EXPECT_GE(d.column, 1);
    }
    EXPECT_TRUE(out.diagnostics.empty() || out.jobs.empty());
  }
}

TEST(ParseJobs, ReadsTimeSlicedGpuShares) {
  model::JobSpec job = ParseOne(
      "kind: Job\nname: a\nscript: x\n"
      "resources: {gpu_share: 250m, gpu_memory: 10Gi, gpu_model: [L4, A100]}\n");
  EXPECT_EQ(job.requirements.gpu_share_millis, 250);
  EXPECT_EQ(job.requirements.gpu_memory_bytes, 10 * kGi);
  EXPECT_EQ(job.requirements.gpu_models, (std::vector<std::string>{"L4", "A100"}));
  EXPECT_EQ(job.requirements.per_worker.gpus, 0);
  EXPECT_TRUE(job.requirements.mig_profile.empty());

  EXPECT_EQ(ParseOne("kind: Job\nname: a\nscript: x\nresources: {gpu_share: 0.5, gpus: 0}\n")
                .requirements.gpu_share_millis,
            500);
  EXPECT_EQ(ParseOne("kind: Job\nname: a\nscript: x\nresources: {gpu_share: 1m}\n")
                .requirements.gpu_share_millis,
            1);
}

TEST(ParseJobs, ChecksGpuShares) {
  EXPECT_THAT(
      Errors("kind: Job\nname: a\nscript: x\nresources:\n  gpu_share: 1\n  gpus: 1\n---\n"
             "kind: Job\nname: b\nscript: x\nresources:\n  gpu_share: 500m\n  gpus: 2\n---\n"
             "kind: Job\nname: c\nscript: x\nresources: {gpu_share: 0.0001}\n---\n"
             "kind: Job\nname: d\nscript: x\nresources: {gpu_share: half}\n---\n"
             "kind: Job\nname: e\nscript: x\nresources: {gpu_share: 0m}\n"),
      ElementsAre(
          "jobs.yaml:5:14: error: resources.gpu_share: must be from 1m to 999m (0.001 to 0.999) "
          "of one GPU, found 1; ask for whole GPUs with gpus",
          "jobs.yaml:12:14: error: resources.gpu_share: cannot be combined with gpus (2): a worker "
          "gets whole GPUs or a part of one GPU, not both; remove gpus or set it to 0",
          "jobs.yaml:18:24: error: resources.gpu_share: must be a whole number of thousandths (at "
          "most 3 decimals)",
          "jobs.yaml:23:24: error: resources.gpu_share: expected a number such as 2, 0.25 or 250m "
          "(thousandths), found 'half'",
          "jobs.yaml:28:24: error: resources.gpu_share: must be from 1m to 999m (0.001 to 0.999) "
          "of one GPU, found 0m; ask for whole GPUs with gpus"));
}

TEST(ParseJobs, ReadsMigProfiles) {
  model::JobSpec job = ParseOne(
      "kind: Job\nname: a\nscript: x\nresources: {mig: 1G.18GB, gpu_model: H200, gpus: 0}\n");
  EXPECT_EQ(job.requirements.mig_profile, "1g.18gb");
  EXPECT_EQ(job.requirements.gpu_models, std::vector<std::string>{"H200"});
  EXPECT_EQ(job.requirements.gpu_share_millis, 0);
  EXPECT_EQ(ParseOne("kind: Job\nname: a\nscript: x\nresources: {mig: 7g.141gb}\n")
                .requirements.mig_profile,
            "7g.141gb");
}

TEST(ParseJobs, ChecksMigProfiles) {
  EXPECT_THAT(
      Errors("kind: Job\nname: a\nscript: x\nresources:\n"
             "  mig: 1g18gb\n---\n"
             "kind: Job\nname: b\nscript: x\nresources:\n"
             "  mig: 8g.80gb\n---\n"
             "kind: Job\nname: c\nscript: x\nresources:\n"
             "  gpu_share: 500m\n  mig: 1g.10gb\n---\n"
             "kind: Job\nname: d\nscript: x\nresources:\n"
             "  gpus: 1\n  mig: 1g.10gb\n---\n"
             "kind: Job\nname: e\nscript: x\nresources:\n"
             "  mig: 1g.10gb\n  gpu_memory: 10Gi\n---\n"
             "kind: Job\nname: f\nscript: x\nresources:\n"
             "  mig: 1G.0GB\n"),
      ElementsAre(
          "jobs.yaml:5:8: error: resources.mig: '1g18gb' is not a MIG profile: write <compute "
          "slices>g.<memory>gb, e.g. 1g.10gb or 3g.40gb (nvidia-smi mig -lgip lists a GPU's "
          "profiles)",
          "jobs.yaml:11:8: error: resources.mig: MIG profile '8g.80gb': the compute slices (8g) "
          "must be 1 to 7 (nvidia-smi mig -lgip lists a GPU's profiles)",
          "jobs.yaml:18:8: error: resources.mig: gpu_share and mig are mutually exclusive: a "
          "worker gets either a time-sliced share or a MIG instance; give only one",
          "jobs.yaml:25:8: error: resources.mig: cannot be combined with gpus (1): a worker gets "
          "whole GPUs or a part of one GPU, not both; remove gpus or set it to 0",
          "jobs.yaml:32:15: error: resources.gpu_memory: is not valid with mig: the MIG profile "
          "sets the instance's memory (1g.18gb has 18 GB)",
          "jobs.yaml:38:8: error: resources.mig: MIG profile '1g.0gb': the memory must not be 0 "
          "(nvidia-smi mig -lgip lists a GPU's profiles)"));
}

TEST(ParseJobs, ReadsTopologyAndLabelPreferences) {
  model::JobSpec job = ParseOne(
      "kind: Job\nname: a\nscript: x\nworkers: 4\nplacement:\n"
      "  topology: {level: rack}\n"
      "  prefer:\n    - {label: \"zone=a\", weight: 10}\n    - label: spot=\n");
  EXPECT_EQ(job.requirements.topology_level, "rack");
  EXPECT_TRUE(job.preferences.topology_level.empty());
  EXPECT_EQ(job.preferences.node_labels,
            (std::vector<model::LabelPreference>{{"zone", "a", 10}, {"spot", "", 1}}));

  job = ParseOne(
      "kind: Job\nname: a\nscript: x\nplacement: {topology: {level: nvlink-domain, mode: "
      "preferred}}\n");
  EXPECT_TRUE(job.requirements.topology_level.empty());
  EXPECT_EQ(job.preferences.topology_level, "nvlink-domain");
}

TEST(ParseJobs, ChecksTopologyAndLabelPreferences) {
  EXPECT_THAT(
      Errors("kind: Job\nname: a\nscript: x\nplacement:\n"
             "  topology: {mode: requird}\n"
             "  prefer:\n"
             "    - {label: zone, weight: 0}\n"
             "    - {label: a=b, weight: 101, wieght: 2}\n"
             "    - {weight: 5}\n"
             "    - zone=a\n"),
      ElementsAre(
          "jobs.yaml:5:13: error: placement.topology.level: required field is missing (the node "
          "label that names a domain, e.g. level: rack)",
          "jobs.yaml:5:20: error: placement.topology.mode: unknown mode 'requird' (did you mean "
          "'required'?); expected required (every worker in one domain, or wait) or preferred "
          "(one domain when one has room, else anywhere)",
          "jobs.yaml:7:15: error: placement.prefer[0].label: invalid label 'zone': write "
          "key=value, e.g. zone=a",
          "jobs.yaml:7:29: error: placement.prefer[0].weight: must be at least 1",
          "jobs.yaml:8:28: error: placement.prefer[1].weight: must be at most 100",
          "jobs.yaml:8:33: error: placement.prefer[1].wieght: unknown field 'wieght'; did you "
          "mean 'weight'?",
          "jobs.yaml:9:7: error: placement.prefer[2].label: required field is missing (write "
          "label: key=value)",
          "jobs.yaml:10:7: error: placement.prefer[3]: expected a mapping, found 'zone=a'"));
  EXPECT_THAT(Errors("kind: Job\nname: a\nscript: x\nplacement:\n  topology: {level: rack=3}\n"
                     "topology: {level: rack}\n"),
              ElementsAre("jobs.yaml:5:21: error: placement.topology.level: invalid label name "
                          "'rack=3': write the label's name only (level: rack), without a value",
                          "jobs.yaml:6:1: error: topology: unknown field 'topology'; did you mean "
                          "'placement.topology'?"));
}

TEST(ParseJobs, ReadsAndChecksPipelines) {
  EXPECT_EQ(ParseOne("kind: Job\nname: a\nscript: x\npipeline: nightly-eval\n").pipeline,
            "nightly-eval");
  EXPECT_EQ(ParseOne("kind: Job\nname: a\nscript: x\n").pipeline, "");
  EXPECT_THAT(Errors("kind: Job\nname: a\nscript: x\npipeline: Nightly\n"),
              ElementsAre("jobs.yaml:4:11: error: pipeline: invalid pipeline name 'Nightly': use "
                          "1 to 63 lowercase letters, digits, '.', '_' or '-', starting with a "
                          "letter or digit"));
}

TEST(Diagnostic, FormatsWithAndWithoutField) {
  EXPECT_EQ((Diagnostic{"f.yaml", 3, 5, "resources.gpus", "bad"}).ToString(),
            "f.yaml:3:5: error: resources.gpus: bad");
  EXPECT_EQ((Diagnostic{"f.yaml", 1, 1, "", "bad"}).ToString(), "f.yaml:1:1: error: bad");
}

}  // namespace
}  // namespace drover::spec
