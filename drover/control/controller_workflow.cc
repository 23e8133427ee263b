// Controller, the workflow part (docs/workflows.md): releasing pending jobs whose dependency
// conditions and `if` hold (or skipping them), upstream outputs in templates, declared inputs,
// sweeps (concurrency bound, early stopping), admission: whole, and cancelling a pipeline run.

#include <fmt/format.h>

#include <algorithm>

#include "drover/control/controller.h"
#include "drover/workflow/conditions.h"
#include "drover/workflow/expression.h"
#include "drover/workflow/trials.h"

namespace drover::control {
namespace {

using model::Job;
using model::JobState;

// What a stage of a pipeline asks of its queue at its widest: one job, or for a sweep as many
// trials as its concurrency releases at once (all of them without a bound).
sched::Charge StageCharge(const sched::QueueTree& queues, const model::JobSpec& spec) {
  sched::Charge charge;
  charge.leaf = queues.FindLeaf(spec.queue).value_or(0);
  charge.user = spec.owner;
  charge.pipeline = spec.pipeline;
  charge.amounts = sched::ChargeAmounts(spec, "");
  if (spec.trial.index > 0) {
    const int parallel = spec.trial.concurrency > 0
                             ? std::min(spec.trial.concurrency, spec.trial.count)
                             : spec.trial.count;
    for (auto& [resource, amount] : charge.amounts) amount *= parallel;
  }
  return charge;
}

// Replaces ${{ stages.S.outputs.N }} in the command, script and env values of `spec` through
// `lookup`; the first reference without a value is the error.
Status RenderUpstreamOutputs(model::JobSpec& spec, const workflow::Lookup& lookup) {
  auto render = [&](std::string& text, std::string_view field) -> Status {
    Result<std::string> rendered = workflow::Render(text, lookup);
    if (!rendered) {
      return InvalidArgument(fmt::format("{}: {}", field, rendered.error().message));
    }
    text = std::move(*rendered);
    return OkStatus();
  };
  for (std::string& arg : spec.command) DROVER_RETURN_IF_ERROR(render(arg, "command"));
  DROVER_RETURN_IF_ERROR(render(spec.script, "script"));
  for (auto& [name, value] : spec.env) DROVER_RETURN_IF_ERROR(render(value, "env." + name));
  return OkStatus();
}

}  // namespace

Status Controller::CheckWholeAdmission(const std::vector<model::JobSpec>& specs) const {
  if (std::none_of(specs.begin(), specs.end(), [](const model::JobSpec& spec) {
        return spec.admission == model::PipelineAdmission::kWhole;
      })) {
    return OkStatus();
  }
  for (const model::JobSpec& spec : specs) {
    const sched::AdmitVerdict verdict = idle_queues_.CheckAdmit(StageCharge(idle_queues_, spec));
    if (!verdict.ok()) {
      return InvalidArgument(fmt::format(
          "pipeline '{}' (admission: whole): stage '{}' can never be admitted: {}", spec.pipeline,
          spec.stage.empty() ? spec.name : spec.stage, verdict.Render()));
    }
  }
  return OkStatus();
}

void Controller::ReleaseDependents(TimeMs now, Step& step) {
  for (JobId id : std::vector<JobId>(jobs_.pending().begin(), jobs_.pending().end())) {
    Job& job = jobs_.Get(id);
    const workflow::DependencyVerdict verdict = JudgeDependencies(job);
    if (verdict.kind == workflow::DependencyVerdict::Kind::kSkip) {
      Skip(job, verdict.reason, now, step);
      continue;
    }
    if (verdict.kind == workflow::DependencyVerdict::Kind::kWait) {
      // What it waits for, in the job's message (drover ls): changes only as upstreams end.
      if (job.status_message != verdict.reason) {
        job.status_message = verdict.reason;
        step.changed.insert(id);
      }
      continue;
    }
    const bool all_succeeded =
        std::all_of(job.spec.depends_on.begin(), job.spec.depends_on.end(),
                    [](const model::Dependency& dependency) {
                      return dependency.condition == model::DependencyCondition::kSucceeded;
                    });
    const workflow::Lookup lookup = [&](const workflow::Reference& reference) {
      return UpstreamOutput(job, reference);
    };
    if (!job.spec.run_if.empty()) {
      Result<bool> holds = workflow::EvaluateCondition(job.spec.run_if, lookup);
      if (!holds || !*holds) {
        Skip(job,
             holds ? fmt::format("if: {} is false", job.spec.run_if)
                   : fmt::format("if: {}: {}", job.spec.run_if, holds.error().message),
             now, step);
        continue;
      }
    }
    if (Status rendered = RenderUpstreamOutputs(job.spec, lookup); !rendered) {
      Skip(job, rendered.error().message, now, step);
      continue;
    }
    std::optional<std::string> hold = SweepConcurrencyHold(job);
    if (!hold) hold = WholeAdmissionHold(job);
    if (hold) {
      if (job.status_message != *hold) {
        job.status_message = *hold;
        step.changed.insert(id);
      }
      continue;
    }
    Release(job,
            job.dependencies.empty() ? "submitted"
            : all_succeeded          ? "dependencies succeeded"
                                     : "dependency conditions met",
            now, step);
  }
}

std::optional<std::string> Controller::UpstreamOutput(const Job& job,
                                                      const workflow::Reference& reference) const {
  if (reference.kind != workflow::Reference::Kind::kStageOutput) return std::nullopt;
  // The stage's job, or for a sweep its best trial (by the objective).
  std::vector<const Job*> stage;
  for (const Job* candidate : RunJobs(job.pipeline_run)) {
    if (candidate->spec.stage == reference.stage ||
        (candidate->spec.stage.empty() && candidate->spec.name == reference.stage)) {
      stage.push_back(candidate);
    }
  }
  const Job* source = stage.size() == 1 ? stage.front() : nullptr;
  if (stage.size() > 1) {
    std::optional<int> best = workflow::BestTrialOf(stage);
    if (best) source = stage[static_cast<std::size_t>(*best - 1)];
  }
  if (source == nullptr) return std::nullopt;
  auto output = source->outputs.find(reference.output);
  if (output == source->outputs.end()) return std::nullopt;
  return output->second;
}

void Controller::Release(Job& job, const std::string& cause, TimeMs now, Step& step) {
  job.released_at = now;
  job.status_message.clear();
  const bool has_paths =
      std::any_of(job.spec.inputs.begin(), job.spec.inputs.end(),
                  [](const model::InputSpec& input) { return !input.path.empty(); });
  if (!has_paths) {
    StartAttempt(job, now, step);
    MoveTo(job, JobState::kReady, cause, now, step);
    return;
  }
  job.status_message = "waiting for its inputs to be checked";
  MoveTo(job, JobState::kWaiting, cause, now, step);
}

void Controller::Skip(Job& job, const std::string& cause, TimeMs now, Step& step) {
  job.status_message = cause;
  MoveTo(job, JobState::kSkipped, cause, now, step);
}

std::optional<std::string> Controller::SweepConcurrencyHold(const Job& job) const {
  const model::TrialSpec& trial = job.spec.trial;
  if (trial.index == 0 || trial.concurrency <= 0) return std::nullopt;
  int released = 0;
  for (const Job* sibling : RunJobs(job.pipeline_run)) {
    if (sibling->spec.stage == job.spec.stage && sibling->state != JobState::kPending &&
        !model::IsTerminal(sibling->state)) {
      ++released;
    }
  }
  if (released < trial.concurrency) return std::nullopt;
  return fmt::format("sweep {}: {} of its {} trials released (concurrency {})", job.spec.stage,
                     released, trial.count, trial.concurrency);
}

std::optional<std::string> Controller::WholeAdmissionHold(const Job& job) const {
  if (job.spec.admission != model::PipelineAdmission::kWhole) return std::nullopt;
  const std::vector<const Job*> run = RunJobs(job.pipeline_run);
  for (const Job* stage : run) {
    if (stage->state != JobState::kPending) return std::nullopt;  // already started
  }
  for (const Job* stage : run) {
    const sched::AdmitVerdict verdict =
        holdings_.queues().CheckAdmit(StageCharge(holdings_.queues(), stage->spec));
    if (!verdict.ok()) {
      return fmt::format("admission: whole: waiting until stage {} fits: {}",
                         stage->spec.stage.empty() ? stage->spec.name : stage->spec.stage,
                         verdict.Render());
    }
  }
  return std::nullopt;
}

void Controller::MaybeStopSweep(const Job& trial, TimeMs now, Step& step) {
  const model::TrialSpec& sweep = trial.spec.trial;
  if (sweep.index == 0) return;
  auto output = trial.outputs.find(sweep.objective);
  if (output == trial.outputs.end() || !workflow::ReachesStopAt(sweep, output->second)) return;
  const std::string cause =
      fmt::format("early stopping: trial {} reached {} = {} (stop_at {})", sweep.index,
                  sweep.objective, output->second, *sweep.stop_at);
  for (const Job* sibling : RunJobs(trial.pipeline_run)) {
    if (sibling->id != trial.id && sibling->spec.stage == trial.spec.stage &&
        !model::IsTerminal(sibling->state) && !jobs_.IsPublishing(sibling->id)) {
      (void)Cancel(sibling->id, model::kSystemActor, cause, now, step);
    }
  }
}

std::vector<Controller::InputCheck> Controller::InputsToCheck() const {
  std::vector<InputCheck> checks;
  for (JobId id : jobs_.waiting()) {
    const Job& job = jobs_.Get(id);
    InputCheck check{id, {}, job.run_as, job.may_run_as_root};
    for (const model::InputSpec& input : job.spec.inputs) {
      if (!input.path.empty()) check.paths.push_back(input.path);
    }
    checks.push_back(std::move(check));
  }
  return checks;
}

void Controller::OnInputsChecked(JobId id, const std::vector<std::string>& missing, TimeMs now,
                                 Step& step) {
  Job* found = jobs_.Find(id);
  if (!found || found->state != JobState::kWaiting) return;
  Job& job = *found;
  if (missing.empty()) {
    job.status_message.clear();
    StartAttempt(job, now, step);
    MoveTo(job, JobState::kReady, "inputs present", now, step);
    return;
  }
  std::string message = fmt::format("waiting for input {}", fmt::join(missing, ", "));
  if (message != job.status_message) {
    job.status_message = std::move(message);
    step.changed.insert(id);
  }
}

Status Controller::CancelPipeline(JobId run, std::string_view by, const std::string& cause,
                                  TimeMs now, Step& step) {
  const std::vector<const Job*> jobs = RunJobs(run);
  if (jobs.empty()) return NotFound(fmt::format("pipeline run {} does not exist", run.value()));
  for (const Job* job : jobs) {
    if (!model::IsTerminal(job->state) && !jobs_.IsPublishing(job->id)) {
      DROVER_RETURN_IF_ERROR(Cancel(job->id, by, cause, now, step));
    }
  }
  return OkStatus();
}

}  // namespace drover::control
