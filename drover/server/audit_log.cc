#include "drover/server/audit_log.h"

#include <spdlog/spdlog.h>

#include <chrono>
#include <utility>

namespace drover::server {

AuditLog::AuditLog(store::Store& store, DurationMs flush_interval_ms)
    : store_(store), flush_interval_ms_(flush_interval_ms), writer_([this] { Run(); }) {}

AuditLog::~AuditLog() { Stop(); }

void AuditLog::Append(store::AuditRecord record) {
  bool wake = false;
  {
    MutexLock lock(mu_);
    if (queued_.size() >= kMaxQueued) {
      ++dropped_;
      return;
    }
    queued_.push_back(std::move(record));
    wake = queued_.size() >= kBatch;
  }
  if (wake) wake_.notify_one();
}

Status AuditLog::Flush() {
  MutexLock write(write_mu_);
  std::vector<store::AuditRecord> batch;
  std::uint64_t dropped = 0;
  {
    MutexLock lock(mu_);
    batch.swap(queued_);
    std::swap(dropped, dropped_);
  }
  if (dropped > 0) {
    spdlog::error("audit log: {} records dropped while {} were waiting for the store", dropped,
                  kMaxQueued);
  }
  if (batch.empty()) return OkStatus();
  Status status = store_.AppendAudit(batch);
  if (!status) {
    spdlog::error("audit log: {} records could not be written and are dropped: {}", batch.size(),
                  status.error().ToString());
  }
  return status;
}

void AuditLog::Stop() {
  {
    MutexLock lock(mu_);
    stopping_ = true;
  }
  wake_.notify_all();
  if (writer_.joinable()) writer_.join();
  static_cast<void>(Flush());  // logged there; also what was appended after an earlier Stop
}

void AuditLog::Run() {
  while (true) {
    {
      MutexLock lock(mu_);
      wake_.wait_for(lock, std::chrono::milliseconds(flush_interval_ms_),
                     [&]() REQUIRES(mu_) { return stopping_ || queued_.size() >= kBatch; });
      if (stopping_) return;
    }
    static_cast<void>(Flush());  // logged there
  }
}

}  // namespace drover::server
