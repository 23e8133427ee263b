#include "drover/server/crons.h"

#include <date/tz.h>
#include <fmt/format.h>

#include <exception>

#include "drover/codec/json.h"

namespace drover::server {

using nlohmann::json;

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

namespace {

json RunView(const CronRun& run) {
  json jobs = json::array();
  for (JobId id : run.jobs) jobs.push_back(id.value());
  return json{{"id", run.id}, {"state", run.state}, {"jobs", jobs}};
}

json RunsView(const std::vector<CronRun>& runs) {
  json out = json::array();
  for (const CronRun& run : runs) out.push_back(RunView(run));
  return out;
}

}  // namespace

json CronView(const CronStatus& status) {
  const model::CronSpec& spec = status.record.spec;
  return json{{"name", spec.name},
              {"schedule", spec.schedule},
              {"time_zone", spec.time_zone},
              {"concurrency_policy", model::ConcurrencyPolicyName(spec.concurrency_policy)},
              {"suspend", spec.suspend},
              {"owner", status.record.owner},
              {"created_at", status.record.created_at},
              {"last_handled_at", status.record.last_handled},
              {"next_run_at", status.next_run ? json(*status.next_run) : json(nullptr)},
              {"last_run", status.last ? RunView(*status.last) : json(nullptr)},
              {"active_runs", RunsView(status.active)},
              {"history", RunsView(status.history)},
              {"spec", codec::ToJson(spec)}};
}

}  // namespace drover::server
