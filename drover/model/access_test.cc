#include "drover/model/access.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace drover::model {
namespace {

using ::testing::HasSubstr;

Identity Caller(std::string user, std::string team, Role role) {
  Identity identity;
  identity.user = std::move(user);
  identity.team = std::move(team);
  identity.role = role;
  return identity;
}

Resource JobOf(std::string owner, std::string team, std::string queue, std::int64_t id = 3) {
  return Resource{"job " + std::to_string(id), std::move(owner), std::move(team), std::move(queue),
                  JobId(id)};
}

Resource QueueFor(std::string owner, std::string team, std::string queue) {
  return Resource{"queue " + queue, std::move(owner), std::move(team), std::move(queue),
                  std::nullopt};
}

// team-a may submit to gpu-a and cancel and read the logs of its team's jobs there; every team
// may submit to shared; nobody is granted anything on locked.
Policy Grants() {
  Policy policy;
  QueueConfig gpu_a;
  gpu_a.name = "gpu-a";
  gpu_a.access = AccessGrants{{"team-a", {Verb::kSubmit, Verb::kCancel, Verb::kLogs}}};
  QueueConfig shared;
  shared.name = "shared";
  shared.access = AccessGrants{{"*", {Verb::kSubmit}}};
  QueueConfig locked;
  locked.name = "locked";
  QueueConfig root;
  root.name = "root";
  root.children = {gpu_a, shared, locked};
  policy.queues = {root};
  return policy;
}

const Identity kAdmin = AdminIdentity("ops");
const Identity kCoordinatorA = Caller("carol", "team-a", Role::kCoordinator);
const Identity kAlice = Caller("alice", "team-a", Role::kMember);
const Identity kAnna = Caller("anna", "team-a", Role::kMember);
const Identity kBob = Caller("bob", "team-b", Role::kMember);
const Identity kViewer = Caller("vic", "team-a", Role::kViewer);

TEST(Decide, AdminMayDoEverything) {
  const Policy policy = Grants();
  for (Verb verb : kVerbNames.Values()) {
    EXPECT_TRUE(Decide(kAdmin, verb, JobOf("bob", "team-b", "locked"), policy)) << int(verb);
  }
}

TEST(Decide, OwnersAndCoordinatorsActOnJobsAndTeamMatesOnlyByGrant) {
  const Policy policy = Grants();
  const Resource alices = JobOf("alice", "team-a", "shared");
  for (Verb verb : {Verb::kCancel, Verb::kHold, Verb::kLogs, Verb::kReport, Verb::kDetails}) {
    EXPECT_TRUE(Decide(kAlice, verb, alices, policy)) << kVerbNames.Name(verb);
    EXPECT_TRUE(Decide(kCoordinatorA, verb, alices, policy)) << kVerbNames.Name(verb);
    EXPECT_FALSE(Decide(kBob, verb, alices, policy)) << kVerbNames.Name(verb);
  }
  // A team-mate: details always, cancel and logs only where the queue grants them.
  EXPECT_TRUE(Decide(kAnna, Verb::kDetails, alices, policy));
  EXPECT_FALSE(Decide(kAnna, Verb::kCancel, alices, policy));
  const Resource in_gpu_a = JobOf("alice", "team-a", "gpu-a");
  EXPECT_TRUE(Decide(kAnna, Verb::kCancel, in_gpu_a, policy));
  EXPECT_TRUE(Decide(kAnna, Verb::kLogs, in_gpu_a, policy));
  EXPECT_FALSE(Decide(kAnna, Verb::kHold, in_gpu_a, policy));
  EXPECT_FALSE(Decide(kAnna, Verb::kReport, in_gpu_a, policy));
}

TEST(Decide, ARefusalNamesTheCallerTheVerbTheResourceAndWhoMay) {
  const Status refused = Decide(kBob, Verb::kCancel, JobOf("alice", "team-a", "gpu-a"), Grants());
  ASSERT_FALSE(refused);
  EXPECT_EQ(refused.error().code, ErrorCode::kPermissionDenied);
  EXPECT_EQ(refused.error().message,
            "bob (member of team-b) may not cancel job 3 (owner alice, team team-a); that takes "
            "its owner, a coordinator of its team, a member of its team where its queue grants "
            "that team this verb, or an admin");
}

TEST(Decide, ViewersReadSummariesOnly) {
  const Policy policy = Grants();
  const Resource job = JobOf("alice", "team-a", "gpu-a");
  EXPECT_TRUE(Decide(kViewer, Verb::kView, job, policy));
  for (Verb verb : {Verb::kDetails, Verb::kSubmit, Verb::kCancel, Verb::kLogs, Verb::kReport}) {
    EXPECT_FALSE(Decide(kViewer, verb, job, policy)) << kVerbNames.Name(verb);
  }
  EXPECT_FALSE(
      Decide(kViewer, Verb::kSubmit, Resource{"the cluster", "", "", "", std::nullopt}, policy));
}

TEST(Decide, PrivateDataHidesOtherTeamsJobs) {
  Policy policy = Grants();
  const Resource bobs = JobOf("bob", "team-b", "shared");
  EXPECT_TRUE(Decide(kAlice, Verb::kView, bobs, policy));
  policy.private_data = true;
  EXPECT_FALSE(Decide(kAlice, Verb::kView, bobs, policy));
  EXPECT_FALSE(Decide(kViewer, Verb::kView, bobs, policy));
  EXPECT_TRUE(Decide(kBob, Verb::kView, bobs, policy));
  EXPECT_TRUE(
      Decide(kAlice, Verb::kView, Resource{"the cluster", "", "", "", std::nullopt}, policy));
}

TEST(Decide, SubmitFollowsTheQueuesGrantsTheTokensQueuesAndOwnership) {
  const Policy policy = Grants();
  EXPECT_TRUE(Decide(kAlice, Verb::kSubmit, QueueFor("alice", "team-a", "gpu-a"), policy));
  EXPECT_TRUE(Decide(kBob, Verb::kSubmit, QueueFor("bob", "team-b", "shared"), policy));
  EXPECT_FALSE(Decide(kBob, Verb::kSubmit, QueueFor("bob", "team-b", "gpu-a"), policy));
  EXPECT_FALSE(Decide(kAlice, Verb::kSubmit, QueueFor("alice", "team-a", "locked"), policy));
  // Another owner: a coordinator of that team, not a member.
  EXPECT_FALSE(Decide(kAlice, Verb::kSubmit, QueueFor("anna", "team-a", "gpu-a"), policy));
  EXPECT_TRUE(Decide(kCoordinatorA, Verb::kSubmit, QueueFor("anna", "team-a", "gpu-a"), policy));
  EXPECT_FALSE(Decide(kCoordinatorA, Verb::kSubmit, QueueFor("bob", "team-b", "shared"), policy));
  // A token limited to some queues.
  Identity limited = kAlice;
  limited.queues = {"shared"};
  EXPECT_TRUE(Decide(limited, Verb::kSubmit, QueueFor("alice", "team-a", "shared"), policy));
  const Status refused =
      Decide(limited, Verb::kSubmit, QueueFor("alice", "team-a", "gpu-a"), policy);
  ASSERT_FALSE(refused);
  EXPECT_THAT(refused.error().message, HasSubstr("the token submits only to shared"));
}

TEST(Decide, APolicyWithoutAccessLetsEveryTeamSubmitEverywhere) {
  Policy open;
  QueueConfig queue;
  queue.name = "default";
  open.queues = {queue};
  EXPECT_TRUE(Decide(kBob, Verb::kSubmit, QueueFor("bob", "team-b", "default"), open));
  EXPECT_TRUE(Decide(kBob, Verb::kSubmit, QueueFor("bob", "team-b", "default"), Policy{}));
  // Granting team-mates cancel takes an access section.
  EXPECT_FALSE(Decide(kAnna, Verb::kCancel, JobOf("alice", "team-a", "default"), open));
}

TEST(Decide, AJobsTokenActsOnThatJobAlone) {
  Identity job;
  job.job = JobId(3);
  const Policy policy = Grants();
  EXPECT_TRUE(Decide(job, Verb::kReport, JobOf("alice", "team-a", "gpu-a", 3), policy));
  EXPECT_TRUE(Decide(job, Verb::kView, JobOf("alice", "team-a", "gpu-a", 3), policy));
  EXPECT_FALSE(Decide(job, Verb::kReport, JobOf("alice", "team-a", "gpu-a", 4), policy));
  EXPECT_FALSE(Decide(job, Verb::kCancel, JobOf("alice", "team-a", "gpu-a", 3), policy));
  EXPECT_FALSE(Decide(job, Verb::kView, Resource{"the cluster", "", "", "", std::nullopt}, policy));
}

TEST(Decide, SecretsAndAuditBelongToTheTeamsCoordinator) {
  const Policy policy = Grants();
  const Resource team_a{"team team-a", "", "team-a", "", std::nullopt};
  EXPECT_TRUE(Decide(kCoordinatorA, Verb::kSecrets, team_a, policy));
  EXPECT_TRUE(Decide(kCoordinatorA, Verb::kAudit, team_a, policy));
  EXPECT_FALSE(Decide(kAlice, Verb::kSecrets, team_a, policy));
  const Resource team_b{"team team-b", "", "team-b", "", std::nullopt};
  EXPECT_FALSE(Decide(kCoordinatorA, Verb::kSecrets, team_b, policy));
  EXPECT_FALSE(Decide(kCoordinatorA, Verb::kAdminister, team_a, policy));
  // The audit log as a whole: a coordinator may read it (its listing keeps its team's records).
  const Resource cluster{"the cluster", "", "", "", std::nullopt};
  EXPECT_TRUE(Decide(kCoordinatorA, Verb::kAudit, cluster, policy));
  EXPECT_FALSE(Decide(kAlice, Verb::kAudit, cluster, policy));
  EXPECT_FALSE(Decide(kCoordinatorA, Verb::kSecrets, cluster, policy));
}

TEST(Describe, NamesTheRoleAndTeam) {
  EXPECT_EQ(Describe(kCoordinatorA), "carol (coordinator of team-a)");
  EXPECT_EQ(Describe(kAlice), "alice (member of team-a)");
  EXPECT_EQ(Describe(kViewer), "vic (viewer)");
  EXPECT_EQ(Describe(kAdmin), "ops (admin)");
}

}  // namespace
}  // namespace drover::model
