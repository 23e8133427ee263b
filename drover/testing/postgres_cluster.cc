#include "drover/testing/postgres_cluster.h"

#include <fmt/format.h>
#include <netinet/in.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <sstream>
#include <vector>

#include "drover/store/postgres_lease.h"
#include "drover/store/postgres_store.h"

namespace drover::testing {
namespace {

// The newest /usr/lib/postgresql/<version>/bin holding initdb, or $DROVER_PG_BINDIR.
std::string FindBinDir() {
  if (const char* env = getenv("DROVER_PG_BINDIR"); env != nullptr && *env != '\0') return env;
  std::vector<std::string> found;
  std::error_code ec;
  for (const auto& entry : std::filesystem::directory_iterator("/usr/lib/postgresql", ec)) {
    if (std::filesystem::exists(entry.path() / "bin" / "initdb")) {
      found.push_back((entry.path() / "bin").string());
    }
  }
  if (found.empty()) return "";
  std::sort(found.begin(), found.end(), [](const std::string& a, const std::string& b) {
    return a.size() != b.size() ? a.size() < b.size() : a < b;
  });
  return found.back();
}

// A loopback port free now (bound to port 0 and released).
int FreePort() {
  const int fd = socket(AF_INET, SOCK_STREAM, 0);
  if (fd < 0) return 0;
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t length = sizeof(address);
  int port = 0;
  if (bind(fd, reinterpret_cast<sockaddr*>(&address), sizeof(address)) == 0 &&
      getsockname(fd, reinterpret_cast<sockaddr*>(&address), &length) == 0) {
    port = ntohs(address.sin_port);
  }
  close(fd);
  return port;
}

// Runs a shell line, returning its exit status and its output (stdout and stderr).
std::pair<int, std::string> Shell(const std::string& command) {
  std::string output;
  FILE* pipe = popen((command + " 2>&1").c_str(), "r");
  if (pipe == nullptr) return {-1, "popen failed"};
  char buffer[4096];
  while (std::size_t n = fread(buffer, 1, sizeof(buffer), pipe)) output.append(buffer, n);
  const int status = pclose(pipe);
  return {status, output};
}

std::string ReadFile(const std::string& path) {
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

}  // namespace

Status PostgresCluster::RunAsOwner(const std::string& command) const {
  const std::string line =
      getuid() == 0 ? fmt::format("runuser -u postgres -- {}", command) : command;
  auto [status, output] = Shell(line);
  if (status != 0) {
    return Internal(fmt::format("`{}` failed ({}): {}\nserver log:\n{}", line, status, output,
                                ReadFile(dir_ + "/log")));
  }
  return OkStatus();
}

Result<std::unique_ptr<PostgresCluster>> PostgresCluster::Start(Options options) {
  std::unique_ptr<PostgresCluster> cluster(new PostgresCluster());
  cluster->fsync_ = options.fsync;
  cluster->bindir_ = FindBinDir();
  if (cluster->bindir_.empty()) {
    return FailedPrecondition(
        "PostgreSQL is not installed (no /usr/lib/postgresql/*/bin/initdb; `make deps` installs "
        "postgresql-15, or set DROVER_PG_BINDIR)");
  }
  std::string pattern = (std::filesystem::temp_directory_path() / "drover-pg-XXXXXX").string();
  if (mkdtemp(pattern.data()) == nullptr) return Internal("mkdtemp failed for the cluster");
  cluster->dir_ = pattern;
  if (getuid() == 0) {
    auto [status, output] = Shell(fmt::format("chown postgres '{}'", cluster->dir_));
    if (status != 0) return Internal(fmt::format("chown postgres {}: {}", cluster->dir_, output));
  }
  DROVER_RETURN_IF_ERROR(cluster->RunAsOwner(
      fmt::format("{}/initdb -D '{}/data' -A trust -U drover -E UTF8 --locale=C.UTF-8 --no-sync",
                  cluster->bindir_, cluster->dir_)));
  // A port taken between FreePort and the start makes the start fail: try a few.
  Status started = Internal("no free port");
  for (int attempt = 0; attempt < 3 && !started; ++attempt) {
    cluster->port_ = FreePort();
    started = cluster->Restart();
  }
  DROVER_RETURN_IF_ERROR(started);
  return cluster;
}

PostgresCluster& PostgresCluster::Shared() {
  static const std::unique_ptr<PostgresCluster> shared = [] {
    const char* fsync = getenv("DROVER_TEST_PG_FSYNC");
    auto cluster = Start({.fsync = fsync != nullptr && std::string(fsync) == "1"});
    if (!cluster) {
      std::cerr << "cannot start the test PostgreSQL cluster: " << cluster.error().ToString()
                << "\n";
      abort();
    }
    return *std::move(cluster);
  }();
  return *shared;
}

Status PostgresCluster::Restart() {
  DROVER_RETURN_IF_ERROR(
      RunAsOwner(fmt::format("{}/pg_ctl -D '{}/data' -l '{}/log' -w -t 60 start -o \"-p {} -k '{}' "
                             "-c listen_addresses=127.0.0.1 -c fsync=off -c max_connections=200\"",
                             bindir_, dir_, dir_, port_, dir_)));
  running_ = true;
  return OkStatus();
}

Status PostgresCluster::Stop(const std::string& mode) {
  DROVER_RETURN_IF_ERROR(
      RunAsOwner(fmt::format("{}/pg_ctl -D '{}/data' -m {} -w -t 60 stop", bindir_, dir_, mode)));
  running_ = false;
  return OkStatus();
}

Result<std::string> PostgresCluster::NewDatabase(const std::string& prefix) {
  std::string name;
  {
    MutexLock lock(mutex_);
    name = fmt::format("{}_{}", prefix, ++databases_);
  }
  auto [status, output] =
      Shell(fmt::format("{}/psql -X -q 'postgresql://drover@127.0.0.1:{}/postgres' -c 'CREATE "
                        "DATABASE \"{}\"'",
                        bindir_, port_, name));
  if (status != 0) return Internal(fmt::format("create database {}: {}", name, output));
  return fmt::format("postgresql://drover@127.0.0.1:{}/{}", port_, name);
}

PostgresCluster::~PostgresCluster() {
  if (running_) {
    Status stopped = Stop("immediate");
    if (!stopped) std::cerr << "stopping the test PostgreSQL cluster: " << stopped.error().message;
  }
  std::error_code ec;
  if (!dir_.empty()) std::filesystem::remove_all(dir_, ec);
}

Result<std::unique_ptr<store::Store>> OpenLeaderStore(const std::string& uri,
                                                      const std::string& holder) {
  auto fence = std::make_shared<store::WriteFence>(store::WriteFence::kNotLeader);
  DROVER_ASSIGN_OR_RETURN(auto opened, store::OpenPostgresStore(uri, {.fence = fence}));
  DROVER_ASSIGN_OR_RETURN(auto lease, store::PostgresLease::Open(uri));
  DROVER_ASSIGN_OR_RETURN(auto epoch,
                          lease->TryAcquire(holder, "http://" + holder, kMillisPerHour));
  if (!epoch) return Internal(fmt::format("{}: the leader lease of {} is taken", holder, uri));
  fence->Set(*epoch);
  return opened;
}

}  // namespace drover::testing
