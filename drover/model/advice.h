#pragma once

// Right-sizing advice (docs/observability.md, "Advice"; `drover advise`): what a job name or
// pipeline stage should request, from the measured history of its earlier attempts. Like the
// Kubernetes VPA recommender: per resource a histogram of the attempts' measured use whose
// weights decay with age (half-life 24 h), the target at its 90th percentile plus a 15% safety
// margin, and nothing recommended from too little history. Pure: values in, advice out.

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "drover/common/clock.h"
#include "drover/model/job.h"
#include "drover/model/node.h"
#include "drover/model/usage.h"

namespace drover::model {

// One measured attempt of the history, per worker.
struct UsageRecord {
  JobId job;
  int attempt = 0;
  TimeMs at = 0;                           // its last sample: the age its weight decays with
  double cpu_millis = 0;                   // mean millicores per worker over its sampled time
  std::int64_t peak_rss_bytes = 0;         // largest RSS of one process (VmHWM)
  std::int64_t peak_gpu_memory_bytes = 0;  // UsageSummary::gpu_memory_used_bytes
  double gpu_util_mean = -1;               // percent per GPU; -1: no GPU samples
  double sm_active_mean = -1;              // GPM SM activity, percent per GPU; -1: no GPM samples
  DurationMs sampled_ms = 0;               // first to last sample
  DurationMs run_ms = 0;  // running to finished when the attempt succeeded; 0: unknown
};

// The attempts of `job` that `usage` measured for at least `min_sampled_ms`, as records.
std::vector<UsageRecord> UsageRecordsOf(const Job& job, std::span<const AttemptUsage> usage,
                                        DurationMs min_sampled_ms);

// A MIG instance profile the cluster offers: a node's GPU of `gpu_model` in `mig` mode is cut into
// instances of `profile` (model::Gpu::mig), and the profile exists on that GPU per NVIDIA's table
// (MigProfilesOf).
struct MigOffer {
  std::string gpu_model;
  std::string profile;

  friend auto operator<=>(const MigOffer&, const MigOffer&) = default;
};

// The distinct MIG offers of `nodes`' GPUs, sorted; a layout's profile that NVIDIA's table does
// not list for the GPU is left out (node files check a layout's syntax only).
std::vector<MigOffer> MigOffersOf(std::span<const Node> nodes);

struct AdviceOptions {
  DurationMs half_life_ms = 24 * kMillisPerHour;  // VPA: cpu-histogram-decay-half-life 24h
  double target_percentile = 0.9;                 // VPA: target-cpu/memory-percentile 0.9
  double safety_margin = 0.15;                    // VPA: recommendation-margin-fraction 0.15
  // Fewer measured attempts recommend nothing (Drover's default; VPA waits for history too).
  int min_history = 3;
  // A request changes only when the target is below (1 - change_share) of it or above it.
  double change_share = 0.25;
  // The timeout recommended: the target run time times this (room for a slow attempt).
  double timeout_factor = 1.5;
  // The MIG profiles the cluster offers (MigOffersOf); empty: no MIG advice.
  std::vector<MigOffer> mig_offers;
  // The share of a profile's nominal memory ("10gb" of 1g.10gb) a job may plan to use: an
  // instance's usable memory is a little below its name (nvidia-smi shows 9,728 MiB for an
  // A100 80GB's 1g.10gb, 0.95 of 10 GiB); Drover keeps a further margin.
  double mig_memory_share = 0.9;
};

struct Recommendation {
  std::string field;    // the spec key: cpu, memory, gpu_memory, gpus, gpu_share, mig, timeout
  std::string current;  // as the spec writes it; "none" when unset
  std::string target;   // as the spec writes it
  std::string evidence;

  friend bool operator==(const Recommendation&, const Recommendation&) = default;
};

struct Advice {
  int history = 0;         // measured attempts used
  DurationMs span_ms = 0;  // from the oldest to the newest of them
  std::string confidence;  // "low" (< 5 attempts), "medium" (< 20) or "high"
  // Set when nothing is recommended for lack of history: why, naming the minimum.
  std::string no_advice;
  std::vector<Recommendation> recommendations;

  // The recommendations as a YAML spec patch (`resources:` keys, then `timeout:`); "" if none.
  std::string Patch() const;
};

// What `spec` (per worker) should request, from `history` judged at `now`.
Advice Advise(const JobSpec& spec, std::span<const UsageRecord> history, TimeMs now,
              const AdviceOptions& options = {});

}  // namespace drover::model
