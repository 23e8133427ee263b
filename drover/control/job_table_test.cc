#include "drover/control/job_table.h"

#include <gtest/gtest.h>

#include <random>
#include <set>
#include <vector>

namespace drover::control {
namespace {

using model::Job;
using model::JobState;

constexpr JobState kAllStates[] = {JobState::kPending,   JobState::kReady,    JobState::kAdmitted,
                                   JobState::kPlaced,    JobState::kStarting, JobState::kRunning,
                                   JobState::kSucceeded, JobState::kFailed,   JobState::kCancelled,
                                   JobState::kTimedOut,  JobState::kWaiting,  JobState::kSkipped};

Job MakeJob(std::int64_t id, JobState state = JobState::kPending, const std::string& key = "") {
  Job job;
  job.id = JobId(id);
  job.state = state;
  job.submission_key = key;
  return job;
}

std::set<JobId> JobsIn(const JobTable& table, JobState state) {
  std::set<JobId> ids;
  for (const auto& [id, job] : table.jobs()) {
    if (job.state == state) ids.insert(id);
  }
  return ids;
}

// The invariant of job_table.h, recomputed from the jobs' states.
void ExpectIndexesMatchStates(const JobTable& table) {
  EXPECT_EQ(table.pending(), JobsIn(table, JobState::kPending));
  EXPECT_EQ(table.waiting(), JobsIn(table, JobState::kWaiting));
  EXPECT_EQ(table.ready(), JobsIn(table, JobState::kReady));
  for (JobId id : table.untried()) EXPECT_TRUE(table.ready().contains(id)) << id.value();
  for (JobId id : table.publishing()) {
    const JobState state = table.Get(id).state;
    EXPECT_TRUE(state == JobState::kStarting || state == JobState::kRunning) << id.value();
  }
}

TEST(JobTable, AddIndexesAJobByItsStateAndSubmissionKeyAndAdvancesTheNextId) {
  JobTable table;
  EXPECT_EQ(table.next_id(), 1);
  table.Add(MakeJob(3, JobState::kReady, "key"));
  table.Add(MakeJob(1, JobState::kWaiting, "key"));
  table.Add(MakeJob(2, JobState::kRunning));
  EXPECT_EQ(table.next_id(), 4);
  EXPECT_EQ(table.ready(), std::set<JobId>{JobId(3)});
  EXPECT_EQ(table.untried(), std::set<JobId>{JobId(3)});
  EXPECT_EQ(table.waiting(), std::set<JobId>{JobId(1)});
  EXPECT_TRUE(table.pending().empty());
  ASSERT_NE(table.Submission("key"), nullptr);
  EXPECT_EQ(*table.Submission("key"), (std::vector<JobId>{JobId(3), JobId(1)}));
  EXPECT_EQ(table.Submission("other"), nullptr);
  EXPECT_EQ(table.Find(JobId(4)), nullptr);
  ExpectIndexesMatchStates(table);
}

TEST(JobTable, EmplaceBuildsAJobInPlaceAndIndexesItAsAddDoes) {
  JobTable table;
  Job& job = table.Emplace(JobId(5), [](Job& built) {
    built.state = JobState::kReady;
    built.submission_key = "key";
    built.spec.owner = "ana";
  });
  EXPECT_EQ(job.id, JobId(5));
  EXPECT_EQ(&table.Get(JobId(5)), &job);
  EXPECT_EQ(table.next_id(), 6);
  EXPECT_EQ(table.untried(), std::set<JobId>{JobId(5)});
  ASSERT_NE(table.Submission("key"), nullptr);
  EXPECT_EQ(*table.Submission("key"), std::vector<JobId>{JobId(5)});
  EXPECT_EQ(table.OwnerBacklog("ana").unstarted, 1);
  ExpectIndexesMatchStates(table);
}

TEST(JobTable, AMoveWithinOnePendingIndexKeepsTheJobThere) {
  JobTable table;
  Job& job = table.Add(MakeJob(1));
  table.MoveTo(job, JobState::kPending, "submitted", 5);
  EXPECT_EQ(table.pending(), std::set<JobId>{JobId(1)});
  EXPECT_EQ(table.OwnerBacklog("").unfinished, 1);
  ExpectIndexesMatchStates(table);
}

TEST(JobTable, MoveToReturnsTheTransitionAndStampsTheEndOfATerminalState) {
  JobTable table;
  Job& job = table.Add(MakeJob(1));
  job.attempts.emplace_back().number = 1;
  const model::Transition ready = table.MoveTo(job, JobState::kReady, "released", 10);
  EXPECT_EQ(ready.job, JobId(1));
  EXPECT_EQ(ready.attempt, 1);
  EXPECT_EQ(ready.from, JobState::kPending);
  EXPECT_EQ(ready.to, JobState::kReady);
  EXPECT_EQ(ready.at, 10);
  EXPECT_EQ(ready.cause, "released");
  EXPECT_EQ(job.finished_at, 0);
  table.MoveTo(job, JobState::kCancelled, "cancelled", 20);
  EXPECT_EQ(job.finished_at, 20);
  ExpectIndexesMatchStates(table);
}

TEST(JobTable, AJobThatBecomesReadyAgainIsUntriedAgain) {
  JobTable table;
  Job& job = table.Add(MakeJob(1, JobState::kReady));
  table.MarkTried(JobId(1));
  EXPECT_TRUE(table.untried().empty());
  EXPECT_EQ(table.ready(), std::set<JobId>{JobId(1)});
  table.MoveTo(job, JobState::kAdmitted, "dequeued", 1);
  table.MoveTo(job, JobState::kReady, "placement undone", 2);
  EXPECT_EQ(table.untried(), std::set<JobId>{JobId(1)});
}

TEST(JobTable, PublishingEndsWhenTheJobLeavesRunning) {
  JobTable table;
  Job& job = table.Add(MakeJob(1, JobState::kRunning));
  table.StartPublishing(JobId(1));
  EXPECT_TRUE(table.IsPublishing(JobId(1)));
  table.MoveTo(job, JobState::kSucceeded, "published", 5);
  EXPECT_FALSE(table.IsPublishing(JobId(1)));
  EXPECT_FALSE(table.EndPublishing(JobId(1)));
}

TEST(JobTable, RunJobsListsTheConsecutiveJobsOfARun) {
  JobTable table;
  for (std::int64_t id = 1; id <= 4; ++id) {
    Job job = MakeJob(id);
    if (id >= 2 && id <= 3) job.pipeline_run = JobId(2);
    table.Add(std::move(job));
  }
  std::vector<JobId> run;
  for (const Job* job : table.RunJobs(JobId(2))) run.push_back(job->id);
  EXPECT_EQ(run, (std::vector<JobId>{JobId(2), JobId(3)}));
  EXPECT_TRUE(table.RunJobs(JobId()).empty());
  EXPECT_TRUE(table.RunJobs(JobId(9)).empty());
}

// Property: whatever allowed moves, tries and publications happen, in any order, every index
// holds exactly the jobs its invariant says.
TEST(JobTable, IndexesHoldExactlyTheJobsInTheirStatesAfterAnySequenceOfMoves) {
  for (unsigned seed = 1; seed <= 20; ++seed) {
    SCOPED_TRACE(seed);
    std::mt19937 rng(seed);
    JobTable table;
    constexpr int kJobs = 8;
    for (int i = 1; i <= kJobs; ++i) {
      table.Add(MakeJob(i, kAllStates[rng() % std::size(kAllStates)]));
    }
    for (int step = 0; step < 300; ++step) {
      const auto pick = static_cast<std::int64_t>(rng() % (table.next_id() - 1));
      Job& job = table.Get(JobId(1 + pick));
      switch (rng() % 4) {
        case 0:
          table.MarkTried(job.id);
          break;
        case 1:
          if (job.state == JobState::kStarting || job.state == JobState::kRunning) {
            table.StartPublishing(job.id);
          } else {
            table.EndPublishing(job.id);
          }
          break;
        default: {
          std::vector<JobState> allowed;
          for (JobState to : kAllStates) {
            if (model::IsAllowedTransition(job.state, to)) allowed.push_back(to);
          }
          if (allowed.empty()) {  // finished: a new job, in any state, joins instead
            table.Add(MakeJob(table.next_id(), kAllStates[rng() % std::size(kAllStates)]));
            break;
          }
          const JobState to = allowed[rng() % allowed.size()];
          const bool was_ready = job.state == JobState::kReady;
          table.MoveTo(job, to, "step", step);
          if (to == JobState::kReady) {
            EXPECT_TRUE(table.untried().contains(job.id));
          } else if (was_ready) {
            EXPECT_FALSE(table.untried().contains(job.id));
          }
        }
      }
      ExpectIndexesMatchStates(table);
    }
  }
}

}  // namespace
}  // namespace drover::control
