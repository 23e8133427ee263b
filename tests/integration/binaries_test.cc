// The two executables of the command line (drover/cli/cli.h): `drover` loads none of the
// server's shared libraries, and hands the verbs that run Drover itself to drover-full beside it,
// with the same arguments.

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <sstream>
#include <string>
#include <string_view>

#include "drover/testing/shell.h"
#include "tests/integration/harness.h"

namespace drover::integration {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

class Binaries : public IntegrationTest {
 protected:
  static std::string FullBinary() {
    return (std::filesystem::path(DroverBinary()).parent_path() / "drover-full").string();
  }
};

// What `drover submit` pays for at each start: the shared objects it loads. libpq (with its
// Kerberos, LDAP and GnuTLS), SQLite and libevent are drover-full's alone, and so are OpenSSL
// and cpp-httplib (the client speaks plain HTTP itself: api/http_client.h).
TEST_F(Binaries, TheClientLoadsNoServerLibrary) {
  int code = -1;
  const std::string client = testing::Shell("ldd " + DroverBinary(), &code);
  ASSERT_EQ(code, 0) << client;
  const std::string full = testing::Shell("ldd " + FullBinary(), &code);
  ASSERT_EQ(code, 0) << full;
  for (const char* library : {"libpq.so", "libsqlite3.so", "libevent-", "libssl.so", "libcrypto.so",
                              "libcpp-httplib.so"}) {
    EXPECT_THAT(full, HasSubstr(library));
    EXPECT_THAT(client, Not(HasSubstr(library)));
  }
}

// libslurm is drover-slurm-submit's alone (exec/slurm/submit_helper.h says why): no drover
// binary loads it, so a Slurm library's fatal() or globals never reach the server.
TEST_F(Binaries, OnlyTheSubmissionHelperLoadsLibslurm) {
  const std::string helper =
      (std::filesystem::path(DroverBinary()).parent_path() / "drover-slurm-submit").string();
  int code = -1;
  const std::string helper_libraries = testing::Shell("ldd " + helper, &code);
  ASSERT_EQ(code, 0) << helper_libraries;
  EXPECT_THAT(helper_libraries, HasSubstr("libslurm.so"));
  for (const std::string& binary : {DroverBinary(), FullBinary()}) {
    EXPECT_THAT(testing::Shell("ldd " + binary), Not(HasSubstr("libslurm"))) << binary;
  }
}

// --slurm-submit takes `helper` or `sbatch`; anything else is usage (2), naming the flag, and no
// server starts.
TEST_F(Binaries, AnUnknownSlurmSubmitModeIsRefusedByName) {
  CommandResult bad =
      RunDrover({"server", "--data", dir_.Sub("data"), "--slurm-submit", "libslurm"}, dir_.path());
  EXPECT_EQ(bad.exit_code, 2) << bad.out << bad.err;
  EXPECT_THAT(bad.err, HasSubstr("--slurm-submit"));
  EXPECT_THAT(bad.err, HasSubstr("libslurm"));
  EXPECT_FALSE(std::filesystem::exists(dir_.Sub("data")));
}

// drover-full's allocator is mimalloc (ASan's under the sanitizers: DROVER_FULL_MALLOC names the
// library): every library's malloc binds to it, libstdc++'s operator new's included. The dynamic
// linker's log of its bindings says so.
TEST_F(Binaries, TheServerBinaryAllocatesWithMimalloc) {
  int code = -1;
  const std::string bindings =
      testing::Shell("LD_DEBUG=bindings " + FullBinary() + " --help 2>&1", &code);
  ASSERT_EQ(code, 0) << bindings.substr(0, 2000);
  bool stdcxx_seen = false;
  std::istringstream lines(bindings);
  for (std::string line; std::getline(lines, line);) {
    if (line.find("normal symbol `malloc'") == std::string::npos) continue;
    const std::size_t to = line.find(" to ");
    ASSERT_NE(to, std::string::npos) << line;
    EXPECT_THAT(line.substr(to), HasSubstr(DROVER_FULL_MALLOC)) << line;
    if (line.find("libstdc++.so") != std::string::npos) stdcxx_seen = true;
  }
  EXPECT_TRUE(stdcxx_seen) << "no binding of libstdc++'s malloc in the linker's log";
}

// drover-full's server reserves an arena of mimalloc's (os::ReserveArena) through a weak
// reference: bound to libmimalloc where drover-full links it, left unbound (and the reservation
// skipped) under the sanitizers, whose allocator has no arenas.
TEST_F(Binaries, TheServerBinaryFindsMimallocsArenaReservationWhereItLinksMimalloc) {
  int code = -1;
  const std::string bindings =
      testing::Shell("LD_DEBUG=bindings " + FullBinary() + " --help 2>&1", &code);
  ASSERT_EQ(code, 0) << bindings.substr(0, 2000);
  std::string binding;
  std::istringstream lines(bindings);
  for (std::string line; std::getline(lines, line);) {
    // drover-full's own reference (libmimalloc binds its internal calls too).
    const std::size_t from = line.find("binding file ");
    const std::size_t to = line.find(" to ");
    if (from == std::string::npos || to == std::string::npos ||
        line.find("symbol `mi_reserve_os_memory'") == std::string::npos) {
      continue;
    }
    if (line.substr(from, to - from).find("drover-full") != std::string::npos) binding = line;
  }
  if (std::string_view(DROVER_FULL_MALLOC) == "libmimalloc.so") {
    ASSERT_NE(binding, "") << "no binding of drover-full's mi_reserve_os_memory";
    EXPECT_THAT(binding.substr(binding.find(" to ")), HasSubstr("libmimalloc.so")) << binding;
  } else {
    EXPECT_EQ(binding, "") << "bound without mimalloc as the allocator";
  }
}

// `drover server --help` is drover-full's help, with the server's own options; a flag only
// drover-full could judge is refused by it, as usage (2), global options before the verb kept.
TEST_F(Binaries, ServerVerbsRunDroverFullWithTheSameArguments) {
  CommandResult help = RunDrover({"server", "--help"}, dir_.path());
  EXPECT_EQ(help.exit_code, 0) << help.err;
  EXPECT_THAT(help.out, HasSubstr("--store"));
  EXPECT_THAT(help.out, HasSubstr("--agent-listen"));
  CommandResult bad = RunDrover({"-o", "json", "simulate", "--no-such-flag"}, dir_.path());
  EXPECT_EQ(bad.exit_code, 2);
  EXPECT_THAT(bad.err, HasSubstr("--no-such-flag"));
}

// A `drover` copied alone still runs the client's verbs, and says what is missing for the rest.
TEST_F(Binaries, WithoutDroverFullBesideItAServerVerbSaysSo) {
  const std::string alone = dir_.Sub("drover");
  std::filesystem::copy_file(DroverBinary(), alone);
  WriteFile(dir_.Sub("job.yaml"), "kind: Job\nname: j\ncommand: [\"true\"]\n");
  int code = -1;
  testing::Shell(alone + " validate " + dir_.Sub("job.yaml"), &code);
  EXPECT_EQ(code, 0);
  // (Bounded: were it to find some server after all, it would keep serving.)
  const std::string err =
      testing::Shell("timeout 60 " + alone + " server --listen 127.0.0.1:0 2>&1", &code);
  EXPECT_EQ(code, 1);
  EXPECT_THAT(err, HasSubstr("'server' is a verb of drover-full, which is not beside " + alone));
  // The lean binary has no TLS: a command for an https:// server is drover-full's too.
  const std::string https =
      testing::Shell(alone + " --server HTTPS://127.0.0.1:1 nodes 2>&1", &code);
  EXPECT_EQ(code, 1);
  EXPECT_THAT(https, HasSubstr("an https:// server is spoken to by drover-full, which is not "
                               "beside " +
                               alone));
}

}  // namespace
}  // namespace drover::integration
