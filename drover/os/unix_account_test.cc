#include "drover/os/unix_account.h"

#include <fcntl.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <future>
#include <thread>

#include "drover/testing/unix_account.h"

namespace drover::os {
namespace {

TEST(AccountToRunAs, NoAccountNamedIsNoneToSwitchTo) {
  Result<std::optional<UnixAccount>> account = AccountToRunAs("", false, "on node n1");
  ASSERT_TRUE(account) << account.error().ToString();
  EXPECT_FALSE(account->has_value());
}

// Not root, this process cannot switch: whatever the account, the job runs as this user. As
// root (CI), checked in a child that became nobody (uid 65534) first.
TEST(AccountToRunAs, NotRootItSwitchesToNothing) {
  auto switches_to_nothing = [] {
    for (const char* name : {"root", "drover-no-such-account"}) {
      Result<std::optional<UnixAccount>> account = AccountToRunAs(name, false, "on node n1");
      if (!account || account->has_value()) return false;
    }
    return true;
  };
  if (geteuid() != 0) {
    EXPECT_TRUE(switches_to_nothing());
    return;
  }
  const pid_t child = fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    const bool ok = setgid(65534) == 0 && setuid(65534) == 0 && switches_to_nothing();
    _exit(ok ? 0 : 1);
  }
  int status = 0;
  ASSERT_EQ(waitpid(child, &status, 0), child);
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0);
}

// As root (CI): the account looked up, root only with leave, an unknown account named with where.
TEST(AccountToRunAs, AsRootItIsTheAccountRootOnlyWithLeave) {
  if (geteuid() != 0) GTEST_SKIP() << "needs root, to switch and to create an account";
  auto created = testing::ScopedUnixAccount::Create("drover-o");
  ASSERT_TRUE(created) << created.error().ToString();
  Result<std::optional<UnixAccount>> account =
      AccountToRunAs((*created)->name(), false, "on node n1");
  ASSERT_TRUE(account && account->has_value());
  EXPECT_EQ((*account)->name, (*created)->name());
  EXPECT_EQ((*account)->uid, (*created)->uid());
  EXPECT_EQ((*account)->gid, (*created)->gid());
  EXPECT_EQ((*account)->home, (*created)->home());

  Result<std::optional<UnixAccount>> root = AccountToRunAs("root", false, "on node n1");
  ASSERT_FALSE(root);
  EXPECT_EQ(root.error().code, ErrorCode::kPermissionDenied);
  EXPECT_EQ(root.error().message,
            "job would run as root; the policy's accounts.allow_root does not list its owner");
  root = AccountToRunAs("root", true, "on node n1");
  ASSERT_TRUE(root && root->has_value());
  EXPECT_EQ((*root)->uid, 0u);

  Result<std::optional<UnixAccount>> unknown =
      AccountToRunAs("drover-no-such-account", true, "on node n1");
  ASSERT_FALSE(unknown);
  EXPECT_EQ(unknown.error().code, ErrorCode::kNotFound);
  EXPECT_EQ(unknown.error().message, "no such Unix account drover-no-such-account on node n1");
}

// As root (CI): while this thread acts as an account, files only root may read are closed to
// it, and to it only (another thread of the process still reads them); after, open again.
TEST(WithFileIdentityOf, OnlyThisThreadActsAsTheAccountAndOnlyMeanwhile) {
  if (geteuid() != 0) GTEST_SKIP() << "needs root, to create an account and to switch";
  auto created = testing::ScopedUnixAccount::Create("drover-f");
  ASSERT_TRUE(created) << created.error().ToString();
  const UnixAccount account{(*created)->name(), (*created)->uid(), (*created)->gid(), "/"};
  char path[] = "/tmp/drover-identity-XXXXXX";
  const int fd = mkstemp(path);  // mode 0600, root's
  ASSERT_GE(fd, 0);
  close(fd);
  auto readable = [&] {
    const int opened = open(path, O_RDONLY | O_CLOEXEC);
    if (opened >= 0) close(opened);
    return opened >= 0;
  };
  std::promise<void> switched;
  std::promise<bool> other_thread_read;
  std::thread other([&] {
    switched.get_future().wait();
    other_thread_read.set_value(readable());
  });
  bool inside = true;
  bool other_read = false;
  Status acted = WithFileIdentityOf(account, [&] {
    inside = readable();
    switched.set_value();
    other_read = other_thread_read.get_future().get();
  });
  other.join();
  ASSERT_TRUE(acted) << acted.error().ToString();
  EXPECT_FALSE(inside) << "this thread still read a root-only file";
  EXPECT_TRUE(other_read) << "another thread took the account's identity too";
  EXPECT_TRUE(readable()) << "this thread's own identity was not restored";
  unlink(path);
}

}  // namespace
}  // namespace drover::os
