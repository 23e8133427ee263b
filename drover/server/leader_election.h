#pragma once

// LeaderElection: the leader lease of servers sharing one PostgreSQL database, from a server's
// side (docs/architecture.md "Leader lease", docs/operations.md "Two servers on PostgreSQL"). A
// server campaigns (tries to take the lease every renew interval, a standby meanwhile), then
// renews it on a thread of its own while it leads, and learns when a newer epoch took it.
//
// Thread-safety: Campaign and KeepRenewing from one thread, one after the other; Stop from any
// thread, once they returned; on_lost is called from the renewal thread, on_lapsed from the
// watchdog thread.

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <thread>

#include "drover/common/clock.h"
#include "drover/common/thread_annotations.h"
#include "drover/store/postgres_lease.h"

namespace drover::server {

struct LeaseOptions {
  // --lease: how long a lease lasts unrenewed; a dead leader's standby takes over after at most
  // this (plus one renew interval).
  DurationMs duration = 10 * kMillisPerSecond;
  // --lease-renew: how often the leader renews it, and a standby tries to take it. Less than
  // duration (a renewal may fail once or twice without losing the lease).
  DurationMs renew_every = 2 * kMillisPerSecond;
};

class LeaderElection {
 public:
  // `holder`: this server's instance id (unique per process); `url`: its advertised API URL.
  LeaderElection(std::unique_ptr<store::PostgresLease> lease, std::string holder, std::string url,
                 LeaseOptions options);
  ~LeaderElection();  // Stop()
  LeaderElection(const LeaderElection&) = delete;
  LeaderElection& operator=(const LeaderElection&) = delete;

  // Tries to take the lease every renew interval until it does (its epoch) or `stopping()` is
  // true (nullopt). While another server leads, calls standby(its url) after each try (an
  // unreachable database is logged and tried again).
  std::optional<std::int64_t> Campaign(const std::function<bool()>& stopping,
                                       const std::function<void(const std::string&)>& standby);

  // Renews the lease of `epoch` every renew interval on a thread of its own until Stop(); calls
  // on_lost(reason) once, and stops renewing, when a newer epoch holds it. An unreachable
  // database is tried again, but the lease is only trusted for `duration` less one renew
  // interval from the start of its last successful renewal (the database's expiry is later
  // still, so this holds however long a renewal blocks): past that, on_lapsed(reason) is called
  // once, from a watchdog thread, so that the server stops acting as leader (self-fencing)
  // before a standby can take over; from then on the renewal thread only tries to release the
  // lease, and calls on_lost once the database answered.
  void KeepRenewing(std::int64_t epoch, std::function<void(const std::string&)> on_lost,
                    std::function<void(const std::string&)> on_lapsed);

  // Stops renewing and lets the lease expire now (a standby takes over at its next try).
  // Idempotent.
  void Stop();

 private:
  // Waits one renew interval or until Stop(); true if stopped.
  bool WaitOrStopped();
  // The renewal thread's loop (KeepRenewing).
  void RenewUntilStopped(const std::function<void(const std::string&)>& on_lost);
  // The watchdog thread's loop (KeepRenewing): on_lapsed once the lease is no longer trusted.
  void WatchUntilStopped(const std::function<void(const std::string&)>& on_lapsed);

  const std::unique_ptr<store::PostgresLease> lease_;
  const std::string holder_;
  const std::string url_;
  const LeaseOptions options_;
  std::int64_t epoch_ = 0;  // 0 until KeepRenewing; then written before the thread starts
  Mutex mu_;
  std::condition_variable_any wake_;
  bool stopped_ GUARDED_BY(mu_) = false;
  // When the last successful renewal (or the taking) of the lease started.
  std::chrono::steady_clock::time_point renewed_at_ GUARDED_BY(mu_);
  bool lapsed_ GUARDED_BY(mu_) = false;  // on_lapsed was called
  std::thread renewer_;
  std::thread watchdog_;
};

}  // namespace drover::server
