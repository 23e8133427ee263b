#include "drover/api/service.h"

#include <algorithm>

namespace drover::api {

std::vector<JobId> Submission::Ids() const {
  std::vector<JobId> ids;
  ids.reserve(jobs.size());
  for (const SubmittedJob& job : jobs) ids.push_back(job.id);
  return ids;
}

JobPage SelectJobPage(
    const std::map<JobId, model::Job>& jobs, const JobPageRequest& request,
    const std::function<std::optional<control::QueuePosition>(JobId)>& position_of) {
  JobPage page;
  const std::size_t limit = static_cast<std::size_t>(std::max(request.limit, 1));
  page.jobs.reserve(std::min(limit, jobs.size()));
  auto take = [&](const model::Job& job) {
    if (!store::Matches(request.filter, job)) return true;
    if (request.visible && !request.visible(job)) return true;
    if (page.jobs.size() == limit) {  // one more match: another page follows
      page.next = page.jobs.back().id;
      return false;
    }
    JobSummaryRow& row = page.jobs.emplace_back(SummaryRowOf(job, request.now));
    if (position_of) row.position = position_of(job.id);
    return true;
  };
  if (request.newest_first) {
    auto it = request.after ? jobs.lower_bound(*request.after) : jobs.end();
    while (it != jobs.begin() && take((--it)->second)) {
    }
  } else {
    auto it = request.after ? jobs.upper_bound(*request.after) : jobs.begin();
    for (; it != jobs.end() && take(it->second); ++it) {
    }
  }
  return page;
}

}  // namespace drover::api
