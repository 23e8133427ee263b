#pragma once

// AuditLog: the audit log's writer (docs/security.md, "Audit log"). Append queues a record and
// returns at once; a thread of its own writes what is queued in one store transaction
// (Store::AppendAudit) every flush interval or as soon as kBatch records wait, so a mutating
// request adds no fsync of its own. Crash window: records queued but not yet written (at most
// one flush interval's, 100 ms by default) are lost if the process dies; Stop and the destructor
// write everything queued first.
//
// A batch the store refuses is logged and dropped (auditing never fails or stalls the request
// it records). At most kMaxQueued records wait: past that, while the store is stalled, new ones
// are dropped and counted, and the count is logged at the next write.
//
// Thread-safe: its own mutex; the store is called without it held, from the writer thread or
// from Flush.

#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <thread>
#include <vector>

#include "drover/common/clock.h"
#include "drover/common/result.h"
#include "drover/common/thread_annotations.h"
#include "drover/store/store.h"

namespace drover::server {

class AuditLog {
 public:
  static constexpr std::size_t kBatch = 256;
  static constexpr std::size_t kMaxQueued = 100'000;

  // `store` must outlive the log. Starts the writer thread.
  AuditLog(store::Store& store, DurationMs flush_interval_ms = 100);
  ~AuditLog();
  AuditLog(const AuditLog&) = delete;
  AuditLog& operator=(const AuditLog&) = delete;

  // Queues `record` for the next write.
  void Append(store::AuditRecord record) EXCLUDES(mu_);
  // Writes everything queued before the call, on the caller's thread (a reader wants its own
  // request in the listing). The store's error for the batch, which is then dropped.
  Status Flush() EXCLUDES(mu_, write_mu_);
  // Ends the writer thread and writes everything queued. Later Appends are written by Flush or
  // the next Stop (the destructor's), so a request answered after its plane stopped is still
  // recorded.
  void Stop() EXCLUDES(mu_, write_mu_);

 private:
  void Run() EXCLUDES(mu_, write_mu_);

  store::Store& store_;
  const DurationMs flush_interval_ms_;
  // Serializes writes, so that batches reach the store in the order they were queued.
  Mutex write_mu_;
  Mutex mu_;
  std::condition_variable_any wake_;
  std::vector<store::AuditRecord> queued_ GUARDED_BY(mu_);
  std::uint64_t dropped_ GUARDED_BY(mu_) = 0;  // since the last write
  bool stopping_ GUARDED_BY(mu_) = false;
  std::thread writer_;
};

}  // namespace drover::server
