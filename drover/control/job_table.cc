#include "drover/control/job_table.h"

#include <algorithm>
#include <utility>

#include "drover/common/result.h"

namespace drover::control {

using model::Job;
using model::JobState;

std::set<JobId>* JobTable::IndexOf(JobState state) {
  switch (state) {
    case JobState::kPending:
      return &pending_;
    case JobState::kWaiting:
      return &waiting_;
    case JobState::kReady:
      return &ready_;
    default:
      return nullptr;
  }
}

Job& JobTable::Add(Job&& job) {
  const JobId id = job.id;
  DROVER_CHECK(!by_id_.contains(id));
  return Index(jobs_.emplace_hint(jobs_.end(), id, std::move(job)));
}

Job& JobTable::Index(std::map<JobId, Job>::iterator stored) {
  Job& job = stored->second;
  const JobId id = job.id;
  next_id_ = std::max(next_id_, id.value() + 1);
  if (!job.submission_key.empty()) submissions_[job.submission_key].push_back(id);
  if (std::set<JobId>* index = IndexOf(job.state)) index->insert(id);
  if (job.state == JobState::kReady) untried_.insert(id);
  CountBacklog(job.spec, Backlog{}, BacklogCount(job.state));
  by_id_.emplace(id, stored);
  return job;
}

void JobTable::Remove(JobId id) {
  auto it = by_id_.find(id);
  DROVER_CHECK(it != by_id_.end() && model::IsTerminal(it->second->second.state));
  jobs_.erase(it->second);
  by_id_.erase(it);
}

JobTable::Backlog JobTable::BacklogCount(JobState state) {
  if (model::IsTerminal(state)) return Backlog{};
  const bool unstarted =
      state == JobState::kPending || state == JobState::kWaiting || state == JobState::kReady;
  return Backlog{unstarted ? 1 : 0, 1};
}

void JobTable::CountBacklog(const model::JobSpec& spec, Backlog before, Backlog after) {
  const Backlog delta{after.unstarted - before.unstarted, after.unfinished - before.unfinished};
  // Most transitions (pending -> ready, starting -> running) change neither count: no lookups.
  if (delta.unstarted == 0 && delta.unfinished == 0) return;
  for (Backlog* backlog : {&by_owner_[spec.owner], &by_team_[spec.team]}) {
    backlog->unstarted += delta.unstarted;
    backlog->unfinished += delta.unfinished;
  }
}

JobTable::Backlog JobTable::BacklogIn(const std::unordered_map<std::string, Backlog>& backlogs,
                                      const std::string& key) {
  auto it = backlogs.find(key);
  return it == backlogs.end() ? Backlog{} : it->second;
}

model::Transition JobTable::MoveTo(Job& job, JobState to, std::string cause, TimeMs now) {
  DROVER_CHECK(model::IsAllowedTransition(job.state, to));
  const model::Attempt* attempt = job.current_attempt();
  model::Transition transition{job.id,          attempt ? attempt->number : 0, job.state, to, now,
                               std::move(cause)};
  // A move within one index (pending -> pending at submission) leaves it as it is.
  std::set<JobId>* const from_index = IndexOf(job.state);
  std::set<JobId>* const to_index = IndexOf(to);
  if (from_index != to_index && from_index != nullptr) from_index->erase(job.id);
  if (job.state == JobState::kReady && to != JobState::kReady) untried_.erase(job.id);
  if (to != JobState::kStarting && to != JobState::kRunning) publishing_.erase(job.id);
  CountBacklog(job.spec, BacklogCount(job.state), BacklogCount(to));
  job.state = to;
  if (from_index != to_index && to_index != nullptr) to_index->insert(job.id);
  if (to == JobState::kReady) untried_.insert(job.id);
  if (model::IsTerminal(to)) job.finished_at = now;
  return transition;
}

Job* JobTable::Find(JobId id) {
  auto it = by_id_.find(id);
  return it == by_id_.end() ? nullptr : &it->second->second;
}

const Job* JobTable::Find(JobId id) const {
  auto it = by_id_.find(id);
  return it == by_id_.end() ? nullptr : &it->second->second;
}

Job& JobTable::Get(JobId id) {
  Job* job = Find(id);
  DROVER_CHECK(job != nullptr);
  return *job;
}

const Job& JobTable::Get(JobId id) const {
  const Job* job = Find(id);
  DROVER_CHECK(job != nullptr);
  return *job;
}

std::vector<const Job*> JobTable::RunJobs(JobId run) const {
  std::vector<const Job*> jobs;
  if (run == JobId()) return jobs;
  for (auto it = jobs_.lower_bound(run); it != jobs_.end() && it->second.pipeline_run == run;
       ++it) {
    jobs.push_back(&it->second);
  }
  return jobs;
}

const std::vector<JobId>* JobTable::Submission(const std::string& submission_key) const {
  auto it = submissions_.find(submission_key);
  return it == submissions_.end() ? nullptr : &it->second;
}

void JobTable::StartPublishing(JobId id) {
  const JobState state = Get(id).state;
  DROVER_CHECK(state == JobState::kStarting || state == JobState::kRunning);
  publishing_.insert(id);
}

}  // namespace drover::control
