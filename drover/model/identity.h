#pragma once

// Who calls the API and what they may do (docs/security.md): a caller's Identity comes from the
// token it presents (server/token_registry.h), its Role from the token, the Verbs it may use from
// the role and the policy's per-queue grants. model/access.h decides; these are the values.

#include <optional>
#include <string>
#include <vector>

#include "drover/common/ids.h"
#include "drover/model/names.h"

namespace drover::model {

// A token's role (after Slurm's AdminLevel and coordinators, and Armada's per-queue verbs).
enum class Role {
  kAdmin,        // everything: tokens, policy reload, every job, the audit log
  kCoordinator,  // every verb on the jobs of its team; its team's secrets and audit records
  kMember,       // submits to the queues its team may use; its own jobs (its team's by grant)
  kViewer,       // reads summaries
};
inline constexpr NameTable kRoleNames{std::array{
    NameEntry{Role::kAdmin, "admin"},
    NameEntry{Role::kCoordinator, "coordinator"},
    NameEntry{Role::kMember, "member"},
    NameEntry{Role::kViewer, "viewer"},
}};
static_assert(kRoleNames.size() == static_cast<std::size_t>(Role::kViewer) + 1);

// What a caller does to a resource. submit, cancel, hold and logs are also the names of a
// policy's per-queue grants (QueueConfig::access); the others follow from the role alone.
enum class Verb {
  kView,        // read summaries: a job's name, owner, team, queue, state, resources, timeline;
                // queues, nodes, policy, goodput, crons, pipeline runs
  kDetails,     // read a job's command, env values and outputs (the owner's team)
  kSubmit,      // create jobs (and cron jobs) in a queue
  kCancel,      // cancel a job or a pipeline run, delete a cron job
  kHold,        // hold, release, update or requeue a job
  kLogs,        // read a job's worker logs
  kReport,      // report a job's progress or checkpoint (its owner, or the job itself)
  kSecrets,     // set or delete a team's secrets (its coordinator)
  kAudit,       // read the audit log (a coordinator: its team's records)
  kAdminister,  // tokens, policy reload
};
inline constexpr NameTable kVerbNames{std::array{
    NameEntry{Verb::kView, "view"},
    NameEntry{Verb::kDetails, "details"},
    NameEntry{Verb::kSubmit, "submit"},
    NameEntry{Verb::kCancel, "cancel"},
    NameEntry{Verb::kHold, "hold"},
    NameEntry{Verb::kLogs, "logs"},
    NameEntry{Verb::kReport, "report"},
    NameEntry{Verb::kSecrets, "secrets"},
    NameEntry{Verb::kAudit, "audit"},
    NameEntry{Verb::kAdminister, "administer"},
}};
static_assert(kVerbNames.size() == static_cast<std::size_t>(Verb::kAdminister) + 1);

// Whether a policy may grant `verb` per queue (access: {team: [verbs]}).
constexpr bool IsGrantable(Verb verb) {
  return verb == Verb::kSubmit || verb == Verb::kCancel || verb == Verb::kHold ||
         verb == Verb::kLogs;
}

// Who a request comes from, as its token says.
struct Identity {
  std::string user;  // the owner of what it submits
  std::string team;  // the team of what it submits; "" for an admin token without one
  Role role = Role::kViewer;
  // The token's --queues: it submits only to these; empty: every queue its team may use.
  std::vector<std::string> queues;
  // A job's own token (DROVER_TOKEN in its workers' environment): it may view and report on
  // this job alone, whatever `role` says.
  std::optional<JobId> job;
  std::string token_id;  // the token's public id, for the audit log; never the token itself

  friend bool operator==(const Identity&, const Identity&) = default;
};

// An admin named `user` with no team: who `drover run` submits as on its private control plane,
// and a caller for tests.
inline Identity AdminIdentity(std::string user) {
  Identity identity;
  identity.user = std::move(user);
  identity.role = Role::kAdmin;
  return identity;
}

// "user-a (coordinator of team-a)", "ops (admin)", "job 12": how messages and the audit log name
// a caller.
std::string Describe(const Identity& identity);

}  // namespace drover::model
