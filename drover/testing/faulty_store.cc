#include "drover/testing/faulty_store.h"

#include <fmt/format.h>

namespace drover::testing {

void FaultyStore::FailNthApply(int n, ErrorCode code) {
  std::lock_guard lock(mu_);
  fail_at_ = applies_ + n;
  fail_at_code_ = code;
}

void FaultyStore::SetFailing(bool failing, ErrorCode code) {
  std::lock_guard lock(mu_);
  failing_ = failing ? std::optional<ErrorCode>(code) : std::nullopt;
}

void FaultyStore::SetStalled(bool stalled) {
  {
    std::lock_guard lock(mu_);
    stalled_ = stalled;
  }
  unstalled_.notify_all();
}

int FaultyStore::stalled_applies() const {
  std::lock_guard lock(mu_);
  return stalled_now_;
}

int FaultyStore::applies() const {
  std::lock_guard lock(mu_);
  return applies_;
}

int FaultyStore::failed_applies() const {
  std::lock_guard lock(mu_);
  return failed_;
}

Status FaultyStore::Apply(const store::Batch& batch) {
  {
    std::unique_lock lock(mu_);
    const int number = ++applies_;
    ++stalled_now_;
    unstalled_.wait(lock, [&] { return !stalled_; });
    --stalled_now_;
    std::optional<ErrorCode> code = failing_;
    if (fail_at_ == number) code = fail_at_code_;
    if (code) {
      ++failed_;
      return MakeError(*code, fmt::format("injected failure of write {}", number));
    }
  }
  return base_.Apply(batch);
}

Status FaultyStore::AppendAudit(const std::vector<store::AuditRecord>& records) {
  {
    std::lock_guard lock(mu_);
    if (failing_) return MakeError(*failing_, "injected failure of an audit append");
  }
  return base_.AppendAudit(records);
}

}  // namespace drover::testing
