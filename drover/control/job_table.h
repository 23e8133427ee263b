#pragma once

// JobTable: the controller's jobs with the indexes it keeps by state, and the one way a job's
// state changes (MoveTo).
//
// Invariant, after any sequence of calls:
//   - pending() holds exactly the jobs in state pending, waiting() those in waiting and ready()
//     those in ready;
//   - untried() is a subset of ready(): a job enters it each time it becomes ready and leaves it
//     when a scheduling pass tries it (MarkTried) or when it leaves ready;
//   - publishing() is a subset of the jobs in starting or running (their workers exited 0 and
//     their outputs are being published); a job leaves it when it leaves those states;
//   - BacklogOf(owner / team) counts exactly the unfinished jobs of that owner / team, and
//     among them those not started (pending, waiting or ready);
//   - next_id() is greater than every job's id, and Submission(key) lists the jobs added with
//     that submission key, in the order they were added.
// The indexes are kept by Add and MoveTo. Jobs are handed out mutable because the controller
// edits their attempts, workers and messages, but a job's `state` must change only through
// MoveTo: a state written directly would leave the indexes stale. A job is removed only by
// Remove (a finished one, for a driver that keeps no history), so a pointer or reference to a
// job stays valid until then.
//
// Not thread-safe: the Controller that owns it serializes calls.

#include <cstdint>
#include <map>
#include <set>
#include <string>
#include <tuple>
#include <unordered_map>
#include <vector>

#include "drover/common/clock.h"
#include "drover/common/ids.h"
#include "drover/common/result.h"
#include "drover/model/job.h"

namespace drover::control {

class JobTable {
 public:
  JobTable() = default;
  // Not copyable: by_id_ points into jobs_ (a move keeps its nodes).
  JobTable(const JobTable&) = delete;
  JobTable& operator=(const JobTable&) = delete;
  JobTable(JobTable&&) = default;
  JobTable& operator=(JobTable&&) = default;
  // Adds `job`, whose id must not be in the table (DROVER_CHECK), indexing it by its state and
  // its submission key; records no transition. Returns the stored job. Taken by rvalue: a job
  // is about two thousand instructions to move, and the table moves it once, into its map.
  model::Job& Add(model::Job&& job);
  // Adds a job with id `id` (not in the table; DROVER_CHECK), built in place by fill(job), which
  // sets everything but its id, as Add adds `job`: one move of a whole job less per submission.
  template <typename Fill>
  model::Job& Emplace(JobId id, Fill&& fill) {
    DROVER_CHECK(!by_id_.contains(id));
    auto stored = jobs_.emplace_hint(jobs_.end(), std::piecewise_construct,
                                     std::forward_as_tuple(id), std::forward_as_tuple());
    stored->second.id = id;
    fill(stored->second);
    DROVER_CHECK(stored->second.id == id);
    return Index(stored);
  }

  // Moves `job` (a job of this table) to `to`, which the lifecycle must allow from its state
  // (DROVER_CHECK; model::IsAllowedTransition), keeping the indexes; a terminal state sets
  // job.finished_at to `now`. Returns the transition to record (the current attempt's number, 0
  // without one).
  model::Transition MoveTo(model::Job& job, model::JobState to, std::string cause, TimeMs now);

  // Removes finished job `id` (a terminal state; DROVER_CHECK), which no index holds; its id is
  // not reused (next_id() is unchanged). References to it become dangling.
  void Remove(JobId id);

  // The job `id`, or nullptr when there is none. A hash lookup: the job maps of a large table
  // are deep trees, and exits and reports find jobs not touched for a long time.
  model::Job* Find(JobId id);
  const model::Job* Find(JobId id) const;
  // The job `id`, which must exist (DROVER_CHECK).
  model::Job& Get(JobId id);
  const model::Job& Get(JobId id) const;
  const std::map<JobId, model::Job>& jobs() const { return jobs_; }

  // The jobs of pipeline run `run` (Job::pipeline_run) in id order: its ids are consecutive,
  // starting at `run`. Empty for JobId() or a run that does not exist.
  std::vector<const model::Job*> RunJobs(JobId run) const;

  // The jobs added with `submission_key` (not empty), or nullptr if none was.
  const std::vector<JobId>* Submission(const std::string& submission_key) const;
  // The smallest id no job has yet: the id of the next new job.
  std::int64_t next_id() const { return next_id_; }

  // Jobs in state pending: dependencies not yet met.
  const std::set<JobId>& pending() const { return pending_; }
  // Jobs in state waiting: inputs not all present.
  const std::set<JobId>& waiting() const { return waiting_; }
  // Jobs in state ready: waiting for placement.
  const std::set<JobId>& ready() const { return ready_; }
  // Ready jobs not yet tried by a scheduling pass since they became ready.
  const std::set<JobId>& untried() const { return untried_; }
  // A scheduling pass tried `id`: it leaves untried().
  void MarkTried(JobId id) { untried_.erase(id); }

  // What one owner or one team has not finished (the policy's submit limits).
  struct Backlog {
    std::int64_t unstarted = 0;   // pending, waiting or ready
    std::int64_t unfinished = 0;  // any state but a terminal one
  };
  Backlog OwnerBacklog(const std::string& owner) const { return BacklogIn(by_owner_, owner); }
  Backlog TeamBacklog(const std::string& team) const { return BacklogIn(by_team_, team); }

  // Starting or running jobs whose workers exited 0 and whose outputs are being published.
  const std::set<JobId>& publishing() const { return publishing_; }
  bool IsPublishing(JobId id) const { return publishing_.contains(id); }
  // `id`, which must be starting or running (DROVER_CHECK), is publishing its outputs.
  void StartPublishing(JobId id);
  // `id` is no longer publishing; false if it was not.
  bool EndPublishing(JobId id) { return publishing_.erase(id) > 0; }

 private:
  // Indexes the job at `stored` (just added to jobs_): by id, state, submission key and backlog.
  model::Job& Index(std::map<JobId, model::Job>::iterator stored);
  // The index of jobs in `state`, or nullptr for a state without one.
  std::set<JobId>* IndexOf(model::JobState state);
  // What one job in `state` counts in its owner's and its team's backlog.
  static Backlog BacklogCount(model::JobState state);
  // A job of `spec`'s owner and team counted `before` now counts `after`; the backlogs follow.
  void CountBacklog(const model::JobSpec& spec, Backlog before, Backlog after);
  static Backlog BacklogIn(const std::unordered_map<std::string, Backlog>& backlogs,
                           const std::string& key);

  std::map<JobId, model::Job> jobs_;
  // Every job of jobs_ by id (map iterators stay valid until their erase): what Find and Remove
  // look up.
  std::unordered_map<JobId, std::map<JobId, model::Job>::iterator> by_id_;
  std::int64_t next_id_ = 1;
  std::map<std::string, std::vector<JobId>> submissions_;  // Idempotency-Key -> jobs
  std::set<JobId> pending_;
  std::set<JobId> waiting_;
  std::set<JobId> ready_;
  std::set<JobId> untried_;
  std::set<JobId> publishing_;
  std::unordered_map<std::string, Backlog> by_owner_;
  std::unordered_map<std::string, Backlog> by_team_;
};

}  // namespace drover::control
