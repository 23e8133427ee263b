#include "drover/server/secret_store.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <sys/stat.h>

#include <filesystem>
#include <fstream>
#include <string>

#include "drover/testing/temp_dir.h"

namespace drover::server {
namespace {

using ::testing::ElementsAre;
using ::testing::Field;
using ::testing::HasSubstr;
using ::testing::IsEmpty;

int ModeOf(const std::string& path) {
  struct stat info {};
  EXPECT_EQ(stat(path.c_str(), &info), 0) << path;
  return static_cast<int>(info.st_mode & 07777);
}

std::unique_ptr<SecretStore> OpenStore(const std::string& dir) {
  Result<std::unique_ptr<SecretStore>> store = SecretStore::Open(dir);
  EXPECT_TRUE(store) << store.error().ToString();
  return std::move(*store);
}

TEST(SecretStore, PutsGetsListsAndDeletes) {
  testing::TempDir tmp;
  auto store = OpenStore(tmp.Sub("secrets"));
  ASSERT_TRUE(store->Put("team-a", "wandb-key", "s3cr3t\nline two"));
  ASSERT_TRUE(store->Put("team-a", "hf.token", "hf"));
  EXPECT_EQ(*store->Get("team-a", "wandb-key"), "s3cr3t\nline two");
  EXPECT_TRUE(store->Exists("team-a", "wandb-key"));
  EXPECT_FALSE(store->Exists("team-b", "wandb-key"));
  EXPECT_THAT(*store->List("team-a"), ElementsAre(Field(&SecretInfo::name, "hf.token"),
                                                  Field(&SecretInfo::name, "wandb-key")));
  EXPECT_THAT(*store->List("team-b"), IsEmpty());

  ASSERT_TRUE(store->Put("team-a", "wandb-key", "rotated"));
  EXPECT_EQ(*store->Get("team-a", "wandb-key"), "rotated");

  ASSERT_TRUE(store->Delete("team-a", "wandb-key"));
  EXPECT_FALSE(store->Exists("team-a", "wandb-key"));
  EXPECT_EQ(store->Get("team-a", "wandb-key").error().code, ErrorCode::kNotFound);
  EXPECT_EQ(store->Get("team-a", "wandb-key").error().message,
            "team team-a has no secret wandb-key");
  EXPECT_EQ(store->Delete("team-a", "wandb-key").error().code, ErrorCode::kNotFound);
}

TEST(SecretStore, KeepsFilesReadableByTheServersUserAlone) {
  testing::TempDir tmp;
  std::filesystem::create_directories(tmp.Sub("secrets/team-a"));
  chmod(tmp.Sub("secrets").c_str(), 0755);
  chmod(tmp.Sub("secrets/team-a").c_str(), 0777);
  std::ofstream(tmp.Sub("secrets/team-a/old")) << "value";
  chmod(tmp.Sub("secrets/team-a/old").c_str(), 0644);

  auto store = OpenStore(tmp.Sub("secrets"));
  EXPECT_EQ(ModeOf(tmp.Sub("secrets")), 0700);
  EXPECT_EQ(ModeOf(tmp.Sub("secrets/team-a")), 0700);
  EXPECT_EQ(ModeOf(tmp.Sub("secrets/team-a/old")), 0600);

  const mode_t old_umask = umask(0);  // a permissive umask does not widen the modes
  ASSERT_TRUE(store->Put("team-b", "key", "v"));
  umask(old_umask);
  EXPECT_EQ(ModeOf(tmp.Sub("secrets/team-b")), 0700);
  EXPECT_EQ(ModeOf(tmp.Sub("secrets/team-b/key")), 0600);
}

TEST(SecretStore, ReopensWithItsIndexAndRemovesLeftoverTemporaryFiles) {
  testing::TempDir tmp;
  {
    auto store = OpenStore(tmp.Sub("secrets"));
    ASSERT_TRUE(store->Put("team-a", "key", "v1"));
  }
  std::ofstream(tmp.Sub("secrets/team-a/.key.tmp.12345")) << "half-written";
  std::ofstream(tmp.Sub("secrets/team-a/not a name")) << "ignored";
  auto store = OpenStore(tmp.Sub("secrets"));
  EXPECT_THAT(*store->List("team-a"), ElementsAre(Field(&SecretInfo::name, "key")));
  EXPECT_EQ(*store->Get("team-a", "key"), "v1");
  EXPECT_FALSE(std::filesystem::exists(tmp.Sub("secrets/team-a/.key.tmp.12345")));
}

TEST(SecretStore, RefusesPathTraversalAndBadValues) {
  testing::TempDir tmp;
  auto store = OpenStore(tmp.Sub("secrets"));
  for (const char* team : {"..", ".", ".hidden", "a/b", "", "team a"}) {
    Status put = store->Put(team, "key", "v");
    ASSERT_FALSE(put) << team;
    EXPECT_EQ(put.error().code, ErrorCode::kInvalidArgument) << team;
    EXPECT_THAT(put.error().message, HasSubstr("team")) << team;
  }
  for (const char* name : {"..", ".", ".key", "a/b", "../../etc/passwd", ""}) {
    Status put = store->Put("team-a", name, "v");
    ASSERT_FALSE(put) << name;
    EXPECT_EQ(put.error().code, ErrorCode::kInvalidArgument) << name;
    EXPECT_THAT(put.error().message, HasSubstr("invalid secret name")) << name;
    EXPECT_EQ(store->Get("team-a", name).error().code, ErrorCode::kInvalidArgument) << name;
  }
  EXPECT_EQ(store->Put("team-a", "key", "").error().message, "the secret's value is empty");
  EXPECT_EQ(store->Put("team-a", "key", std::string(kMaxSecretBytes + 1, 'x')).error().message,
            "the secret's value is 65537 bytes; at most 65536 are allowed");
  EXPECT_EQ(store->Put("team-a", "key", std::string("ab\0cd", 5)).error().message,
            "the secret's value holds a NUL byte at offset 2; an environment variable cannot");
  // None of them wrote anything.
  EXPECT_TRUE(std::filesystem::is_empty(tmp.Sub("secrets")));

  ASSERT_TRUE(store->Put("team-a", "key", std::string(kMaxSecretBytes, 'x')));
  EXPECT_EQ(store->Get("team-a", "key")->size(), static_cast<std::size_t>(kMaxSecretBytes));
}

}  // namespace
}  // namespace drover::server
