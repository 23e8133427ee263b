// ControlPlane with a secret store (docs/security.md, "Secrets"): a job's secret_env is checked
// at submit, its values reach the launched workers and nothing else (the job, listings, the
// decision log, transitions, the store), a secret deleted after submit fails the launch without a
// value in the message, and a queue on Slurm refuses secret_env.

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <vector>

#include "drover/codec/json.h"
#include "drover/server/control_plane.h"
#include "drover/testing/fake_clock.h"
#include "drover/testing/fake_runtime.h"
#include "drover/testing/faulty_store.h"
#include "drover/testing/memory_file_system.h"
#include "drover/testing/temp_dir.h"

namespace drover::server {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

constexpr char kValue[] = "s3cr3t-value-0xC0FFEE";

constexpr char kJob[] = R"(kind: Job
name: train
resources: {cpu: 100m, memory: 64Mi}
script: run
env: {PLAIN: visible}
secret_env: {WANDB_API_KEY: wandb-key}
)";

model::Identity MemberOf(std::string team) {
  model::Identity identity;
  identity.user = "alice";
  identity.team = std::move(team);
  identity.role = model::Role::kMember;
  return identity;
}

class ControlPlaneSecretsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ControlPlaneOptions options;
    options.run_loop = false;
    plane_ = std::make_unique<ControlPlane>(std::make_unique<testing::FaultyStore>(*store_), clock_,
                                            options, fs_);
    Result<std::unique_ptr<SecretStore>> secrets = SecretStore::Open(dir_.Sub("secrets"));
    ASSERT_TRUE(secrets) << secrets.error().ToString();
    plane_->SetSecretStore(std::move(*secrets));
    model::Node node;
    node.name = NodeId("node-a");
    node.cpu_millis = 8000;
    node.memory_bytes = std::int64_t{64} << 30;
    auto runtime = std::make_unique<testing::FakeRuntime>();
    runtime_ = runtime.get();
    plane_->AddLocalNode(node, std::move(runtime), "/runs");
    ASSERT_TRUE(plane_->Start());
  }

  // Everything the plane shows or keeps of job `id`, as text.
  std::string EverythingShownOf(JobId id) {
    std::string out;
    if (auto job = plane_->GetJob(id)) out += codec::ToJson(*job).dump();
    for (const model::Job& job : plane_->ListJobs(store::JobFilter{})) {
      out += codec::ToJson(job).dump();
    }
    if (auto decisions = plane_->Decisions(id)) {
      for (const model::Decision& decision : *decisions) out += codec::ToJson(decision).dump();
    }
    if (auto transitions = plane_->Transitions(id)) {
      for (const model::Transition& transition : *transitions) {
        out += codec::ToJson(transition).dump();
      }
    }
    if (auto stored = store_->ListJobs(store::JobFilter{})) {
      for (const model::Job& job : *stored) out += codec::ToJson(job).dump();
    }
    return out;
  }

  testing::TempDir dir_;
  testing::FakeClock clock_;
  testing::MemoryFileSystem fs_;
  std::unique_ptr<store::Store> store_ = store::NewMemoryStore();
  testing::FakeRuntime* runtime_ = nullptr;  // owned by plane_
  std::unique_ptr<ControlPlane> plane_;
};

TEST_F(ControlPlaneSecretsTest, DeliversTheValuesToTheLaunchedWorkersAlone) {
  ASSERT_TRUE(plane_->PutSecret("team-a", "wandb-key", kValue));
  auto submitted = plane_->Submit(kJob, spec::ParseOptions{}, "", MemberOf("team-a"));
  ASSERT_TRUE(submitted) << submitted.error().ToString();
  const JobId id = submitted->Ids().at(0);
  plane_->RunOnce();

  ASSERT_EQ(runtime_->Launched().size(), 1u);
  EXPECT_EQ(runtime_->Launched()[0].env.at("WANDB_API_KEY"), kValue);
  EXPECT_EQ(runtime_->Launched()[0].env.at("PLAIN"), "visible");
  const std::string shown = EverythingShownOf(id);
  EXPECT_THAT(shown, HasSubstr("wandb-key"));  // the secret's name is no secret
  EXPECT_THAT(shown, HasSubstr("visible"));
  EXPECT_THAT(shown, Not(HasSubstr(kValue)));
  // Listing names the secret, never its value.
  auto listed = plane_->ListSecrets("team-a");
  ASSERT_TRUE(listed);
  ASSERT_EQ(listed->size(), 1u);
  EXPECT_EQ((*listed)[0].name, "wandb-key");
}

TEST_F(ControlPlaneSecretsTest, RefusesAJobNamingASecretItsTeamDoesNotHave) {
  ASSERT_TRUE(plane_->PutSecret("team-b", "wandb-key", kValue));
  auto submitted = plane_->Submit(kJob, spec::ParseOptions{}, "", MemberOf("team-a"));
  ASSERT_FALSE(submitted);
  EXPECT_EQ(submitted.error().code, ErrorCode::kInvalidArgument);
  EXPECT_EQ(submitted.error().message,
            "job train: secret_env.WANDB_API_KEY names secret wandb-key, which team team-a does "
            "not have (drover secret set wandb-key --team team-a --from-file FILE)");
  EXPECT_TRUE(plane_->ListJobs(store::JobFilter{}).empty());
}

TEST_F(ControlPlaneSecretsTest, ASecretDeletedAfterSubmitFailsTheLaunchWithoutItsValue) {
  ASSERT_TRUE(plane_->PutSecret("team-a", "wandb-key", kValue));
  auto submitted = plane_->Submit(kJob, spec::ParseOptions{}, "", MemberOf("team-a"));
  ASSERT_TRUE(submitted) << submitted.error().ToString();
  const JobId id = submitted->Ids().at(0);
  ASSERT_TRUE(plane_->DeleteSecret("team-a", "wandb-key"));
  plane_->RunOnce();

  EXPECT_TRUE(runtime_->Launched().empty());
  auto job = plane_->GetJob(id);
  ASSERT_TRUE(job);
  ASSERT_FALSE(job->attempts.empty());
  ASSERT_FALSE(job->attempts.front().workers.empty());
  ASSERT_TRUE(job->attempts.front().workers.front().exit);
  EXPECT_EQ(job->attempts.front().workers.front().exit->message,
            "launch failed: secret_env.WANDB_API_KEY: team team-a has no secret wandb-key");
  EXPECT_THAT(EverythingShownOf(id), Not(HasSubstr(kValue)));
}

TEST_F(ControlPlaneSecretsTest, RefusesSecretEnvInAQueueOnSlurm) {
  model::Policy policy;
  model::QueueConfig hpc;
  hpc.name = "hpc";
  hpc.executor = model::ExecutorConfig{model::ExecutorKind::kSlurm, {}, {}};
  policy.queues.push_back(hpc);
  ASSERT_TRUE(plane_->SetPolicy(policy));
  ASSERT_TRUE(plane_->PutSecret("team-a", "wandb-key", kValue));
  auto submitted = plane_->Submit(std::string(kJob) + "queue: hpc\n", spec::ParseOptions{}, "",
                                  MemberOf("team-a"));
  ASSERT_FALSE(submitted);
  EXPECT_EQ(submitted.error().code, ErrorCode::kFailedPrecondition);
  EXPECT_THAT(submitted.error().message,
              HasSubstr("job train: queue hpc runs on Slurm, which cannot keep secret_env secret"));
  EXPECT_THAT(submitted.error().message, HasSubstr("use a Kubernetes or local queue"));
}

TEST_F(ControlPlaneSecretsTest, WithoutASecretStoreSecretsAreRefused) {
  ControlPlaneOptions options;
  options.run_loop = false;
  ControlPlane bare(store::NewMemoryStore(), clock_, options, fs_);
  EXPECT_EQ(bare.PutSecret("team-a", "k", "v").error().code, ErrorCode::kFailedPrecondition);
  EXPECT_EQ(bare.ListSecrets("team-a").error().code, ErrorCode::kFailedPrecondition);
  auto submitted = bare.Submit(kJob, spec::ParseOptions{}, "", MemberOf("team-a"));
  ASSERT_FALSE(submitted);
  EXPECT_EQ(submitted.error().code, ErrorCode::kInvalidArgument);
}

}  // namespace
}  // namespace drover::server
