#pragma once

// A `kind: CronJob` (docs/workflows.md): a job or pipeline submitted on a cron schedule.

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "drover/common/clock.h"
#include "drover/model/job_spec.h"
#include "drover/model/names.h"

namespace drover::model {

// What to do when a run is due while the previous one is still running (as Kubernetes).
enum class ConcurrencyPolicy {
  kAllow,    // start it anyway
  kForbid,   // skip this run
  kReplace,  // cancel the running one, then start
};
inline constexpr NameTable kConcurrencyPolicyNames{std::array{
    NameEntry{ConcurrencyPolicy::kAllow, "allow"},
    NameEntry{ConcurrencyPolicy::kForbid, "forbid"},
    NameEntry{ConcurrencyPolicy::kReplace, "replace"},
}};
static_assert(kConcurrencyPolicyNames.size() ==
              static_cast<std::size_t>(ConcurrencyPolicy::kReplace) + 1);
// kConcurrencyPolicyNames.Name / Parse.
std::string_view ConcurrencyPolicyName(ConcurrencyPolicy policy);
std::optional<ConcurrencyPolicy> ParseConcurrencyPolicy(std::string_view name);

struct CronSpec {
  std::string name;      // same rules as a job name; unique among cron jobs
  std::string schedule;  // five-field cron expression or @hourly/@daily/...; see workflow/cron.h
  std::string time_zone = "UTC";  // IANA name, e.g. "Europe/Berlin"
  ConcurrencyPolicy concurrency_policy = ConcurrencyPolicy::kAllow;
  // A run missed (server down) by more than this is not started; nullopt: no deadline (the
  // latest missed run still starts, once).
  std::optional<DurationMs> starting_deadline;
  int successful_history_limit = 3;  // finished runs kept listed per outcome
  int failed_history_limit = 1;
  bool suspend = false;
  // What each run submits: one job, or the jobs of a pipeline (expanded as for kind: Pipeline).
  std::vector<JobSpec> jobs;

  friend bool operator==(const CronSpec&, const CronSpec&) = default;
};

}  // namespace drover::model
