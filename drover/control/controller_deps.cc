// Controller, the dependency part (docs/workflows.md, "Dependencies across submissions"):
// resolving depends_on at submission, for names of the same submission and for `job:ID`, an
// earlier submission's job; finding a dependency's upstream jobs; judging a pending job's
// dependencies and saying what it waits for.

#include <fmt/format.h>

#include <algorithm>

#include "drover/control/controller.h"
#include "drover/model/dependency.h"
#include "drover/model/job_state_words.h"
#include "drover/workflow/conditions.h"

namespace drover::control {

using model::Job;
using model::JobState;

tl::unexpected<Error> UnknownUpstream(std::string_view job, std::size_t index,
                                      std::string_view name) {
  const std::optional<JobId> id = model::DependencyJobId(name);
  return InvalidArgument(fmt::format("job '{}': depends_on[{}] ({}): job {} does not exist", job,
                                     index, name, id ? id->value() : 0));
}

Result<std::vector<std::vector<JobId>>> Controller::ResolveDependencies(
    const std::vector<model::JobSpec>& specs, JobId first_id) const {
  std::vector<std::vector<JobId>> dependencies(specs.size());
  auto add = [](std::vector<JobId>& ids, JobId id) {
    if (std::find(ids.begin(), ids.end(), id) == ids.end()) ids.push_back(id);
  };
  for (std::size_t i = 0; i < specs.size(); ++i) {
    for (std::size_t d = 0; d < specs[i].depends_on.size(); ++d) {
      const model::Dependency& dependency = specs[i].depends_on[d];
      if (const std::optional<JobId> id = model::DependencyJobId(dependency.name)) {
        // Only earlier ids: this submission's own (the job itself included) and later ones are
        // not jobs yet, so no cycle can form across submissions.
        const Job* upstream = *id < first_id ? jobs_.Find(*id) : nullptr;
        if (upstream == nullptr) return UnknownUpstream(specs[i].name, d, dependency.name);
        const workflow::UpstreamState state = workflow::StateOf(upstream->state);
        if (workflow::CannotHold(dependency.condition, state)) {
          return InvalidArgument(fmt::format(
              "job '{}': depends_on[{}] ({}): job {} {}, so it can no longer {} as this job needs",
              specs[i].name, d, dependency.name, id->value(),
              model::kJobStatePhrases.Name(upstream->state),
              workflow::AwaitedAs(dependency.condition)));
        }
        add(dependencies[i], *id);
        continue;
      }
      // A job of the submission, or a pipeline stage (every trial of a sweep).
      std::size_t found = 0;
      for (std::size_t j = 0; j < specs.size(); ++j) {
        if (j == i || (specs[j].name != dependency.name && specs[j].stage != dependency.name)) {
          continue;
        }
        add(dependencies[i], JobId(first_id.value() + static_cast<std::int64_t>(j)));
        ++found;
      }
      if (found == 0) {
        return InvalidArgument(
            fmt::format("job '{}' depends on '{}', which is not in the submission", specs[i].name,
                        dependency.name));
      }
    }
  }
  return dependencies;
}

std::vector<const Job*> Controller::UpstreamsOf(const Job& job,
                                                const model::Dependency& dependency) const {
  std::vector<const Job*> upstreams;
  if (const std::optional<JobId> id = model::DependencyJobId(dependency.name)) {
    if (const Job* upstream = jobs_.Find(*id)) upstreams.push_back(upstream);
    return upstreams;
  }
  for (JobId upstream : job.dependencies) {
    const Job& up = jobs_.Get(upstream);
    // An earlier submission's job is named by its id only, never by a name that it shares.
    const bool earlier = std::any_of(
        job.spec.depends_on.begin(), job.spec.depends_on.end(),
        [&](const model::Dependency& d) { return model::DependencyJobId(d.name) == upstream; });
    if (!earlier && (up.spec.name == dependency.name || up.spec.stage == dependency.name)) {
      upstreams.push_back(&up);
    }
  }
  return upstreams;
}

workflow::DependencyVerdict Controller::JudgeDependencies(const Job& job) const {
  std::vector<workflow::JudgedDependency> judged;
  for (const model::Dependency& dependency : job.spec.depends_on) {
    std::vector<JobState> states;
    for (const Job* up : UpstreamsOf(job, dependency)) states.push_back(up->state);
    judged.push_back({dependency, workflow::AggregateStage(states)});
  }
  return workflow::Judge(judged);
}

std::string Controller::DescribeWait(const Job& job, const std::string& reason) const {
  std::string unfinished;
  for (JobId id : job.dependencies) {
    const Job& up = jobs_.Get(id);
    if (model::IsTerminal(up.state)) continue;
    unfinished += fmt::format("{}{} ({}, {})", unfinished.empty() ? "" : ", ", up.spec.name,
                              id.value(), model::JobStateName(up.state));
  }
  return unfinished.empty() ? reason : reason + "; unfinished: " + unfinished;
}

}  // namespace drover::control
