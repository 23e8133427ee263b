#include "drover/server/crons.h"

#include <date/tz.h>

#include <exception>

#include "drover/spec/limits.h"
#include "drover/workflow/rollup.h"

namespace drover::server {

Result<const date::time_zone*> LocateTimeZone(const std::string& name) {
  try {
    return date::locate_zone(name);
  } catch (const std::exception&) {
    return InvalidArgument("time_zone: " + spec::UnknownTimeZoneMessage(name));
  }
}

std::vector<CronRun> CronRunsOf(const std::string& name, const std::map<JobId, model::Job>& jobs) {
  const std::string prefix = name + "@";
  // By id: run ids of one cron job sort by due time; jobs in id order, as RollUp takes them.
  std::map<std::string, std::vector<const model::Job*>> runs;
  for (const auto& [id, job] : jobs) {
    if (job.submission_key.starts_with(prefix)) runs[job.submission_key].push_back(&job);
  }
  std::vector<CronRun> out;
  for (const auto& [id, run_jobs] : runs) {
    CronRun& run = out.emplace_back();
    run.id = id;
    for (const model::Job* job : run_jobs) run.jobs.push_back(job->id);
    run.state = workflow::RollUp(run_jobs).state;
  }
  return out;
}

void SetRuns(const std::vector<CronRun>& runs, CronStatus& status) {
  int succeeded = 0;
  int failed = 0;
  for (auto it = runs.rbegin(); it != runs.rend(); ++it) {
    if (!workflow::IsFinished(it->state)) continue;
    const bool ok = it->state == workflow::RunState::kSucceeded;
    int& kept = ok ? succeeded : failed;
    const int limit =
        ok ? status.record.spec.successful_history_limit : status.record.spec.failed_history_limit;
    if (kept++ < limit) status.history.push_back(*it);
  }
  for (const CronRun& run : runs) {
    if (!workflow::IsFinished(run.state)) status.active.push_back(run);
  }
  if (!runs.empty()) status.last = runs.back();
}

}  // namespace drover::server
