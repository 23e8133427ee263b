#pragma once

// Cron jobs in the server (docs/workflows.md "Cron jobs"): the helpers ControlPlane's cron part
// (control_plane_cron.cc) uses to fill what the API lists for each (api::CronStatus).
//
// A cron job's runs are not stored apart: a run is the jobs submitted with its run id
// (workflow::CronRunId, "NAME@YYYY-MM-DDTHH:MM:SSZ") as the Idempotency-Key, so the runs and
// their states survive restarts with the jobs themselves.

#include <map>
#include <optional>
#include <string>
#include <vector>

#include "drover/api/service.h"
#include "drover/common/ids.h"
#include "drover/common/result.h"
#include "drover/model/job.h"
#include "drover/store/store.h"

namespace date {
class time_zone;
}

namespace drover::server {

// The API's values (api/service.h), which ControlPlane's cron part fills.
using api::CronRun;
using api::CronStatus;

// date::locate_zone without exceptions: kInvalidArgument "time_zone: unknown time zone ..."
// for a name the tz database does not have.
Result<const date::time_zone*> LocateTimeZone(const std::string& name);

// The runs of cron job `name` among `jobs` (by submission key), oldest first.
std::vector<CronRun> CronRunsOf(const std::string& name, const std::map<JobId, model::Job>& jobs);

// Fills status.active, history and last from `runs` (oldest first) under the spec's limits: the
// newest succeeded runs under successful_history_limit, the newest failed or cancelled ones
// under failed_history_limit.
void SetRuns(const std::vector<CronRun>& runs, CronStatus& status);

}  // namespace drover::server
