#include "drover/api/service.h"

namespace drover::api {

std::vector<JobId> Submission::Ids() const {
  std::vector<JobId> ids;
  ids.reserve(jobs.size());
  for (const SubmittedJob& job : jobs) ids.push_back(job.id);
  return ids;
}

}  // namespace drover::api
