#pragma once

// Cron jobs in the server (docs/workflows.md "Cron jobs"): what the API lists for each, and the
// helpers ControlPlane's cron part (control_plane_cron.cc) uses.
//
// A cron job's runs are not stored apart: a run is the jobs submitted with its run id
// (workflow::CronRunId, "NAME@YYYY-MM-DDTHH:MM:SSZ") as the Idempotency-Key, so the runs and
// their states survive restarts with the jobs themselves.

#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "drover/common/ids.h"
#include "drover/common/result.h"
#include "drover/model/job.h"
#include "drover/store/store.h"

namespace date {
class time_zone;
}

namespace drover::server {

struct CronRun {
  std::string id;  // the run id, also the jobs' submission key
  std::vector<JobId> jobs;
  // "active" while any job is unfinished; then "succeeded" if every job succeeded (or was
  // skipped by its pipeline's conditions), else "failed".
  std::string state;
};

struct CronStatus {
  store::CronRecord record;
  std::optional<TimeMs> next_run;  // unset while suspended
  std::vector<CronRun> active;     // unfinished runs, oldest first
  // Finished runs, newest first: at most spec.successful_history_limit succeeded and
  // spec.failed_history_limit failed ones (older runs' jobs stay listed under `drover ls`).
  std::vector<CronRun> history;
  std::optional<CronRun> last;  // the newest run, whatever its state
};

// date::locate_zone without exceptions: kInvalidArgument "time_zone: unknown time zone ..."
// for a name the tz database does not have.
Result<const date::time_zone*> LocateTimeZone(const std::string& name);

// The runs of cron job `name` among `jobs` (by submission key), oldest first.
std::vector<CronRun> CronRunsOf(const std::string& name, const std::map<JobId, model::Job>& jobs);

// Fills status.active, history and last from `runs` (oldest first) under the spec's limits.
void SetRuns(const std::vector<CronRun>& runs, CronStatus& status);

// The API's view of a cron job (GET /v1/crons, docs/api.md).
nlohmann::json CronView(const CronStatus& status);

}  // namespace drover::server
