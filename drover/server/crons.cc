#include "drover/server/crons.h"

#include <date/tz.h>
#include <fmt/format.h>

#include <exception>

namespace drover::server {

Result<const date::time_zone*> LocateTimeZone(const std::string& name) {
  try {
    return date::locate_zone(name);
  } catch (const std::exception&) {
    return InvalidArgument(fmt::format(
        "time_zone: unknown time zone \"{}\" (an IANA name such as Europe/Berlin or UTC)", name));
  }
}

std::vector<CronRun> CronRunsOf(const std::string& name, const std::map<JobId, model::Job>& jobs) {
  const std::string prefix = name + "@";
  std::map<std::string, CronRun> runs;  // by id: run ids of one cron job sort by due time
  for (const auto& [id, job] : jobs) {
    if (!job.submission_key.starts_with(prefix)) continue;
    CronRun& run = runs[job.submission_key];
    run.id = job.submission_key;
    run.jobs.push_back(id);
    if (!model::IsTerminal(job.state)) {
      run.state = "active";
    } else if (run.state.empty() || run.state == "succeeded") {
      const bool ok =
          job.state == model::JobState::kSucceeded || job.state == model::JobState::kSkipped;
      run.state = ok ? "succeeded" : "failed";
    }
  }
  std::vector<CronRun> out;
  for (auto& [id, run] : runs) out.push_back(std::move(run));
  return out;
}

void SetRuns(const std::vector<CronRun>& runs, CronStatus& status) {
  int succeeded = 0;
  int failed = 0;
  for (auto it = runs.rbegin(); it != runs.rend(); ++it) {
    if (it->state == "active") continue;
    int& kept = it->state == "succeeded" ? succeeded : failed;
    const int limit = it->state == "succeeded" ? status.record.spec.successful_history_limit
                                               : status.record.spec.failed_history_limit;
    if (kept++ < limit) status.history.push_back(*it);
  }
  for (const CronRun& run : runs) {
    if (run.state == "active") status.active.push_back(run);
  }
  if (!runs.empty()) status.last = runs.back();
}

}  // namespace drover::server
