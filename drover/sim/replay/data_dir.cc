// TraceFromDataDir (replay.h): a server's recorded jobs as a trace.

#include <fmt/format.h>

#include <algorithm>
#include <filesystem>
#include <limits>
#include <map>
#include <set>

#include "drover/sim/replay/replay.h"
#include "drover/store/store.h"

namespace drover::sim {
namespace {

constexpr std::int64_t kMinCpuMillis = 1000;
constexpr std::int64_t kMinMemoryBytes = std::int64_t{1} << 30;

// What the placements tell about one node.
struct SeenNode {
  int max_gpu_index = -1;
  std::string model;            // a model a job placed here asked for
  std::int64_t gpu_memory = 0;  // the most GPU memory a job placed here asked for
  std::set<int> shared;         // GPUs a time-sliced share was placed on
  // (time, +/- amount) of CPU and memory requested on the node, for the peak.
  std::vector<std::pair<TimeMs, std::int64_t>> cpu;
  std::vector<std::pair<TimeMs, std::int64_t>> memory;
};

std::int64_t Peak(std::vector<std::pair<TimeMs, std::int64_t>>& changes) {
  // At one instant releases come first: what ends as another starts was not held at once.
  std::sort(changes.begin(), changes.end());
  std::int64_t held = 0;
  std::int64_t peak = 0;
  for (const auto& [at, amount] : changes) {
    held += amount;
    peak = std::max(peak, held);
  }
  return peak;
}

// The work that counted (see replay.h): the last attempt's run time plus, for each attempt
// followed by one that resumed, its run time up to its last checkpoint.
DurationMs WorkOf(const model::Job& job) {
  DurationMs work = 0;
  for (std::size_t i = 0; i < job.attempts.size(); ++i) {
    const model::Attempt& attempt = job.attempts[i];
    if (attempt.running_at == 0) continue;
    const bool last = i + 1 == job.attempts.size();
    if (last) {
      if (attempt.finished_at != 0) work += attempt.finished_at - attempt.running_at;
    } else if (job.attempts[i + 1].resumed && attempt.last_checkpoint_at > attempt.running_at) {
      work += attempt.last_checkpoint_at - attempt.running_at;
    }
  }
  return work;
}

bool Ran(const model::Job& job) {
  return std::any_of(job.attempts.begin(), job.attempts.end(),
                     [](const model::Attempt& attempt) { return attempt.running_at != 0; });
}

}  // namespace

Result<Trace> TraceFromDataDir(const std::string& data_dir, TimeMs from, TimeMs to) {
  if (from > to) {
    return InvalidArgument(fmt::format("the window [{}, {}) ends before it starts", from, to));
  }
  const std::string path = (std::filesystem::path(data_dir) / "drover.db").string();
  std::error_code ec;
  if (!std::filesystem::exists(path, ec)) {
    return NotFound(fmt::format("{} does not exist: not a Drover data directory", path));
  }
  DROVER_ASSIGN_OR_RETURN(std::unique_ptr<store::Store> opened, store::OpenSqliteStore(path));
  DROVER_ASSIGN_OR_RETURN(const std::vector<model::Job> jobs, opened->ListJobs(store::JobFilter{}));

  // Nodes from every stored placement.
  std::map<std::string, SeenNode> seen;
  for (const model::Job& job : jobs) {
    const model::Requirements& req = job.spec.requirements;
    for (const model::Attempt& attempt : job.attempts) {
      if (attempt.placed_at == 0) continue;
      const TimeMs end =
          attempt.finished_at != 0 ? attempt.finished_at : std::numeric_limits<TimeMs>::max();
      for (const model::Worker& worker : attempt.workers) {
        SeenNode& node = seen[worker.node.value()];
        for (int gpu : worker.gpus) {
          node.max_gpu_index = std::max(node.max_gpu_index, gpu);
          if (req.gpu_share_millis > 0) node.shared.insert(gpu);
        }
        if (node.model.empty() && !req.gpu_models.empty()) node.model = req.gpu_models.front();
        node.gpu_memory = std::max(node.gpu_memory, req.gpu_memory_bytes);
        node.cpu.emplace_back(attempt.placed_at, req.per_worker.cpu_millis);
        node.cpu.emplace_back(end, -req.per_worker.cpu_millis);
        node.memory.emplace_back(attempt.placed_at, req.per_worker.memory_bytes);
        node.memory.emplace_back(end, -req.per_worker.memory_bytes);
      }
    }
  }
  Trace trace;
  for (auto& [name, node] : seen) {
    model::Node out;
    out.name = NodeId(name);
    out.cpu_millis = std::max(Peak(node.cpu), kMinCpuMillis);
    out.memory_bytes = std::max(Peak(node.memory), kMinMemoryBytes);
    for (int index = 0; index <= node.max_gpu_index; ++index) {
      model::Gpu gpu;
      gpu.index = index;
      gpu.uuid = fmt::format("GPU-replay-{}-{}", name, index);
      gpu.model = node.model.empty() ? "GPU" : node.model;
      gpu.memory_bytes = node.gpu_memory;
      if (node.shared.contains(index)) gpu.sharing = model::GpuSharing::kTimeslice;
      out.gpus.push_back(std::move(gpu));
    }
    trace.nodes.push_back(std::move(out));
  }

  // Jobs submitted in the window that ran.
  std::map<std::string, int> name_count;
  std::vector<const model::Job*> chosen;
  for (const model::Job& job : jobs) {
    if (job.created_at < from || job.created_at >= to || !Ran(job)) continue;
    chosen.push_back(&job);
    ++name_count[job.spec.name];
  }
  std::stable_sort(chosen.begin(), chosen.end(), [](const model::Job* a, const model::Job* b) {
    return a->created_at < b->created_at;
  });
  for (const model::Job* job : chosen) {
    TraceJob out;
    out.name = name_count[job->spec.name] > 1
                   ? fmt::format("{}-{}", job->spec.name, job->id.value())
                   : job->spec.name;
    out.submit = job->created_at - from;
    out.duration = WorkOf(*job);
    out.user = job->spec.owner;
    out.spec = job->spec;
    out.spec.depends_on.clear();  // each job is submitted alone
    out.spec.retry = model::RetryPolicy{};
    trace.jobs.push_back(std::move(out));
  }
  return trace;
}

}  // namespace drover::sim
