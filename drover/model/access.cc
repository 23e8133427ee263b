#include "drover/model/access.h"

#include <fmt/format.h>

#include <algorithm>

namespace drover::model {

std::string Describe(const Identity& identity) {
  if (identity.job) return fmt::format("job {}", identity.job->value());
  switch (identity.role) {
    case Role::kAdmin:
      return fmt::format("{} (admin)", identity.user);
    case Role::kCoordinator:
      return fmt::format("{} (coordinator of {})", identity.user, identity.team);
    case Role::kMember:
      return fmt::format("{} (member of {})", identity.user, identity.team);
    case Role::kViewer:
      return fmt::format("{} (viewer)", identity.user);
  }
  return identity.user;
}

std::string_view WhoMay(Verb verb) {
  switch (verb) {
    case Verb::kView:
      return "any token (under private_data, only the job's team)";
    case Verb::kDetails:
      return "a member or coordinator of the job's team, or an admin";
    case Verb::kSubmit:
      return "a member or coordinator of a team the queue grants submit, or an admin";
    case Verb::kCancel:
    case Verb::kHold:
    case Verb::kLogs:
      return "its owner, a coordinator of its team, a member of its team where its queue grants "
             "that team this verb, or an admin";
    case Verb::kReport:
      return "its owner, the job itself, a coordinator of its team, or an admin";
    case Verb::kSecrets:
      return "a coordinator of the team, or an admin";
    case Verb::kAudit:
      return "a coordinator (its team's records), or an admin";
    case Verb::kAdminister:
      return "an admin";
  }
  return "an admin";
}

namespace {

// The nearest `access` on the path from a root to leaf `queue`, or nullptr; `found` tells
// whether the leaf exists.
const AccessGrants* NearestGrants(const std::vector<QueueConfig>& queues, std::string_view queue,
                                  const AccessGrants* inherited, bool& found) {
  for (const QueueConfig& config : queues) {
    const AccessGrants* here = config.access ? &*config.access : inherited;
    if (config.children.empty()) {
      if (config.name == queue) {
        found = true;
        return here;
      }
      continue;
    }
    const AccessGrants* below = NearestGrants(config.children, queue, here, found);
    if (found) return below;
  }
  return nullptr;
}

bool AnyAccess(const std::vector<QueueConfig>& queues) {
  return std::any_of(queues.begin(), queues.end(), [](const QueueConfig& config) {
    return config.access.has_value() || AnyAccess(config.children);
  });
}

template <typename T>
bool Contains(const std::vector<T>& values, const T& value) {
  return std::find(values.begin(), values.end(), value) != values.end();
}

Status Denied(const Identity& identity, Verb verb, const Resource& resource,
              std::string_view why = {}) {
  std::string subject = resource.what.empty() ? std::string("the cluster") : resource.what;
  if (!resource.owner.empty() || !resource.team.empty()) {
    subject += fmt::format(" (owner {}, team {})", resource.owner.empty() ? "-" : resource.owner,
                           resource.team.empty() ? "-" : resource.team);
  }
  return PermissionDenied(fmt::format("{} may not {} {}{}; that takes {}", Describe(identity),
                                      kVerbNames.Name(verb), subject,
                                      why.empty() ? "" : fmt::format(" ({})", why), WhoMay(verb)));
}

}  // namespace

std::vector<Verb> QueueGrants(const Policy& policy, std::string_view queue, std::string_view team) {
  if (!AnyAccess(policy.queues)) return {Verb::kSubmit};
  bool found = false;
  const AccessGrants* grants = NearestGrants(policy.queues, queue, nullptr, found);
  if (!grants) return {};
  std::vector<Verb> verbs;
  for (const std::string_view key : {team, std::string_view("*")}) {
    if (auto it = grants->find(std::string(key)); it != grants->end()) {
      for (Verb verb : it->second) {
        if (!Contains(verbs, verb)) verbs.push_back(verb);
      }
    }
  }
  return verbs;
}

Resource ResourceOf(const Job& job) {
  return Resource{fmt::format("job {}", job.id.value()), job.spec.owner, job.spec.team,
                  job.spec.queue, job.id};
}

Status Decide(const Identity& identity, Verb verb, const Resource& resource, const Policy& policy) {
  if (identity.job) {
    const bool own = resource.job == identity.job;
    if (own && (verb == Verb::kView || verb == Verb::kDetails || verb == Verb::kReport)) {
      return OkStatus();
    }
    return Denied(identity, verb, resource, "a job's token acts on that job alone");
  }
  if (identity.role == Role::kAdmin) return OkStatus();
  const bool same_team = !resource.team.empty() && resource.team == identity.team;
  const bool coordinator = identity.role == Role::kCoordinator && same_team;
  const bool owner = !resource.owner.empty() && resource.owner == identity.user && same_team;
  switch (verb) {
    case Verb::kView:
      if (resource.IsCluster() || !policy.private_data || same_team) return OkStatus();
      return Denied(identity, verb, resource, "the policy keeps other teams' jobs private");
    case Verb::kDetails:
      if (same_team && identity.role != Role::kViewer) return OkStatus();
      return Denied(identity, verb, resource);
    case Verb::kSubmit: {
      if (identity.role == Role::kViewer) return Denied(identity, verb, resource);
      if (resource.IsCluster()) return OkStatus();  // may submit at all; each queue is judged
      if (!identity.queues.empty() && !Contains(identity.queues, resource.queue)) {
        return Denied(
            identity, verb, resource,
            fmt::format("the token submits only to {}", fmt::join(identity.queues, ", ")));
      }
      if (!Contains(QueueGrants(policy, resource.queue, identity.team), Verb::kSubmit)) {
        return Denied(identity, verb, resource,
                      fmt::format("the policy does not grant team {} submit on queue {}",
                                  identity.team.empty() ? "-" : identity.team, resource.queue));
      }
      const bool as_self = resource.owner == identity.user && resource.team == identity.team;
      if (as_self || coordinator) return OkStatus();
      return Denied(identity, verb, resource,
                    "a job of another owner or team takes a coordinator of its team");
    }
    case Verb::kCancel:
    case Verb::kHold:
    case Verb::kLogs:
      if (identity.role == Role::kViewer) return Denied(identity, verb, resource);
      if (owner || coordinator) return OkStatus();
      if (same_team && Contains(QueueGrants(policy, resource.queue, identity.team), verb)) {
        return OkStatus();
      }
      return Denied(identity, verb, resource);
    case Verb::kReport:
      if (identity.role != Role::kViewer && (owner || coordinator)) return OkStatus();
      return Denied(identity, verb, resource);
    case Verb::kAudit:
      // On the log as a whole, a coordinator may read; each record is then judged on its team.
      if (identity.role == Role::kCoordinator && resource.IsCluster()) return OkStatus();
      if (coordinator) return OkStatus();
      return Denied(identity, verb, resource);
    case Verb::kSecrets:
      if (coordinator) return OkStatus();
      return Denied(identity, verb, resource);
    case Verb::kAdminister:
      return Denied(identity, verb, resource);
  }
  return Denied(identity, verb, resource);
}

bool Visible(const Identity& identity, Verb verb, const Resource& resource, const Policy& policy) {
  return Decide(identity, verb, resource, policy).has_value();
}

}  // namespace drover::model
