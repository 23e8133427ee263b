#include "drover/model/advice.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <optional>
#include <set>
#include <utility>

#include "drover/common/quantity.h"
#include "drover/model/mig.h"

namespace drover::model {
namespace {

constexpr std::int64_t kMi = 1 << 20;

// A decaying histogram of one resource: each attempt's value with the weight 2^(-age/half-life).
class DecayingHistogram {
 public:
  DecayingHistogram(TimeMs now, DurationMs half_life) : now_(now), half_life_(half_life) {}

  void Add(double value, TimeMs at) {
    const double age = static_cast<double>(std::max<TimeMs>(now_ - at, 0));
    points_.emplace_back(value, std::exp2(-age / static_cast<double>(half_life_)));
  }
  std::size_t size() const { return points_.size(); }
  // The smallest value whose cumulative weight reaches `percentile` of the total; 0 if empty.
  double Percentile(double percentile) {
    std::sort(points_.begin(), points_.end());
    double total = 0;
    for (const auto& [value, weight] : points_) total += weight;
    double cumulative = 0;
    for (const auto& [value, weight] : points_) {
      cumulative += weight;
      if (cumulative >= percentile * total) return value;
    }
    return points_.empty() ? 0 : points_.back().first;
  }

 private:
  TimeMs now_;
  DurationMs half_life_;
  std::vector<std::pair<double, double>> points_;  // value, weight
};

std::int64_t RoundUp(double value, std::int64_t step) {
  return std::max<std::int64_t>(step, static_cast<std::int64_t>(std::ceil(value / step)) * step);
}

// Whether a request of `asked` should become `target`: far below it, or above it.
bool Changes(double target, double asked, const AdviceOptions& options) {
  return asked > 0 && (target < (1 - options.change_share) * asked || target > asked);
}

std::string Basis(const AdviceOptions& options, std::size_t attempts) {
  return fmt::format("p{:.0f} of {} attempt(s) + {:.0f}%", options.target_percentile * 100,
                     attempts, options.safety_margin * 100);
}

// The smallest offered MIG profile (fewest compute slices, then least memory) of a GPU model
// the job accepts whose compute share holds `compute_pct` of one GPU and whose usable memory
// holds `memory_bytes`; nullopt when none does or the smallest fitting one is a whole GPU.
std::optional<std::pair<MigOffer, MigProfile>> SmallestFittingMig(const Requirements& asked,
                                                                  double compute_pct,
                                                                  double memory_bytes,
                                                                  const AdviceOptions& options) {
  std::optional<std::pair<MigOffer, MigProfile>> best;
  for (const MigOffer& offer : options.mig_offers) {
    if (!asked.gpu_models.empty() && std::find(asked.gpu_models.begin(), asked.gpu_models.end(),
                                               offer.gpu_model) == asked.gpu_models.end()) {
      continue;
    }
    Result<MigProfile> profile = ParseMigProfile(offer.profile);
    if (!profile || profile->compute_slices >= kMigComputeSlices) continue;
    const double usable = options.mig_memory_share * static_cast<double>(profile->memory_gb) *
                          static_cast<double>(std::int64_t{1} << 30);
    const double compute = 100.0 * profile->compute_slices / kMigComputeSlices;
    if (compute_pct > compute || memory_bytes > usable) continue;
    if (!best || std::pair(profile->compute_slices, profile->memory_gb) <
                     std::pair(best->second.compute_slices, best->second.memory_gb)) {
      best = std::pair(offer, *profile);
    }
  }
  return best;
}

}  // namespace

std::vector<UsageRecord> UsageRecordsOf(const Job& job, std::span<const AttemptUsage> usage,
                                        DurationMs min_sampled_ms) {
  std::vector<UsageRecord> out;
  const int workers = std::max(job.spec.workers, 1);
  for (const AttemptUsage& measured : usage) {
    const UsageSummary& summary = measured.summary;
    const DurationMs sampled = summary.last_at - summary.first_at;
    if (sampled < min_sampled_ms || sampled <= 0) continue;
    UsageRecord record;
    record.job = job.id;
    record.attempt = measured.attempt;
    record.at = summary.last_at;
    record.cpu_millis =
        static_cast<double>(summary.cpu_ms) * 1000 / (static_cast<double>(sampled) * workers);
    record.peak_rss_bytes = summary.peak_rss_bytes;
    record.peak_gpu_memory_bytes = summary.gpu_memory_used_bytes();
    record.gpu_util_mean = summary.gpu_util.count > 0 ? summary.gpu_util.mean() : -1;
    record.sm_active_mean = summary.has_gpm() ? summary.sm_active.mean() : -1;
    record.sampled_ms = sampled;
    for (const Attempt& attempt : job.attempts) {
      if (attempt.number == measured.attempt && attempt.outcome == JobState::kSucceeded &&
          attempt.running_at != 0 && attempt.finished_at > attempt.running_at) {
        record.run_ms = attempt.finished_at - attempt.running_at;
      }
    }
    out.push_back(record);
  }
  return out;
}

std::string Advice::Patch() const {
  std::string resources;
  std::string rest;
  for (const Recommendation& r : recommendations) {
    if (r.field == "timeout") {
      rest += fmt::format("timeout: {}\n", r.target);
      continue;
    }
    if (r.field == "gpu_share" || r.field == "mig") resources += "  gpus: 0\n";
    resources += fmt::format("  {}: {}\n", r.field, r.target);
  }
  return (resources.empty() ? "" : "resources:\n" + resources) + rest;
}

std::vector<MigOffer> MigOffersOf(std::span<const Node> nodes) {
  std::set<MigOffer> offers;
  for (const Node& node : nodes) {
    for (const Gpu& gpu : node.gpus) {
      if (gpu.sharing != GpuSharing::kMig) continue;
      const std::span<const MigProfileSpec> known = MigProfilesOf(gpu.model, gpu.memory_bytes);
      for (const MigSlots& slots : gpu.mig) {
        const bool listed = std::any_of(known.begin(), known.end(), [&](const MigProfileSpec& p) {
          return p.name == slots.profile;
        });
        if (listed) offers.insert(MigOffer{gpu.model, slots.profile});
      }
    }
  }
  return {offers.begin(), offers.end()};
}

Advice Advise(const JobSpec& spec, std::span<const UsageRecord> history, TimeMs now,
              const AdviceOptions& options) {
  Advice advice;
  advice.history = static_cast<int>(history.size());
  if (!history.empty()) {
    auto [oldest, newest] =
        std::minmax_element(history.begin(), history.end(),
                            [](const UsageRecord& a, const UsageRecord& b) { return a.at < b.at; });
    advice.span_ms = newest->at - oldest->at;
  }
  advice.confidence = advice.history < 5 ? "low" : advice.history < 20 ? "medium" : "high";
  if (advice.history < options.min_history) {
    advice.no_advice =
        fmt::format("{} measured attempt(s) of at least the minimum sampled time; advice needs {}",
                    advice.history, options.min_history);
    return advice;
  }
  const Requirements& asked = spec.requirements;
  const double grow = 1 + options.safety_margin;
  const std::string basis = Basis(options, history.size());
  DecayingHistogram cpu(now, options.half_life_ms), memory(now, options.half_life_ms),
      gpu_memory(now, options.half_life_ms), activity(now, options.half_life_ms),
      sm_active(now, options.half_life_ms), run(now, options.half_life_ms),
      sampled(now, options.half_life_ms);
  for (const UsageRecord& record : history) {
    cpu.Add(record.cpu_millis, record.at);
    memory.Add(static_cast<double>(record.peak_rss_bytes), record.at);
    if (record.gpu_util_mean >= 0) {
      activity.Add(record.gpu_util_mean, record.at);
      gpu_memory.Add(static_cast<double>(record.peak_gpu_memory_bytes), record.at);
      sampled.Add(static_cast<double>(record.sampled_ms), record.at);
    }
    if (record.sm_active_mean >= 0) sm_active.Add(record.sm_active_mean, record.at);
    if (record.run_ms > 0) run.Add(static_cast<double>(record.run_ms), record.at);
  }
  const double p = options.target_percentile;

  const double cpu_used = cpu.Percentile(p);
  const std::int64_t cpu_target = RoundUp(cpu_used * grow, 10);
  if (Changes(static_cast<double>(cpu_target), static_cast<double>(asked.per_worker.cpu_millis),
              options)) {
    advice.recommendations.push_back({"cpu", FormatCpuMillis(asked.per_worker.cpu_millis),
                                      FormatCpuMillis(cpu_target),
                                      fmt::format("mean use {} per worker ({})",
                                                  FormatCpuMillis(std::llround(cpu_used)), basis)});
  }
  const double rss = memory.Percentile(p);
  const std::int64_t memory_target = RoundUp(rss * grow, kMi);
  if (Changes(static_cast<double>(memory_target),
              static_cast<double>(asked.per_worker.memory_bytes), options)) {
    advice.recommendations.push_back(
        {"memory", FormatBytes(asked.per_worker.memory_bytes), FormatBytes(memory_target),
         fmt::format("peak RSS {} per worker ({})",
                     FormatBytesApprox(static_cast<std::int64_t>(rss)), basis)});
  }
  const bool whole_gpus = asked.per_worker.gpus > 0;
  if (activity.size() >= static_cast<std::size_t>(options.min_history)) {
    const double used_memory = gpu_memory.Percentile(p);
    const std::int64_t gpu_memory_target = RoundUp(used_memory * grow, kMi);
    const double active = activity.Percentile(p);
    const double active_target = std::min(active * grow, 100.0);
    const std::string activity_basis = fmt::format(
        "mean GPU activity {:.0f}% ({}; time-slicing shares the GPU's time, docs/spec.md)", active,
        basis);
    // The compute a MIG slice must hold: SM activity where every measured attempt has GPM
    // (what a slice's SMs bound), else GPU activity (an upper bound: a kernel running at all).
    const bool by_sm = sm_active.size() == activity.size();
    const std::string measure = by_sm ? "mean SM activity" : "mean GPU activity";
    const double compute_target =
        by_sm ? std::min(sm_active.Percentile(p) * grow, 100.0) : active_target;
    const auto mig = whole_gpus && asked.per_worker.gpus == 1
                         ? SmallestFittingMig(asked, compute_target,
                                              static_cast<double>(gpu_memory_target), options)
                         : std::nullopt;
    bool share = false;
    if (mig) {
      const auto& [offer, profile] = *mig;
      const double saved_share =
          1 - static_cast<double>(profile.compute_slices) / kMigComputeSlices;
      const double run_hours = sampled.Percentile(p) / kMillisPerHour;
      advice.recommendations.push_back(
          {"mig", "none (1 whole GPU)", offer.profile,
           fmt::format("{} {:.0f}% and peak GPU memory {} fit {} of an {} ({}/7 of the SMs, "
                       "{} GB; NVIDIA MIG user guide): saves {}/7 of a GPU, {:.2f} GPU-hours "
                       "per worker per {:.1f} h run ({})",
                       measure, by_sm ? sm_active.Percentile(p) : active,
                       FormatBytesApprox(static_cast<std::int64_t>(used_memory)), offer.profile,
                       offer.gpu_model, profile.compute_slices, profile.memory_gb,
                       kMigComputeSlices - profile.compute_slices, saved_share * run_hours,
                       run_hours, basis)});
    } else if (whole_gpus && asked.per_worker.gpus == 1 && active_target <= 50) {
      share = true;
      advice.recommendations.push_back({"gpu_share", "none (1 whole GPU)",
                                        FormatCpuMillis(RoundUp(active_target * 10, 250)),
                                        activity_basis});
    } else if (whole_gpus && asked.per_worker.gpus > 1) {
      const auto needed = static_cast<std::int64_t>(
          std::ceil(static_cast<double>(asked.per_worker.gpus) * active_target / 100));
      if (needed < asked.per_worker.gpus) {
        advice.recommendations.push_back(
            {"gpus", std::to_string(asked.per_worker.gpus),
             std::to_string(std::max<std::int64_t>(needed, 1)),
             fmt::format("{} GPUs at mean activity {:.0f}% do the work of {} busy ones if the "
                         "work consolidates ({})",
                         asked.per_worker.gpus, active, needed, basis)});
      }
    }
    if ((share || asked.gpu_memory_bytes > 0) &&
        (share || Changes(static_cast<double>(gpu_memory_target),
                          static_cast<double>(asked.gpu_memory_bytes), options))) {
      advice.recommendations.push_back(
          {"gpu_memory", asked.gpu_memory_bytes > 0 ? FormatBytes(asked.gpu_memory_bytes) : "none",
           FormatBytes(gpu_memory_target),
           fmt::format("peak GPU memory {} ({})",
                       FormatBytesApprox(static_cast<std::int64_t>(used_memory)), basis)});
    }
  }
  if (run.size() >= static_cast<std::size_t>(options.min_history)) {
    const double run_ms = run.Percentile(p);
    const std::int64_t timeout_target = RoundUp(run_ms * options.timeout_factor, kMillisPerMinute);
    const double current = spec.timeout ? static_cast<double>(*spec.timeout) : 0;
    if (!spec.timeout || Changes(static_cast<double>(timeout_target), current, options)) {
      advice.recommendations.push_back(
          {"timeout", spec.timeout ? FormatDuration(*spec.timeout) : "none",
           FormatDuration(timeout_target),
           fmt::format("run time {} of the successful attempts (p{:.0f} of {}) x {}",
                       FormatDuration(static_cast<DurationMs>(run_ms)), p * 100, run.size(),
                       options.timeout_factor)});
    }
  }
  return advice;
}

}  // namespace drover::model
