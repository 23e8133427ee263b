#pragma once

// Decide: the one rule of who may do what (docs/security.md, "Roles and verbs"). The API's
// Authorize (api/routes.h) calls it for every route before any handler, and again for what only
// a request's body names (the queue and owner of a submission); listings keep what it allows
// (Visible). Pure: values in, a verdict out.

#include <optional>
#include <string>
#include <string_view>

#include "drover/common/ids.h"
#include "drover/common/result.h"
#include "drover/model/identity.h"
#include "drover/model/job.h"
#include "drover/model/policy.h"

namespace drover::model {

// What a verb acts on. All of owner, team and queue empty: the cluster as a whole (queues,
// nodes, policy, tokens).
struct Resource {
  std::string what;   // for messages: "job 12", "pipeline run 4", "queue gpu-a", "the cluster"
  std::string owner;  // the job's (or cron job's, or submission's) owner
  std::string team;   // its team; for secrets and audit records, the team they belong to
  std::string queue;  // its leaf queue
  std::optional<JobId> job;

  bool IsCluster() const { return owner.empty() && team.empty() && queue.empty() && !job; }
};

// A job as a resource: "job N" with its owner, team and queue.
Resource ResourceOf(const Job& job);

// OK when `identity` may use `verb` on `resource` under `policy`; otherwise kPermissionDenied
// with a sentence naming the caller, the verb, the resource and who may ("... that takes its
// owner, a coordinator of team-a or an admin"). The rules:
// - admin: everything.
// - a job's own token (Identity::job): view, details and report on that job alone.
// - view: every other identity; a job of another team is hidden under policy.private_data.
// - details (command, env values, outputs): a member or coordinator of the job's team.
// - submit: not a viewer; on the cluster as a whole that is all (a request whose body is not
//   parsed yet); on a queue, the queue must be among the token's queues (when it lists any) and
//   grant the caller's team submit (QueueGrants; every queue does while no queue sets access);
//   an owner or team other than the caller's takes a coordinator of that team.
// - cancel, hold, logs: the owner; a coordinator of the job's team; a member of the job's team
//   where the job's queue grants that team the verb.
// - report: the owner or a coordinator of the job's team.
// - secrets: a coordinator of the secret's team.
// - audit: a coordinator, for the records of its team (on the cluster as a whole: may read the
//   log at all; each record is judged on its team).
// - administer: admin alone.
Status Decide(const Identity& identity, Verb verb, const Resource& resource, const Policy& policy);

// Whether Decide allows it: what listings keep (jobs under private_data, audit records).
bool Visible(const Identity& identity, Verb verb, const Resource& resource, const Policy& policy);

// The verbs the policy grants `team` on leaf queue `queue`: the nearest `access` on its path
// from the root ("*" grants every team); none when a queue sets access but none on this path
// does; submit alone when no queue of the policy sets access (an open cluster).
std::vector<Verb> QueueGrants(const Policy& policy, std::string_view queue, std::string_view team);

// Who may use `verb` at all, as one phrase ("its owner, a coordinator of its team or an admin"):
// the API reference's rule column (docs/security.md) and the tail of Decide's messages.
std::string_view WhoMay(Verb verb);

}  // namespace drover::model
