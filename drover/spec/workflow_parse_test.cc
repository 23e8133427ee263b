// kind: Pipeline, kind: CronJob and the workflow fields of jobs (docs/workflows.md).

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <fstream>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "drover/spec/parse.h"
#include "drover/spec/spec_test_util.h"

namespace drover::spec {
namespace {

using model::DependencyCondition;
using ::testing::ElementsAre;
using ::testing::IsEmpty;
using ::testing::SizeIs;

ParseOptions Options() {
  ParseOptions options;
  options.file_name = "p.yaml";
  return options;
}

std::vector<std::string> Errors(std::string_view text) {
  ParseOutput out = ParseDocumentsWithDiagnostics(text, Options());
  std::vector<std::string> lines;
  for (const Diagnostic& d : out.diagnostics) lines.push_back(d.ToString());
  if (!lines.empty()) {
    EXPECT_THAT(out.jobs, IsEmpty());
    EXPECT_THAT(out.crons, IsEmpty());
  }
  return lines;
}

std::vector<model::JobSpec> Jobs(std::string_view text, const ParseOptions& options = Options()) {
  Result<std::vector<model::JobSpec>> jobs = ParseJobs(text, options);
  if (!jobs) {
    ADD_FAILURE() << jobs.error().ToString();
    return {};
  }
  return *jobs;
}

model::Dependency Dep(std::string name, DependencyCondition c = DependencyCondition::kSucceeded) {
  return {std::move(name), c};
}

// The example of docs/workflows.md.
constexpr std::string_view kTune = R"(kind: Pipeline
name: tune
queue: team-a
owner: alice
admission: whole
stages:
  - name: preprocess
    script: python prep.py --out "$DROVER_OUTPUT_DATASET"
    resources: {cpu: 2, memory: 4Gi}
    inputs:
      - path: data/raw.csv
    outputs:
      - {name: dataset, path: out/dataset}
  - name: train
    depends_on: [preprocess]
    inputs:
      - from: preprocess.dataset
    matrix:
      grid: {lr: [0.1, 0.01, 0.001], batch: [32, 64]}
    concurrency: 2
    objective: {metric: accuracy, goal: maximize}
    early_stopping: {stop_at: 0.99}
    command: [python, train.py, --lr, "${{ matrix.lr }}", --data, "${{ stages.preprocess.outputs.dataset }}"]
    resources: {gpus: 1}
    outputs:
      - {name: model, path: "out/model-${{ trial }}"}
      - {name: accuracy}
  - name: evaluate
    depends_on: [{train: succeeded}]
    queue: eval
    if: "${{ stages.train.outputs.accuracy }} >= 0.5"
    command: [python, eval.py, "${{ stages.train.outputs.model }}"]
)";

TEST(ParsePipeline, StagesInheritThePipelinesImage) {
  const std::vector<model::JobSpec> jobs = Jobs(
      "kind: Pipeline\nname: p\nimage: python:3.12\nstages:\n  - name: a\n    script: x\n"
      "  - name: b\n    image: eval:1\n    script: y\n",
      Options());
  ASSERT_THAT(jobs, SizeIs(2));
  EXPECT_EQ(jobs[0].image, "python:3.12");
  EXPECT_EQ(jobs[1].image, "eval:1");  // a stage overrides the pipeline's default
}

TEST(ParsePipeline, ExpandsStagesAndTrials) {
  ParseOptions options = Options();
  options.base_dir = "/home/alice/tune";
  const std::vector<model::JobSpec> jobs = Jobs(kTune, options);
  ASSERT_THAT(jobs, SizeIs(8));
  std::vector<std::string> names;
  for (const model::JobSpec& job : jobs) names.push_back(job.name);
  EXPECT_THAT(names, ElementsAre("preprocess", "train.1", "train.2", "train.3", "train.4",
                                 "train.5", "train.6", "evaluate"));
  for (const model::JobSpec& job : jobs) {
    EXPECT_EQ(job.pipeline, "tune");
    EXPECT_EQ(job.owner, "alice");
    EXPECT_EQ(job.admission, model::PipelineAdmission::kWhole);
  }

  const model::JobSpec& pre = jobs[0];
  EXPECT_EQ(pre.stage, "preprocess");
  EXPECT_EQ(pre.queue, "team-a");
  EXPECT_EQ(pre.trial, model::TrialSpec{});
  EXPECT_EQ(pre.inputs,
            (std::vector<model::InputSpec>{
                {.path = "/home/alice/tune/data/raw.csv", .from_stage = "", .from_output = ""}}));
  EXPECT_EQ(pre.outputs, (std::vector<model::OutputSpec>{
                             {.name = "dataset", .path = "/home/alice/tune/out/dataset"}}));

  // Grid order: parameters by name (batch, lr), the last fastest.
  const model::JobSpec& t2 = jobs[2];
  EXPECT_EQ(t2.stage, "train");
  EXPECT_EQ(t2.depends_on, std::vector{Dep("preprocess")});
  EXPECT_EQ(t2.trial.index, 2);
  EXPECT_EQ(t2.trial.count, 6);
  EXPECT_EQ(t2.trial.params, (std::map<std::string, std::string>{{"batch", "32"}, {"lr", "0.01"}}));
  EXPECT_EQ(t2.trial.concurrency, 2);
  EXPECT_EQ(t2.trial.objective, "accuracy");
  EXPECT_TRUE(t2.trial.maximize);
  EXPECT_EQ(t2.trial.stop_at, 0.99);
  EXPECT_THAT(t2.command, ElementsAre("python", "train.py", "--lr", "0.01", "--data",
                                      "${{ stages.preprocess.outputs.dataset }}"));
  EXPECT_EQ(t2.outputs[0].path, "/home/alice/tune/out/model-2");
  EXPECT_EQ(t2.outputs[1], (model::OutputSpec{.name = "accuracy", .path = ""}));
  EXPECT_EQ(t2.inputs[0].from_stage, "preprocess");
  EXPECT_EQ(t2.inputs[0].from_output, "dataset");
  EXPECT_EQ(jobs[4].trial.params,
            (std::map<std::string, std::string>{{"batch", "64"}, {"lr", "0.1"}}));

  const model::JobSpec& eval = jobs[7];
  EXPECT_EQ(eval.queue, "eval");  // a stage overrides the pipeline's defaults
  EXPECT_EQ(eval.depends_on, std::vector{Dep("train")});
  EXPECT_EQ(eval.run_if, "${{ stages.train.outputs.accuracy }} >= 0.5");
}

TEST(ParsePipeline, InputsImplyADependency) {
  const std::vector<model::JobSpec> jobs = Jobs(R"(kind: Pipeline
name: p
stages:
  - {name: a, script: x, outputs: [{name: data, path: /d}]}
  - {name: b, script: y, inputs: [{from: a.data}], depends_on: [{c: done}]}
  - {name: c, script: z}
)");
  ASSERT_THAT(jobs, SizeIs(3));
  EXPECT_EQ(jobs[1].depends_on, (std::vector{Dep("c", DependencyCondition::kDone), Dep("a")}));
}

TEST(ParsePipeline, ExpandsListAndRandomMatrices) {
  std::vector<model::JobSpec> jobs = Jobs(R"(kind: Pipeline
name: p
stages:
  - name: s
    matrix: {list: [{model: b, size: 1}, {model: a, size: 2}]}
    env: {MODEL: "${{ matrix.model }}", TRIAL: "${{ trial }}"}
    script: run $MODEL
    checkpoint_dir: /ckpt/${{ matrix.model }}
)");
  ASSERT_THAT(jobs, SizeIs(2));
  EXPECT_EQ(jobs[0].env, (std::map<std::string, std::string>{{"MODEL", "b"}, {"TRIAL", "1"}}));
  EXPECT_EQ(jobs[1].checkpoint_dir, "/ckpt/a");

  constexpr std::string_view kRandom = R"(kind: Pipeline
name: p
stages:
  - name: s
    matrix:
      random:
        count: 3
        seed: 42
        params:
          lr: {log_uniform: [1e-5, 1e-1]}
          opt: {choice: [adam, sgd]}
    command: [train, "${{ matrix.lr }}", "${{ matrix.opt }}"]
)";
  jobs = Jobs(kRandom);
  ASSERT_THAT(jobs, SizeIs(3));
  EXPECT_EQ(jobs, Jobs(kRandom));  // deterministic
  for (const model::JobSpec& job : jobs) {
    EXPECT_EQ(job.command[1], job.trial.params.at("lr"));
    const double lr = std::stod(job.command[1]);
    EXPECT_GE(lr, 1e-5);
    EXPECT_LE(lr, 1e-1);
  }
}

// Each trial's path, with its parameters in place, stays in the base directory too.
TEST(ParsePipeline, RefusesATrialPathThatClimbsOutOfTheBaseDir) {
  EXPECT_THAT(Errors(R"(kind: Pipeline
name: p
stages:
  - name: s
    matrix: {list: [{d: a}, {d: ../..}]}
    script: x
    checkpoint_dir: ck/${{ matrix.d }}/x
)"),
              ElementsAre("p.yaml:7:21: error: stages[0].checkpoint_dir: trial 2: "
                          "'ck/../../x' climbs out of the job's base directory; write a path "
                          "under it, or an absolute path"));
}

TEST(ParsePipeline, ReportsStageErrorsWithTheirPath) {
  EXPECT_THAT(
      Errors(R"(kind: Pipeline
name: p
stages:
  - name: a
    script: x
    matrix: {grid: {lr: []}}
  - name: b.c
    script: y
    concurency: 2
  - name: d
    command: [run, "${{ matrix.lr }}"]
    concurrency: 2
    depends_on: [{a: finished}, z]
)"),
      ElementsAre(
          "p.yaml:6:25: error: stages[0].matrix.grid.lr: must not be empty; give the "
          "parameter's values as a list",
          "p.yaml:7:11: error: stages[1].name: invalid stage name 'b.c': a stage name must not "
          "contain '.' (the trials of a sweep are named STAGE.N)",
          "p.yaml:9:5: error: stages[1].concurency: unknown field 'concurency'; did you mean "
          "'concurrency'?",
          "p.yaml:11:20: error: stages[2].command[1]: ${{ matrix.lr }} needs a matrix: only the "
          "stages of a pipeline that have a matrix have parameters and trials",
          "p.yaml:12:5: error: stages[2].concurrency: is only valid with matrix (it bounds the "
          "trials released at once)",
          "p.yaml:13:22: error: stages[2].depends_on[0].a: unknown condition 'finished'; expected "
          "succeeded, failed, done or skipped",
          "p.yaml:13:33: error: stages[2].depends_on[1]: unknown stage 'z' (dependencies name "
          "stages of the same pipeline)"));
}

TEST(ParsePipeline, ChecksMatrices) {
  EXPECT_THAT(
      Errors(R"(kind: Pipeline
name: p
stages:
  - name: a
    script: "${{ matrix.lrr }}"
    matrix:
      grid: {lr: [1, 2]}
  - name: a2
    script: x
    matrix: {grid: {2x: [3]}}
  - name: b
    script: x
    matrix: {grid: {a: [1]}, list: [{a: 1}]}
  - name: c
    script: x
    matrix:
      list: [{a: 1, b: 2}, {a: 3}]
  - name: d
    script: x
    matrix:
      random:
        count: 2
        params: {x: {uniform: [2, 1]}, y: {log_uniform: [0, 1]}, z: {normal: [0, 1]}}
  - name: e
    script: x
    matrix:
      grid: {a: [1, 2, 3, 4, 5, 6, 7, 8, 9, 10], b: [1, 2, 3, 4, 5, 6, 7, 8, 9, 10], c: [1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11]}
)"),
      ElementsAre(
          "p.yaml:5:13: error: stages[0].script: unknown matrix parameter 'lrr' in ${{ matrix.lrr "
          "}}; did you mean 'lr'?",
          "p.yaml:10:21: error: stages[1].matrix.grid.2x: invalid parameter name '2x': use "
          "letters, digits and '_', not starting with a digit",
          "p.yaml:13:13: error: stages[2].matrix: give exactly one of grid (every combination), "
          "list (the parameter sets) or random (sets drawn at random)",
          "p.yaml:17:28: error: stages[3].matrix.list[1]: every set names the same parameters as "
          "the first (a, b), found a",
          "p.yaml:23:31: error: stages[4].matrix.random.params.x.uniform: lo must be less than hi, "
          "found [2, 1]",
          "p.yaml:23:57: error: stages[4].matrix.random.params.y.log_uniform: lo must be greater "
          "than 0 for log_uniform",
          "p.yaml:23:70: error: stages[4].matrix.random.params.z.normal: unknown field 'normal'; "
          "expected one of: uniform, log_uniform, choice",
          "p.yaml:27:7: error: stages[5].matrix: expands to 1100 trials; a sweep has at most "
          "1000"));
}

TEST(ParsePipeline, KeepsTrialOutputPathsApart) {
  EXPECT_THAT(
      Errors("kind: Pipeline\nname: p\nstages:\n  - name: s\n    script: x\n"
             "    matrix: {list: [{a: 1}, {a: 2}]}\n"
             "    outputs: [{name: m, path: /out/m}, {name: n, path: \"/out/${{ matrix.a }}\"}]\n"),
      ElementsAre("p.yaml:7:31: error: stages[0].outputs[0].path: every trial of the sweep "
                  "would publish to this one path; put ${{ trial }} (or a matrix "
                  "parameter) in it"));
}

TEST(ParsePipeline, KeepsTrialNamesValid) {
  const std::string name(61, 's');
  EXPECT_THAT(Errors("kind: Pipeline\nname: p\nstages:\n  - {name: " + name +
                     ", script: x, matrix: {list: [{a: 1}, {a: 2}]}}\n"),
              IsEmpty());
  EXPECT_THAT(Errors("kind: Pipeline\nname: p\nstages:\n  - {name: " + name +
                     ", script: x, matrix: {grid: {a: [0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10]}}}\n"),
              ElementsAre("p.yaml:4:12: error: stages[0].name: too long for a sweep: its trials "
                          "are named " +
                          name + ".1 to " + name + ".11, at most 63 characters"));
}

TEST(ParsePipeline, ChecksOutputReferences) {
  EXPECT_THAT(
      Errors(R"(kind: Pipeline
name: p
stages:
  - name: prep
    script: x
    outputs: [{name: data, path: /d}, {name: Data}, {name: data}]
  - name: sweep
    script: x
    matrix: {grid: {a: [1, 2]}}
    outputs: [{name: score}]
  - name: train
    depends_on: [prep, sweep]
    command: [t, "${{ stages.prep.outputs.dta }}", "${{ stages.sweep.outputs.score }}"]
    env: {X: "${{ stages.evaluate.outputs.x }}", Y: "${{ stages.prpe.outputs.data }}"}
    if: "${{ stages.train.outputs.x }} > 1"
    outputs: [{name: m, path: "out/${{ stages.prep.outputs.data }}"}]
  - name: evaluate
    inputs: [{from: prep.data}, {from: prep}]
    script: x
    outputs: [{name: x}]
)"),
      ElementsAre(
          "p.yaml:6:46: error: stages[0].outputs[1].name: invalid output name 'Data': use 1 to 63 "
          "lowercase letters, digits and '_', starting with a letter",
          "p.yaml:6:60: error: stages[0].outputs[2].name: duplicate output 'data'; the first is "
          "at line 6",
          "p.yaml:13:18: error: stages[2].command[1]: stage 'prep' has no output 'dta'; did you "
          "mean 'data'?",
          "p.yaml:13:52: error: stages[2].command[2]: stage 'sweep' is a sweep without an "
          "objective: add one to choose the trial whose outputs stand for the sweep",
          "p.yaml:14:14: error: stages[2].env.X: stage 'evaluate' is not upstream of this stage; "
          "add it to depends_on",
          "p.yaml:14:53: error: stages[2].env.Y: unknown stage 'prpe'; did you mean 'prep'?",
          "p.yaml:15:9: error: stages[2].if: a stage cannot use its own outputs",
          "p.yaml:16:31: error: stages[2].outputs[0].path: ${{ stages.prep.outputs.data }} is "
          "not available here: upstream outputs are replaced only in command, script, env and if",
          "p.yaml:18:40: error: stages[3].inputs[1].from: expected STAGE.OUTPUT, e.g. "
          "preprocess.dataset, found 'prep'"));
}

TEST(ParsePipeline, ReportsStageCyclesAndConditionErrors) {
  EXPECT_THAT(Errors(R"(kind: Pipeline
name: p
stages:
  - {name: a, script: x, depends_on: [c], outputs: [{name: o}]}
  - {name: b, script: x, inputs: [{from: a.o}], if: "${{ stages.a.outputs.o }} = 1"}
  - {name: c, script: x, depends_on: [b]}
  - {name: d, script: x, depends_on: [{a: failed}], inputs: [{from: a.o}]}
)"),
              ElementsAre("p.yaml:4:39: error: stages[0].depends_on[0]: dependency cycle: a -> c "
                          "-> b -> a",
                          "p.yaml:5:53: error: stages[1].if: '=' is not an operator; write == to "
                          "compare",
                          "p.yaml:7:69: error: stages[3].inputs[0].from: needs 'a' to succeed "
                          "(only then is its output published), but depends_on waits for a: "
                          "failed"));
}

TEST(ParsePipeline, ChecksPipelineFields) {
  EXPECT_THAT(Errors("kind: Pipeline\nname: P\nadmission: all\nstages: []\nqueue: ''\n"),
              ElementsAre("p.yaml:2:7: error: name: invalid pipeline name 'P': use 1 to 63 "
                          "lowercase letters, digits, '.', '_' or '-', starting with a letter or "
                          "digit",
                          "p.yaml:3:12: error: admission: unknown admission 'all'; expected "
                          "stagewise, whole",
                          "p.yaml:4:9: error: stages: must not be empty",
                          "p.yaml:5:8: error: queue: must not be empty"));
  EXPECT_THAT(
      Errors("kind: Pipeline\nname: p\nstages:\n  - {name: a, script: x, objective: "
             "{metric: m}, kind: Job}\n"),
      ElementsAre(
          "p.yaml:4:26: error: stages[0].objective: is only valid with matrix (it "
          "picks the best trial)",
          "p.yaml:4:50: error: stages[0].kind: unknown field 'kind'; expected one "
          "of: name, owner, team, queue, priority, command, script, working_dir, "
          "env, secret_env, resources, workers, min_workers, placement, depends_on, if, "
          "inputs, outputs, timeout, retry, checkpoint_dir, resume, "
          "interruptible, image, hold_infeasible, matrix, concurrency, objective, early_stopping"));
  EXPECT_THAT(
      Errors("kind: Pipeline\nname: p\nstages:\n  - name: a\n    script: x\n"
             "    matrix: {grid: {a: [1]}}\n    outputs: [{name: acc, path: \"/a${{ trial }}\"}]\n"
             "    objective: {metric: acc, goal: max}\n"
             "  - {name: b, script: x, matrix: {grid: {a: [1]}}, objective: {metric: "
             "acu}, outputs: [{name: acc}]}\n"),
      ElementsAre("p.yaml:8:25: error: stages[0].objective.metric: output 'acc' is "
                  "published at a path; the metric must be a value output (declare it "
                  "as {name: acc}, without path)",
                  "p.yaml:8:36: error: stages[0].objective.goal: unknown goal 'max'; "
                  "expected maximize or minimize",
                  "p.yaml:9:72: error: stages[1].objective.metric: unknown output 'acu' "
                  "(the metric is a value output of this stage); did you mean 'acc'?"));
}

TEST(ParseJobFields, ReadsConditionsInputsOutputsRetryOnAndResume) {
  ParseOptions options = Options();
  options.base_dir = "/w";
  const std::vector<model::JobSpec> jobs = Jobs(R"(kind: Job
name: prep
script: x
outputs: [{name: rows}, {name: data, path: out/data}]
---
kind: Job
name: train
script: y
depends_on: [prep, {cleanup: skipped}]
if: "${{ stages.prep.outputs.rows }} > 0"
inputs: [{path: raw/../raw/_SUCCESS}]
retry: {max_attempts: 3, on: [node_lost, preempted]}
checkpoint_dir: ckpt
resume: true
---
kind: Job
name: cleanup
script: z
)",
                                                options);
  ASSERT_THAT(jobs, SizeIs(3));
  EXPECT_EQ(jobs[0].outputs[1].path, "/w/out/data");
  const model::JobSpec& train = jobs[1];
  EXPECT_EQ(train.depends_on,
            (std::vector{Dep("prep"), Dep("cleanup", DependencyCondition::kSkipped)}));
  EXPECT_EQ(train.run_if, "${{ stages.prep.outputs.rows }} > 0");
  EXPECT_EQ(train.inputs[0].path, "/w/raw/_SUCCESS");
  EXPECT_EQ(train.retry.on,
            (std::vector{model::FailureKind::kNodeLost, model::FailureKind::kPreempted}));
  EXPECT_TRUE(train.resume);
  EXPECT_EQ(train.stage, "");
  EXPECT_EQ(train.retry.on.size(), 2u);
  EXPECT_EQ(jobs[2].retry.on, model::RetryPolicy{}.on);
}

TEST(ParseJobFields, ReportsTheirErrors) {
  EXPECT_THAT(Errors(R"(kind: Job
name: a
script: "${{ trial }}"
resume: true
retry: {on: [exit, oom, exit]}
depends_on: [[b]]
inputs: [{path: /x, from: b.c}, 3]
outputs: [{path: /y}]
)"),
              ElementsAre("p.yaml:3:9: error: script: ${{ trial }} needs a matrix: only the "
                          "stages of a pipeline that have a matrix have parameters and trials",
                          "p.yaml:4:9: error: resume: requires checkpoint_dir (the directory each "
                          "attempt checkpoints to and the next resumes from)",
                          "p.yaml:5:20: error: retry.on[1]: unknown failure kind 'oom'; expected "
                          "exit, node_lost, preempted or timeout",
                          "p.yaml:5:25: error: retry.on[2]: duplicate failure kind 'exit'",
                          "p.yaml:6:14: error: depends_on[0]: expected a name or a one-key "
                          "mapping {name: condition}, found a list",
                          "p.yaml:7:10: error: inputs[0]: give exactly one of path (a file or "
                          "directory that must exist) or from (an upstream output, "
                          "STAGE.OUTPUT)",
                          "p.yaml:7:33: error: inputs[1]: expected a mapping, found '3'",
                          "p.yaml:8:11: error: outputs[0].name: required field is missing"));
}

TEST(ParseDocuments, ReadsCronJobs) {
  Result<Documents> docs = ParseDocuments(R"(kind: CronJob
name: nightly
schedule: "30 2 * * *"
time_zone: Europe/Berlin
concurrency_policy: forbid
starting_deadline: 1h
history: {succeeded: 5, failed: 0}
job:
  command: [python, report.py]
---
kind: CronJob
name: weekly
schedule: "@weekly"
suspend: true
pipeline:
  queue: batch
  stages:
    - {name: a, script: x}
    - {name: b, script: y, depends_on: [a]}
)",
                                          Options());
  ASSERT_TRUE(docs) << docs.error().ToString();
  EXPECT_THAT(docs->jobs, IsEmpty());
  ASSERT_THAT(docs->crons, SizeIs(2));
  const model::CronSpec& nightly = docs->crons[0];
  EXPECT_EQ(nightly.name, "nightly");
  EXPECT_EQ(nightly.schedule, "30 2 * * *");
  EXPECT_EQ(nightly.time_zone, "Europe/Berlin");
  EXPECT_EQ(nightly.concurrency_policy, model::ConcurrencyPolicy::kForbid);
  EXPECT_EQ(nightly.starting_deadline, 3'600'000);
  EXPECT_EQ(nightly.successful_history_limit, 5);
  EXPECT_EQ(nightly.failed_history_limit, 0);
  EXPECT_FALSE(nightly.suspend);
  ASSERT_THAT(nightly.jobs, SizeIs(1));
  EXPECT_EQ(nightly.jobs[0].name, "nightly");  // the cron job's name
  EXPECT_THAT(nightly.jobs[0].command, ElementsAre("python", "report.py"));

  const model::CronSpec& weekly = docs->crons[1];
  EXPECT_EQ(weekly.time_zone, "UTC");
  EXPECT_EQ(weekly.starting_deadline, std::nullopt);
  EXPECT_TRUE(weekly.suspend);
  ASSERT_THAT(weekly.jobs, SizeIs(2));
  EXPECT_EQ(weekly.jobs[1].pipeline, "weekly");
  EXPECT_EQ(weekly.jobs[1].queue, "batch");
  EXPECT_EQ(weekly.jobs[1].depends_on, std::vector{Dep("a")});
}

TEST(ParseDocuments, ReportsCronJobErrors) {
  EXPECT_THAT(
      Errors(R"(kind: CronJob
name: nightly
schedule: "61 * * * *"
concurrency_policy: forbd
starting_deadline: 0s
history: {succeeded: -1}
job: {name: x, script: y, kind: Job}
pipeline: {stages: []}
---
kind: CronJob
name: nightly
schedule: "@daily"
)"),
      ElementsAre("p.yaml:3:11: error: schedule: minute: \"61\" is out of range 0-59",
                  "p.yaml:4:21: error: concurrency_policy: unknown concurrency policy "
                  "'forbd' (did you mean 'forbid'?); expected allow, forbid, replace",
                  "p.yaml:5:20: error: starting_deadline: must be greater than zero",
                  "p.yaml:6:22: error: history.succeeded: must not be negative",
                  "p.yaml:7:27: error: job.kind: unknown field 'kind'; expected one of: "
                  "name, owner, team, queue, priority, pipeline, command, script, "
                  "working_dir, env, secret_env, resources, workers, min_workers, placement, "
                  "depends_on, if, inputs, outputs, timeout, retry, checkpoint_dir, "
                  "resume, interruptible, image, hold_infeasible",
                  "p.yaml:8:1: error: pipeline: job and pipeline are mutually exclusive; "
                  "give only one",
                  "p.yaml:8:20: error: pipeline.stages: must not be empty",
                  "p.yaml:10:1: error: job: one of job (the job each run submits) or "
                  "pipeline (the pipeline each run submits) is required",
                  "p.yaml:11:7: error: name: duplicate cron job name 'nightly'; the first "
                  "is at line 2"));
}

// The caller's tz database decides whether time_zone names a zone, at the value's position.
TEST(ParseDocuments, ACronJobsTimeZoneIsCheckedByTheCallersDatabase) {
  const std::string text =
      "kind: CronJob\nname: n\nschedule: \"@daily\"\ntime_zone: Mars/Base\njob: {script: x}\n";
  EXPECT_THAT(Errors(text), IsEmpty());  // no database given: the server decides
  ParseOptions options = Options();
  options.known_time_zone = [](std::string_view name) { return name == "Europe/Berlin"; };
  ParseOutput out = ParseDocumentsWithDiagnostics(text, options);
  ASSERT_THAT(out.diagnostics, SizeIs(1));
  EXPECT_EQ(out.diagnostics[0].ToString(),
            "p.yaml:4:12: error: time_zone: unknown time zone \"Mars/Base\" (an IANA name such as "
            "Europe/Berlin or UTC)");
  EXPECT_THAT(ParseDocumentsWithDiagnostics(
                  "kind: CronJob\nname: n\nschedule: \"@daily\"\ntime_zone: Europe/Berlin\n"
                  "job: {script: x}\n",
                  options)
                  .diagnostics,
              IsEmpty());
}

TEST(ParseDocuments, KeepsKindsApart) {
  EXPECT_THAT(Errors("kind: Job\nname: a\nscript: x\n---\nkind: Pipeline\nname: p\nstages: []\n"
                     "---\nkind: CronJob\nname: c\n"),
              ElementsAre("p.yaml:5:7: error: kind: a file holds jobs, one pipeline, cron jobs or "
                          "services, "
                          "not a mix: this Pipeline follows a Job at line 1",
                          "p.yaml:9:7: error: kind: a file holds jobs, one pipeline, cron jobs or "
                          "services, "
                          "not a mix: this CronJob follows a Job at line 1"));
  EXPECT_THAT(Errors("kind: Pipeline\nname: p\nstages: [{name: a, script: x}]\n---\n"
                     "kind: Pipeline\nname: q\nstages: [{name: a, script: x}]\n"),
              ElementsAre("p.yaml:5:7: error: kind: a file holds one pipeline; the first is at "
                          "line 1"));
  // ParseJobs submits jobs; a cron job is registered instead.
  Result<std::vector<model::JobSpec>> jobs =
      ParseJobs("kind: CronJob\nname: c\nschedule: '@daily'\njob: {script: x}\n", Options());
  ASSERT_FALSE(jobs);
  EXPECT_THAT(jobs.error().details,
              ElementsAre("p.yaml:1:7: error: kind: a CronJob is not accepted here: cron jobs "
                          "are registered with the server as schedules, not submitted as jobs"));
}

// Mutated pipelines and cron jobs never crash the parser, nor yield values with diagnostics. No
// diagnostic may be "internal error" (an exception caught by the last line of defence).
TEST(ParseDocuments, NeverCrashesOnMutatedWorkflows) {
  std::mt19937 rng(7);
  const std::string alphabet = "kind:Pipelinestagesmatrix${{ }}.-[]{}\"',\n #&*0.5";
  const std::string cron =
      "kind: CronJob\nname: c\nschedule: '@daily'\npipeline:\n  stages: [{name: a, script: "
      "x, matrix: {random: {count: 2, params: {p: {uniform: [0, 1]}}}}}]\n";
  for (int round = 0; round < 1000; ++round) {
    const std::string text =
        testing::Mutate(round % 2 == 0 ? std::string(kTune) : cron, alphabet, rng);
    ParseOutput out = ParseDocumentsWithDiagnostics(text, Options());
    for (const Diagnostic& d : out.diagnostics) {
      EXPECT_GE(d.line, 1);
      EXPECT_GE(d.column, 1);
      EXPECT_EQ(d.message.find("internal error"), std::string::npos) << text << "\n" << d.message;
    }
    EXPECT_TRUE(out.diagnostics.empty() || (out.jobs.empty() && out.crons.empty()));
  }
}

// depends_on `job:ID`: a job of an earlier submission, with the conditions of a job of the file.
TEST(ParseJobs, ReadsDependenciesOnEarlierSubmissions) {
  const std::vector<model::JobSpec> jobs = Jobs(
      "kind: Job\nname: a\nscript: x\n---\nkind: Job\nname: b\nscript: x\n"
      "depends_on: [a, job:12, {job:13: failed}, {job:14: done}]\n");
  ASSERT_THAT(jobs, SizeIs(2));
  EXPECT_THAT(jobs[1].depends_on,
              ElementsAre(Dep("a"), Dep("job:12"), Dep("job:13", DependencyCondition::kFailed),
                          Dep("job:14", DependencyCondition::kDone)));
  // A stage of a pipeline may name one too.
  EXPECT_THAT(Jobs("kind: Pipeline\nname: p\nstages:\n  - {name: s, script: x, depends_on: "
                   "[job:7]}\n")[0]
                  .depends_on,
              ElementsAre(Dep("job:7")));
}

TEST(ParseJobs, ReportsMalformedJobIdsAndRepeatedOnes) {
  EXPECT_THAT(Errors("kind: Job\nname: b\nscript: x\n"
                     "depends_on: [job:0, job:x1, job:007, job:-3, job:12, job:12]\n"),
              ElementsAre("p.yaml:4:14: error: depends_on[0]: expected job:ID with ID a job id (a "
                          "positive integer), found 'job:0'",
                          "p.yaml:4:21: error: depends_on[1]: expected job:ID with ID a job id (a "
                          "positive integer), found 'job:x1'",
                          "p.yaml:4:29: error: depends_on[2]: expected job:ID with ID a job id (a "
                          "positive integer), found 'job:007'",
                          "p.yaml:4:38: error: depends_on[3]: expected job:ID with ID a job id (a "
                          "positive integer), found 'job:-3'",
                          "p.yaml:4:54: error: depends_on[5]: duplicate dependency 'job:12'"));
  // Runs of a cron job cannot wait for one job that ends once.
  EXPECT_THAT(Errors("kind: CronJob\nname: c\nschedule: '@daily'\njob:\n  script: x\n"
                     "  depends_on: [job:3]\n"),
              ElementsAre("p.yaml:5:3: error: job: 'c' depends on job:3: a cron job's runs cannot "
                          "depend on a job of an earlier submission"));
}

// --after (ParseOptions::after) applies to every job of the submission, as if each named it.
TEST(ParseJobs, AddsAfterToEveryJob) {
  ParseOptions options = Options();
  options.after = {Dep("job:5"), Dep("job:6", DependencyCondition::kDone)};
  const std::vector<model::JobSpec> jobs = Jobs(
      "kind: Job\nname: a\nscript: x\n---\nkind: Job\nname: b\nscript: x\n"
      "depends_on: [a, job:5]\n",
      options);
  ASSERT_THAT(jobs, SizeIs(2));
  EXPECT_THAT(jobs[0].depends_on,
              ElementsAre(Dep("job:5"), Dep("job:6", DependencyCondition::kDone)));
  EXPECT_THAT(jobs[1].depends_on,
              ElementsAre(Dep("a"), Dep("job:5"), Dep("job:6", DependencyCondition::kDone)));

  options.after = {Dep("job:5", DependencyCondition::kFailed)};
  ParseOutput out =
      ParseJobsWithDiagnostics("kind: Job\nname: b\nscript: x\ndepends_on: [job:5]\n", options);
  ASSERT_THAT(out.diagnostics, SizeIs(1));
  EXPECT_EQ(out.diagnostics[0].ToString(),
            "p.yaml:4:14: error: depends_on[0]: waits for job:5: succeeded, but --after asks for "
            "failed");
}

TEST(ParseAfter, ReadsIdsAndConditions) {
  EXPECT_EQ(*ParseAfter("12"), Dep("job:12"));
  EXPECT_EQ(*ParseAfter("12:ok"), Dep("job:12"));
  EXPECT_EQ(*ParseAfter("12:any"), Dep("job:12", DependencyCondition::kDone));
  EXPECT_EQ(*ParseAfter("12:failed"), Dep("job:12", DependencyCondition::kFailed));
  EXPECT_EQ(*ParseAfter("12:skipped"), Dep("job:12", DependencyCondition::kSkipped));
  EXPECT_EQ(ParseAfter("x").error().message,
            "'x': expected ID[:CONDITION] with ID a job id (a positive integer)");
  EXPECT_EQ(ParseAfter("12:sucess").error().message,
            "'12:sucess': unknown condition; expected ok, any or a condition name (succeeded, "
            "failed, done or skipped)");
  Result<std::vector<model::Dependency>> list = ParseAfterList("3, 4:any");
  ASSERT_TRUE(list);
  EXPECT_THAT(*list, ElementsAre(Dep("job:3"), Dep("job:4", DependencyCondition::kDone)));
  EXPECT_EQ(ParseAfterList("3,,4").error().message,
            "item 2: '': expected ID[:CONDITION] with ID a job id (a positive integer)");
  std::string many = "1";
  for (int id = 2; id <= kMaxAfterItems; ++id) many += "," + std::to_string(id);
  ASSERT_TRUE(ParseAfterList(many));
  EXPECT_THAT(
      ParseAfterList(many + ",65").error().message,
      ::testing::HasSubstr("more than 64 items: a submission may wait on at most 64 earlier jobs"));
}

std::string ReadExample(const std::string& name) {
  std::ifstream in(std::string(DROVER_SOURCE_DIR) + "/examples/" + name);
  EXPECT_TRUE(in) << name;
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

TEST(ParseDocuments, ReadsTheExamples) {
  ParseOptions options = Options();
  options.base_dir = std::string(DROVER_SOURCE_DIR) + "/examples";
  Result<Documents> pipeline = ParseDocuments(ReadExample("pipeline.yaml"), options);
  ASSERT_TRUE(pipeline) << pipeline.error().ToString();
  EXPECT_THAT(pipeline->jobs, SizeIs(8));
  Result<Documents> cron = ParseDocuments(ReadExample("cron.yaml"), options);
  ASSERT_TRUE(cron) << cron.error().ToString();
  EXPECT_THAT(cron->crons, SizeIs(1));
}

// An idempotency key binds the body and the --after list: a retry with another list is another
// request; without one the digest is the text's alone, as stored before --after existed.
TEST(SubmissionDigestTest, TheAfterListIsPartOfTheRequest) {
  const std::string text = "kind: Job\nname: a\ncommand: [true]\n";
  const std::string plain = SubmissionDigest(text);
  EXPECT_EQ(SubmissionDigest(text, {}), plain);
  const model::Dependency ok{"job:12", model::DependencyCondition::kSucceeded};
  const model::Dependency failed{"job:12", model::DependencyCondition::kFailed};
  EXPECT_NE(SubmissionDigest(text, {ok}), plain);
  EXPECT_NE(SubmissionDigest(text, {ok}), SubmissionDigest(text, {failed}));
  EXPECT_EQ(SubmissionDigest(text, {ok}), SubmissionDigest(text, {ok}));
}

}  // namespace
}  // namespace drover::spec
