// The two executables of the command line (drover/cli/cli.h): `drover` loads none of the
// server's shared libraries, and hands the verbs that run Drover itself to drover-full beside it,
// with the same arguments.

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <sstream>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

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

  // A line of the dynamic linker's log that names a symbol: "binding file FROM [0] to TO [0]:
  // normal symbol `SYMBOL'". `from` and `to` stay empty in a line without that shape.
  struct Binding {
    std::string line, from, to, symbol;
  };
  // The bindings the dynamic linker logs (LD_DEBUG=bindings) for `drover-full --help`.
  static void FullBinaryBindings(std::vector<Binding>& out) {
    int code = -1;
    const std::string log =
        testing::Shell("LD_DEBUG=bindings " + FullBinary() + " --help 2>&1", &code);
    ASSERT_EQ(code, 0) << log.substr(0, 2000);
    constexpr std::string_view kSymbol = "symbol `", kFrom = "binding file ", kTo = " to ";
    std::istringstream lines(log);
    for (std::string line; std::getline(lines, line);) {
      const std::size_t symbol = line.find(kSymbol);
      if (symbol == std::string::npos) continue;
      Binding binding{line, "", "", ""};
      const std::size_t name = symbol + kSymbol.size();
      binding.symbol = line.substr(name, line.find('\'', name) - name);
      const std::size_t from = line.find(kFrom);
      const std::size_t to = line.find(kTo);
      if (from != std::string::npos && to != std::string::npos && from < to) {
        binding.from = line.substr(from + kFrom.size(), to - from - kFrom.size());
        binding.to = line.substr(to + kTo.size());
      }
      out.push_back(std::move(binding));
    }
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

// `drover` (started at every command) and drover-supervise (whose spawner forks a supervisor
// per worker) carry the C++ runtime, fmt and yaml-cpp in themselves (drover_static_cxx_runtime,
// cmake/drover.cmake): they need libc alone, so that ld.so relocates no libstdc++ at each start,
// and no C++ shared library brings a second C++ runtime into them. Under the sanitizers
// (libubsan.so needs libstdc++.so) they link as every other binary does.
TEST_F(Binaries, TheClientAndTheSupervisorNeedOnlyLibc) {
  const std::filesystem::path dir = std::filesystem::path(DroverBinary()).parent_path();
  for (const std::filesystem::path& binary : {dir / "drover", dir / "drover-supervise"}) {
    int code = -1;
    const std::string needed =
        testing::Shell("readelf -d " + binary.string() + " | grep NEEDED", &code);
    ASSERT_EQ(code, 0) << binary << ": " << needed;
    EXPECT_THAT(needed, HasSubstr("[libc.so.6]")) << binary;
    for (const char* library :
         {"libstdc++", "libgcc_s", "libfmt", "libyaml-cpp", "libdate-tz", "libspdlog"}) {
      if (DROVER_STATIC_CXX_RUNTIME) {
        EXPECT_THAT(needed, Not(HasSubstr(library))) << binary;
      } else if (std::string_view(library) == "libstdc++") {
        EXPECT_THAT(needed, HasSubstr(library)) << binary;
      }
    }
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
  std::vector<Binding> bindings;
  ASSERT_NO_FATAL_FAILURE(FullBinaryBindings(bindings));
  bool stdcxx_seen = false;
  for (const Binding& binding : bindings) {
    if (binding.symbol != "malloc" || binding.line.find("normal symbol") == std::string::npos) {
      continue;
    }
    ASSERT_NE(binding.to, "") << binding.line;
    EXPECT_THAT(binding.to, HasSubstr(DROVER_FULL_MALLOC)) << binding.line;
    if (binding.line.find("libstdc++.so") != std::string::npos) stdcxx_seen = true;
  }
  EXPECT_TRUE(stdcxx_seen) << "no binding of libstdc++'s malloc in the linker's log";
}

// drover-full's server reserves an arena of mimalloc's (os::ReserveArena) through a weak
// reference: bound to libmimalloc where drover-full links it, left unbound (and the reservation
// skipped) under the sanitizers, whose allocator has no arenas.
TEST_F(Binaries, TheServerBinaryFindsMimallocsArenaReservationWhereItLinksMimalloc) {
  std::vector<Binding> bindings;
  ASSERT_NO_FATAL_FAILURE(FullBinaryBindings(bindings));
  // drover-full's own reference (libmimalloc binds its internal calls too).
  std::string to;
  for (const Binding& binding : bindings) {
    if (binding.symbol == "mi_reserve_os_memory" &&
        binding.from.find("drover-full") != std::string::npos) {
      to = binding.to;
    }
  }
  if (std::string_view(DROVER_FULL_MALLOC) == "libmimalloc.so") {
    EXPECT_THAT(to, HasSubstr("libmimalloc.so")) << "drover-full's mi_reserve_os_memory";
  } else {
    EXPECT_EQ(to, "") << "bound without mimalloc as the allocator";
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
