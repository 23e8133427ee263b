#include "drover/api/gpu_handlers.h"

#include <iterator>
#include <map>
#include <utility>

namespace drover::api {

using nlohmann::json;

namespace {

bool HoldsGpus(model::JobState state) {
  return state == model::JobState::kPlaced || state == model::JobState::kStarting ||
         state == model::JobState::kRunning;
}

}  // namespace

json GpuMapView(const std::vector<NodeStatus>& nodes, const std::vector<model::Job>& jobs,
                std::span<const model::GpuActivity> samples,
                const std::function<bool(const model::Job&)>& may_see, TimeMs now) {
  std::map<std::pair<NodeId, int>, const model::Job*> holders;
  for (const model::Job& job : jobs) {
    if (!HoldsGpus(job.state) || job.attempts.empty()) continue;
    for (const model::Worker& worker : job.attempts.back().workers) {
      if (worker.state == model::WorkerState::kExited) continue;
      for (int index : worker.gpus) holders[{worker.node, index}] = &job;
    }
  }
  std::map<std::pair<NodeId, int>, const model::GpuActivity*> latest;
  for (const model::GpuActivity& sample : samples) {
    if (now - sample.at <= kGpuSampleMaxAgeMs) latest[{sample.node, sample.index}] = &sample;
  }
  json gpus = json::array();
  for (const NodeStatus& status : nodes) {
    for (const model::Gpu& gpu : status.node.gpus) {
      const std::pair key(status.node.name, gpu.index);
      const auto holder = holders.find(key);
      const auto sample = latest.find(key);
      const model::Job* job = holder == holders.end() ? nullptr : holder->second;
      const model::GpuActivity* seen = sample == latest.end() ? nullptr : sample->second;
      std::string_view state = "idle";
      if (job != nullptr) {
        state = seen != nullptr && seen->utilization_pct >= kGpuActivePct ? "active" : "allocated";
      }
      const bool named = job != nullptr && may_see(*job);
      auto known = [](auto value) { return value < 0 ? json(nullptr) : json(value); };
      gpus.push_back({{"node", status.node.name.value()},
                      {"index", gpu.index},
                      {"model", gpu.model},
                      {"memory_bytes", gpu.memory_bytes},
                      {"state", state},
                      {"job", named ? json(job->id.value()) : json(nullptr)},
                      {"owner", named ? json(job->spec.owner) : json(nullptr)},
                      {"utilization_pct", seen ? known(seen->utilization_pct) : json(nullptr)},
                      {"memory_used_bytes", seen ? known(seen->memory_used_bytes) : json(nullptr)},
                      {"sampled_at", seen ? json(seen->at) : json(nullptr)}});
    }
  }
  return json{{"gpus", std::move(gpus)}};
}

Result<Response> ListGpus(Service& service, const Request& request) {
  DROVER_ASSIGN_OR_RETURN(model::Identity caller, CallerIdentity(request));
  // Only the states that hold GPUs, each listed alone: a queue of thousands of waiting jobs
  // costs nothing here.
  std::vector<model::Job> holders;
  for (model::JobState state :
       {model::JobState::kPlaced, model::JobState::kStarting, model::JobState::kRunning}) {
    store::JobFilter filter;
    filter.state = state;
    std::vector<model::Job> jobs = service.ListJobs(filter);
    std::move(jobs.begin(), jobs.end(), std::back_inserter(holders));
  }
  const std::vector<model::GpuActivity> samples = service.LatestGpuActivity();
  auto may_see = [&caller, policy = service.Policy()](const model::Job& job) {
    return model::Visible(caller, model::Verb::kView, model::ResourceOf(job), policy);
  };
  return JsonResponse(200, GpuMapView(service.Nodes(), holders, samples, may_see, service.Now()));
}

}  // namespace drover::api
