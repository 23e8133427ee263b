// HelperProcess with real children: a shell that reports what it was given on descriptor 3.

#include "drover/os/helper_process.h"

#include <fcntl.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <string>

namespace drover::os {
namespace {

using ::testing::HasSubstr;

// Everything the child's end reads until it closes.
std::string ReadAll(int fd) {
  std::string out;
  char buffer[4096];
  ssize_t n;
  while ((n = read(fd, buffer, sizeof buffer)) > 0) out.append(buffer, static_cast<size_t>(n));
  return out;
}

HelperProcess::Options Shell(const std::string& script, int type = SOCK_STREAM,
                             std::vector<std::string> environment = {}) {
  return {.program = "/bin/sh",
          .args = {"-c", script},
          .socket_type = type,
          .environment = std::move(environment)};
}

TEST(HelperProcess, TheChildHasTheSocketOnThreeAndNoOtherDescriptorOfOurs) {
  // Not close-on-exec: posix_spawn alone would pass it on.
  const int ours = fcntl(STDERR_FILENO, F_DUPFD, 10);
  ASSERT_GE(ours, 0);
  HelperProcess helper(Shell("ls /proc/self/fd >&3; read -r line <&0 || echo stdin-empty >&3"));
  ASSERT_TRUE(helper.Start());
  const std::string seen = ReadAll(helper.socket());
  close(ours);
  // 0, 1, 2, 3 and the descriptor ls itself opened to list the folder.
  EXPECT_THAT(seen, HasSubstr("0\n1\n2\n3\n"));
  EXPECT_THAT(seen, ::testing::Not(HasSubstr("\n" + std::to_string(ours) + "\n")));
  EXPECT_THAT(seen, HasSubstr("stdin-empty"));
}

TEST(HelperProcess, TheEnvironmentIsOursWithTheOverridesInPlace) {
  setenv("DROVER_HELPER_TEST_KEEP", "kept", 1);
  setenv("DROVER_HELPER_TEST_SET", "old", 1);
  HelperProcess helper(Shell("env >&3", SOCK_STREAM,
                             {"DROVER_HELPER_TEST_SET=new", "DROVER_HELPER_TEST_ADD=added"}));
  ASSERT_TRUE(helper.Start());
  const std::string env = ReadAll(helper.socket());
  unsetenv("DROVER_HELPER_TEST_KEEP");
  unsetenv("DROVER_HELPER_TEST_SET");
  EXPECT_THAT(env, HasSubstr("DROVER_HELPER_TEST_KEEP=kept\n"));
  EXPECT_THAT(env, HasSubstr("DROVER_HELPER_TEST_SET=new\n"));
  EXPECT_THAT(env, ::testing::Not(HasSubstr("DROVER_HELPER_TEST_SET=old")));
  EXPECT_THAT(env, HasSubstr("DROVER_HELPER_TEST_ADD=added\n"));
}

TEST(HelperProcess, StopKillsAndReapsAndStartIsIdempotentWhileRunning) {
  HelperProcess helper(Shell("exec sleep 600"));
  ASSERT_TRUE(helper.Start());
  const pid_t pid = helper.pid();
  ASSERT_GT(pid, 0);
  ASSERT_TRUE(helper.Start());
  EXPECT_EQ(helper.pid(), pid);
  helper.Stop();
  EXPECT_EQ(helper.pid(), 0);
  EXPECT_EQ(helper.socket(), -1);
  // Reaped: no child of ours by that pid any more.
  EXPECT_EQ(waitpid(pid, nullptr, WNOHANG), -1);
  EXPECT_EQ(errno, ECHILD);
}

TEST(HelperProcess, TheChannelHasTheTypeAsked) {
  HelperProcess stream(Shell("exec sleep 600", SOCK_STREAM));
  HelperProcess packets(Shell("exec sleep 600", SOCK_SEQPACKET));
  ASSERT_TRUE(stream.Start());
  ASSERT_TRUE(packets.Start());
  int type = 0;
  socklen_t length = sizeof type;
  ASSERT_EQ(getsockopt(packets.socket(), SOL_SOCKET, SO_TYPE, &type, &length), 0);
  EXPECT_EQ(type, SOCK_SEQPACKET);
  ASSERT_EQ(getsockopt(stream.socket(), SOL_SOCKET, SO_TYPE, &type, &length), 0);
  EXPECT_EQ(type, SOCK_STREAM);
}

TEST(HelperProcess, AProgramThatCannotStartIsNamed) {
  HelperProcess helper({.program = "/nonexistent/helper",
                        .args = {},
                        .socket_type = SOCK_STREAM,
                        .environment = {}});
  Status started = helper.Start();
  ASSERT_FALSE(started);
  EXPECT_THAT(started.error().message, HasSubstr("cannot start /nonexistent/helper"));
  EXPECT_EQ(helper.pid(), 0);
}

}  // namespace
}  // namespace drover::os
