#pragma once

// The leader lease of the servers sharing one PostgreSQL database (docs/architecture.md "Leader
// lease", docs/operations.md "Two servers on PostgreSQL"): the one row of table `leader`
// (holder, url, epoch, expires_at). A server takes the lease when there is none or it has
// expired, which adds one to the epoch; the holder renews it before it expires. Expiry is judged
// by the database's clock (now()) alone, so the servers' clocks do not matter. The epoch is what
// fences the leader's writes (WriteFence, postgres_store.h).
//
// Thread-safety: not thread-safe (one connection); one thread at a time.

#include <cstdint>
#include <memory>
#include <optional>
#include <string>

#include "drover/common/clock.h"
#include "drover/common/result.h"

namespace drover::store {

// The lease as stored.
struct LeaseHolder {
  std::string holder;  // the holding server's instance id
  std::string url;     // its advertised API URL
  std::int64_t epoch = 0;
  bool expired = false;  // by the database's clock, when read
};

class PostgresLease {
 public:
  // Connects to `connection` (a database OpenPostgresStore has migrated). kUnavailable if it
  // cannot be reached.
  static Result<std::unique_ptr<PostgresLease>> Open(const std::string& connection);
  ~PostgresLease();
  PostgresLease(const PostgresLease&) = delete;
  PostgresLease& operator=(const PostgresLease&) = delete;

  // Takes the lease for `holder` (advertising `url`) for `duration` ms if nobody holds it or it
  // has expired: the new epoch (one more than the last). nullopt if another holds it unexpired.
  // kUnavailable if the database cannot be reached.
  Result<std::optional<std::int64_t>> TryAcquire(const std::string& holder, const std::string& url,
                                                 DurationMs duration);
  // Extends the lease of `epoch` to `duration` ms from now (also when it expired and nobody took
  // it since). false: a newer epoch holds it (this server lost it). kUnavailable as TryAcquire.
  Result<bool> Renew(std::int64_t epoch, DurationMs duration);
  // Lets the lease of `epoch` expire now, so that a standby takes over without waiting; nothing
  // if a newer epoch holds it.
  Status Release(std::int64_t epoch);
  // The lease as stored; nullopt if nobody ever took it.
  Result<std::optional<LeaseHolder>> Current();

 private:
  struct Connection;
  explicit PostgresLease(std::unique_ptr<Connection> connection);
  std::unique_ptr<Connection> connection_;
};

}  // namespace drover::store
