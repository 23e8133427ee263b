// ControlPlane's cron jobs (control_plane.h, docs/workflows.md "Cron jobs").
//
// Restart safety rests on one order: a due run's jobs are submitted with the run id as the
// submission key and persisted (Commit) before the cron job's last handled time moves past the
// due time (Store::PutCron). A crash in between plans the same due time again after the restart,
// and the controller, whose submission keys are rebuilt from the stored jobs, answers the
// resubmission with the existing jobs.

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <algorithm>

#include "drover/api/workflow_handlers.h"
#include "drover/model/access.h"
#include "drover/server/control_plane.h"
#include "drover/workflow/cron_plan.h"

namespace drover::server {

Result<CronStatus> ControlPlane::PutCron(model::CronSpec spec, const model::Identity& caller) {
  // The spec parser checks the job-name rules; the run ids and the API's paths need these.
  if (spec.name.empty() || spec.name.find_first_of("@/") != std::string::npos) {
    return InvalidArgument(fmt::format(
        "name: '{}' is not a cron job name (not empty, without '@' or '/')", spec.name));
  }
  auto schedule = workflow::ParseCronSchedule(spec.schedule);
  if (!schedule) return InvalidArgument("schedule: " + schedule.error().message);
  DROVER_ASSIGN_OR_RETURN(const date::time_zone* zone, LocateTimeZone(spec.time_zone));
  if (spec.jobs.empty()) return InvalidArgument("jobs: a cron job runs a job or a pipeline");
  if (spec.starting_deadline && *spec.starting_deadline < 0) {
    return InvalidArgument("starting_deadline: must not be negative");
  }
  if (spec.successful_history_limit < 0 || spec.failed_history_limit < 0) {
    return InvalidArgument("history: the limits must not be negative");
  }
  MutexLock lock(mu_);
  const TimeMs now = clock_.Now();
  CronEntry entry;
  DROVER_RETURN_IF_ERROR(ClaimSpecs(spec.jobs, caller));
  auto it = crons_.find(spec.name);
  if (it != crons_.end()) {
    // Replacing a cron job is cancelling the old one's future runs.
    DROVER_RETURN_IF_ERROR(model::Decide(
        caller, model::Verb::kCancel, api::CronResource(it->second.record), controller_.policy()));
    entry.record = it->second.record;
  } else {
    entry.record.created_at = now;
    entry.record.last_handled = now;
  }
  entry.record.owner = caller.user;
  entry.record.team = caller.team;
  entry.record.spec = std::move(spec);
  entry.schedule = *schedule;
  entry.zone = zone;
  // Planned at once: a replaced cron job may have a run due now (resumed, new schedule).
  entry.next_due = now;
  DROVER_RETURN_IF_ERROR(store_->PutCron(entry.record));
  crons_.insert_or_assign(entry.record.spec.name, entry);
  wake_loop_.notify_all();
  return StatusOf(entry);
}

Status ControlPlane::DeleteCron(const std::string& name) {
  MutexLock lock(mu_);
  if (!crons_.contains(name)) return NotFound(fmt::format("cron job {} does not exist", name));
  DROVER_RETURN_IF_ERROR(store_->DeleteCron(name));
  crons_.erase(name);
  return OkStatus();
}

Result<CronStatus> ControlPlane::SuspendCron(const std::string& name, bool suspend) {
  MutexLock lock(mu_);
  auto it = crons_.find(name);
  if (it == crons_.end()) return NotFound(fmt::format("cron job {} does not exist", name));
  CronEntry& entry = it->second;
  if (entry.record.spec.suspend == suspend) return StatusOf(entry);
  store::CronRecord record = entry.record;
  record.spec.suspend = suspend;
  if (!suspend) record.last_handled = std::max(record.last_handled, clock_.Now());
  DROVER_RETURN_IF_ERROR(store_->PutCron(record));
  entry.record = std::move(record);
  entry.next_due = clock_.Now();
  wake_loop_.notify_all();
  return StatusOf(entry);
}

std::vector<CronStatus> ControlPlane::Crons() const {
  MutexLock lock(mu_);
  std::vector<CronStatus> out;
  for (const auto& [name, entry] : crons_) out.push_back(StatusOf(entry));
  return out;
}

CronStatus ControlPlane::StatusOf(const CronEntry& entry) const {
  CronStatus status;
  status.record = entry.record;
  if (!entry.record.spec.suspend) {
    status.next_run = workflow::NextAfter(entry.schedule, entry.zone,
                                          std::max(clock_.Now(), entry.record.last_handled));
  }
  SetRuns(CronRunsOf(entry.record.spec.name, controller_.jobs()), status);
  return status;
}

Status ControlPlane::RestoreCrons() {
  DROVER_ASSIGN_OR_RETURN(std::vector<store::CronRecord> stored, store_->ListCrons());
  const TimeMs now = clock_.Now();
  for (store::CronRecord& record : stored) {
    auto schedule = workflow::ParseCronSchedule(record.spec.schedule);
    auto zone = LocateTimeZone(record.spec.time_zone);
    if (!schedule || !zone) {
      // Accepted when submitted; the tz database of this machine may lack the zone now.
      spdlog::error("cron job {} is not run: {}", record.spec.name,
                    (!schedule ? schedule.error() : zone.error()).message);
      continue;
    }
    const std::string name = record.spec.name;
    crons_.insert_or_assign(name, CronEntry{std::move(record), *schedule, *zone, now});
  }
  return OkStatus();
}

void ControlPlane::RunDueCrons() {
  const TimeMs now = clock_.Now();
  for (auto& [name, entry] : crons_) {
    if (entry.record.spec.suspend || entry.next_due > now) continue;
    const workflow::DuePlan plan =
        workflow::PlanRuns(entry.schedule, entry.zone, entry.record.last_handled, now,
                           entry.record.spec.starting_deadline);
    entry.next_due = plan.next;
    if (plan.missed > 0) {
      spdlog::warn(
          "cron job {}: {} due run(s) not started (missed while the server was down or "
          "suspended, or past the starting deadline)",
          name, plan.missed);
    }
    if (plan.run) StartCronRun(entry, *plan.run);
    if (store_failed_) return;  // the run may not be stored: its due time stays unhandled
    if (!plan.handled_through) continue;
    entry.record.last_handled = *plan.handled_through;
    Status stored = store_->PutCron(entry.record);
    if (!stored) {
      // The run is submitted; after a restart the due time is planned again and its run id
      // keeps it from starting twice.
      spdlog::error("cron job {}: cannot store the last handled time: {}", name,
                    stored.error().ToString());
    }
  }
}

void ControlPlane::StartCronRun(const CronEntry& entry, TimeMs due) {
  const model::CronSpec& spec = entry.record.spec;
  const std::string run_id = workflow::CronRunId(spec.name, due);
  std::vector<JobId> active;
  for (const CronRun& run : CronRunsOf(spec.name, controller_.jobs())) {
    if (run.id == run_id) return;  // submitted before a restart
    if (workflow::IsFinished(run.state)) continue;
    for (JobId id : run.jobs) {
      if (!model::IsTerminal(controller_.Find(id)->state)) active.push_back(id);
    }
  }
  const TimeMs now = clock_.Now();
  control::Step step;
  if (!active.empty()) {
    switch (spec.concurrency_policy) {
      case model::ConcurrencyPolicy::kForbid:
        spdlog::info("cron job {}: run {} skipped: the previous run is still active (forbid)",
                     spec.name, run_id);
        return;
      case model::ConcurrencyPolicy::kReplace:
        for (JobId id : active) {
          Status cancelled = controller_.Cancel(id, model::kSystemActor,
                                                "replaced by cron run " + run_id, now, step);
          if (!cancelled) {
            spdlog::warn("cron job {}: cannot cancel job {}: {}", spec.name, id.value(),
                         cancelled.error().ToString());
          }
        }
        break;
      case model::ConcurrencyPolicy::kAllow:
        break;
    }
  }
  auto submitted = controller_.Submit(spec.jobs, run_id, entry.record.owner, now, step);
  if (!submitted) {
    spdlog::error("cron job {}: run {} not submitted: {}", spec.name, run_id,
                  submitted.error().ToString());
  }
  static_cast<void>(Commit(step));  // a failed write stopped the plane (store_failed_)
  RequestSchedule();
}

}  // namespace drover::server
