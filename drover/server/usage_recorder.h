#pragma once

// UsageRecorder: turns the agents' sample batches into each attempt's stored usage (a summary
// and 10 s buckets; model::Accumulate) and keeps the latest sample of every GPU
// (docs/observability.md, "Sampling").
//
// Each attempt a batch names is loaded from the store the first time it is seen (so a restarted
// server goes on accumulating), then kept in memory while samples come; after every batch the
// attempt's record and the buckets the batch touched are written (one Store::PutUsage per
// attempt per batch: with the agents' 10 s batches, one small write per attempt every 10 s).
// An attempt without samples for kIdleMs is dropped from memory (its record stays stored).
//
// A store error loses that attempt's samples of that batch only (logged, returned); no job
// depends on usage. Thread-safe: one mutex of its own, held while a batch is recorded (the
// store write included); never the control plane's.

#include <map>
#include <utility>
#include <vector>

#include "drover/common/clock.h"
#include "drover/common/thread_annotations.h"
#include "drover/model/usage.h"
#include "drover/store/store.h"

namespace drover::server {

class UsageRecorder {
 public:
  static constexpr DurationMs kIdleMs = 10 * kMillisPerMinute;

  // `store` must outlive the recorder.
  explicit UsageRecorder(store::Store& store) : store_(store) {}

  // Records `batch` from `node` (checked: model::ValidateUsageBatch; its attribution trusted:
  // the caller clears what is not the node's). Store errors, after recording the other
  // attempts.
  Status Record(const NodeId& node, const model::UsageBatch& batch) EXCLUDES(mu_);
  // The latest sample of every GPU any agent reported, by node and index.
  std::vector<model::GpuActivity> LatestGpuActivity() const EXCLUDES(mu_);

 private:
  struct Open {
    model::AttemptUsage usage;
    std::vector<model::UsageBucket> last;  // the newest bucket (at most one)
  };
  // The attempt's in-memory record, loaded from the store on first sight.
  Result<Open*> Find(const model::WorkerKey& key) REQUIRES(mu_);

  store::Store& store_;
  mutable Mutex mu_;
  std::map<std::pair<JobId, int>, Open> open_ GUARDED_BY(mu_);
  std::map<std::pair<NodeId, int>, model::GpuActivity> gpus_ GUARDED_BY(mu_);
};

}  // namespace drover::server
