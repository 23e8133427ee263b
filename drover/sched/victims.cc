// SelectVictims and LostGpuSeconds (victims.h).

#include "drover/sched/victims.h"

#include <algorithm>
#include <cstddef>
#include <utility>

#include "drover/sched/cluster_index.h"

namespace drover::sched {
namespace {

std::vector<const RunningJob*> JobsOf(const std::vector<Victim>& victims) {
  std::vector<const RunningJob*> jobs;
  jobs.reserve(victims.size());
  for (const Victim& victim : victims) jobs.push_back(victim.job);
  return jobs;
}

}  // namespace

bool MayBeVictim(const RunningJob& job, TimeMs now, DurationMs min_run_time) {
  const DurationMs ran = now - job.started_at;
  return job.spec->interruptible && !job.placement->workers.empty() && ran > 0 &&
         ran >= min_run_time;
}

VictimSelection SelectVictims(std::span<const RunningJob> running, const VictimRules& rules) {
  VictimSelection selection;
  std::vector<Victim> candidates;
  for (const RunningJob& job : running) {
    if (!MayBeVictim(job, rules.now, rules.min_run_time)) continue;
    if (std::optional<VictimReason> reason = rules.reason(job)) {
      candidates.push_back({&job, LostGpuSeconds(job, rules.now), *reason});
    }
  }
  selection.candidates = static_cast<int>(candidates.size());
  if (candidates.empty()) return selection;
  std::sort(candidates.begin(), candidates.end(), [](const Victim& a, const Victim& b) {
    if (a.lost_gpu_seconds != b.lost_gpu_seconds) return a.lost_gpu_seconds < b.lost_gpu_seconds;
    if (a.job->priority != b.job->priority) return a.job->priority < b.job->priority;
    if (a.job->started_at != b.job->started_at) return a.job->started_at > b.job->started_at;
    return a.job->job < b.job->job;
  });

  // Greedy: add victims cheapest first until the preemptor fits.
  std::vector<Victim> chosen;
  std::vector<const RunningJob*> chosen_jobs;
  bool fits = false;
  for (const Victim& candidate : candidates) {
    chosen.push_back(candidate);
    chosen_jobs.push_back(candidate.job);
    if (rules.frees_enough(chosen_jobs)) {
      fits = true;
      break;
    }
  }
  if (!fits) return selection;

  // Drop victims it does not need, the costliest first.
  std::vector<std::size_t> order(chosen.size());
  for (std::size_t i = 0; i < order.size(); ++i) order[i] = i;
  std::sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) {
    return chosen[a].lost_gpu_seconds > chosen[b].lost_gpu_seconds;
  });
  std::vector<char> keep(chosen.size(), 1);
  for (std::size_t drop : order) {
    if (chosen.size() == 1) break;
    keep[drop] = 0;
    std::vector<Victim> rest;
    for (std::size_t i = 0; i < chosen.size(); ++i) {
      if (keep[i]) rest.push_back(chosen[i]);
    }
    if (rest.empty() || !rules.frees_enough(JobsOf(rest))) keep[drop] = 1;
  }
  for (std::size_t i = 0; i < chosen.size(); ++i) {
    if (keep[i]) selection.victims.push_back(std::move(chosen[i]));
  }
  return selection;
}

double LostGpuSeconds(const RunningJob& job, TimeMs now) {
  const TimeMs since = std::max(job.started_at, job.last_checkpoint_at);
  double gpus = 0.0;
  if (job.charge != nullptr) {
    auto it = job.charge->amounts.find("gpu");
    if (it != job.charge->amounts.end()) {
      gpus = static_cast<double>(it->second) / internal::kShareMillisPerGpu;
    }
  }
  return gpus * static_cast<double>(std::max<TimeMs>(now - since, 0)) / kMillisPerSecond;
}

}  // namespace drover::sched
