#include "drover/api/gpu_handlers.h"

#include <cstdint>
#include <iterator>
#include <map>
#include <utility>

#include "drover/codec/json_writer.h"

namespace drover::api {

namespace {

bool HoldsGpus(model::JobState state) {
  return state == model::JobState::kPlaced || state == model::JobState::kStarting ||
         state == model::JobState::kRunning;
}

}  // namespace

std::string GpuMapJson(const std::vector<NodeStatus>& nodes, const std::vector<model::Job>& jobs,
                       std::span<const model::GpuActivity> samples,
                       const std::function<bool(const model::Job&)>& may_see, TimeMs now) {
  // The job holding each GPU, and whether the caller may see it (asked once per job).
  struct Holder {
    const model::Job* job = nullptr;
    bool named = false;
  };
  std::map<std::pair<NodeId, int>, Holder> holders;
  for (const model::Job& job : jobs) {
    if (!HoldsGpus(job.state) || job.attempts.empty()) continue;
    const Holder holder{&job, may_see(job)};
    for (const model::Worker& worker : job.attempts.back().workers) {
      if (worker.state == model::WorkerState::kExited) continue;
      for (int index : worker.gpus) holders[{worker.node, index}] = holder;
    }
  }
  std::map<std::pair<NodeId, int>, const model::GpuActivity*> latest;
  for (const model::GpuActivity& sample : samples) {
    if (now - sample.at <= kGpuSampleMaxAgeMs) latest[{sample.node, sample.index}] = &sample;
  }
  std::string text;
  codec::JsonWriter out(text);
  // A measured value, null when the sampler could not read it (negative).
  auto known = [&out](std::int64_t value) {
    if (value < 0) {
      out.Null();
    } else {
      out.Int(value);
    }
  };
  out.BeginObject();
  out.Key("gpus");
  out.BeginArray();
  for (const NodeStatus& status : nodes) {
    for (const model::Gpu& gpu : status.node.gpus) {
      const std::pair key(status.node.name, gpu.index);
      const auto holder = holders.find(key);
      const auto sample = latest.find(key);
      const Holder held = holder == holders.end() ? Holder{} : holder->second;
      const model::GpuActivity* seen = sample == latest.end() ? nullptr : sample->second;
      std::string_view state = "idle";
      if (held.job != nullptr) {
        state = seen != nullptr && seen->utilization_pct >= kGpuActivePct ? "active" : "allocated";
      }
      // Keys in sorted order, as DumpJson writes an object.
      out.BeginObject();
      out.Key("index");
      out.Int(gpu.index);
      out.Key("job");
      if (held.named) {
        out.Int(held.job->id.value());
      } else {
        out.Null();
      }
      out.Key("memory_bytes");
      out.Int(gpu.memory_bytes);
      out.Key("memory_used_bytes");
      if (seen != nullptr) {
        known(seen->memory_used_bytes);
      } else {
        out.Null();
      }
      out.Key("model");
      out.String(gpu.model);
      out.Key("node");
      out.String(status.node.name.value());
      out.Key("owner");
      if (held.named) {
        out.String(held.job->spec.owner);
      } else {
        out.Null();
      }
      out.Key("sampled_at");
      if (seen != nullptr) {
        out.Int(seen->at);
      } else {
        out.Null();
      }
      out.Key("state");
      out.String(state);
      out.Key("utilization_pct");
      if (seen != nullptr) {
        known(seen->utilization_pct);
      } else {
        out.Null();
      }
      out.EndObject();
    }
  }
  out.EndArray();
  out.EndObject();
  return text;
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
  Response response{200, {}, "application/json", {}, {}, {}};
  response.body = GpuMapJson(service.Nodes(), holders, samples, may_see, service.Now());
  return response;
}

}  // namespace drover::api
