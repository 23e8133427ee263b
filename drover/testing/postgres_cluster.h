#pragma once

// A throwaway PostgreSQL cluster for tests (docs/operations.md "PostgreSQL store"): initdb in a
// fresh temporary directory (as the `postgres` user when running as root, since initdb refuses
// root), started on a free loopback port with fsync off, and stopped (pg_ctl -m fast) and
// removed by the destructor, also when a test fails. fsync is off unless asked for (benchmarks
// and durability tests: Options::fsync, or DROVER_TEST_PG_FSYNC=1 for Shared()). Needs Debian's
// postgresql package (the binaries of /usr/lib/postgresql/<version>/bin, or $DROVER_PG_BINDIR).
//
// Thread-safety: NewDatabase may be called from any thread; the rest from one.

#include <memory>
#include <string>

#include "drover/common/result.h"
#include "drover/common/thread_annotations.h"
#include "drover/store/store.h"

namespace drover::testing {

class PostgresCluster {
 public:
  // Creates and starts a cluster (a few seconds). kFailedPrecondition if PostgreSQL is not
  // installed; kInternal (with the server's log) if initdb or the start fails.
  struct Options {
    bool fsync = false;  // off: fast, and a crash of the machine may lose or damage the data
  };
  static Result<std::unique_ptr<PostgresCluster>> Start(Options options);
  static Result<std::unique_ptr<PostgresCluster>> Start() { return Start(Options{}); }
  // The cluster of this test program, started on first use and stopped at exit. Aborts the
  // program with the reason if it cannot start (the tests that need it cannot run without it).
  static PostgresCluster& Shared();

  ~PostgresCluster();
  PostgresCluster(const PostgresCluster&) = delete;
  PostgresCluster& operator=(const PostgresCluster&) = delete;

  // Creates an empty database and returns its URI ("postgresql://drover@127.0.0.1:PORT/NAME");
  // `prefix` is a readable start of its name, a counter makes it unique.
  Result<std::string> NewDatabase(const std::string& prefix = "test");

  int port() const { return port_; }
  const std::string& dir() const { return dir_; }

  // pg_ctl stop (mode "fast" or "immediate", the crash stop) and start again on the same port
  // and data. kInternal with the server's log on failure.
  Status Stop(const std::string& mode = "fast");
  Status Restart();

 private:
  PostgresCluster() = default;
  // Runs `command` (a shell line) as the cluster's owner; kInternal with its output on failure.
  Status RunAsOwner(const std::string& command) const;

  std::string bindir_;
  std::string dir_;  // removed by the destructor
  int port_ = 0;
  bool fsync_ = false;
  bool running_ = false;
  Mutex mutex_;
  int databases_ GUARDED_BY(mutex_) = 0;
};

// The PostgreSQL store at `uri` as a leading server has it: its writes fenced by the database's
// leader lease, taken here for an hour under `holder` (every write first checks the lease's
// epoch: store::WriteFence). For benchmarks that measure a server's write path. kInternal if
// another holder has the lease.
Result<std::unique_ptr<store::Store>> OpenLeaderStore(const std::string& uri,
                                                      const std::string& holder);

}  // namespace drover::testing
