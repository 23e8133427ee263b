#pragma once

// Synthetic traces drawn to match the job-size and run-time statistics published for real GPU
// clusters (AcmeTrace: Seren, Kalos, Philly, Helios; HeliosArtifact: Venus, Earth, Saturn,
// Uranus), at any scale: the 1M-job benchmark and load sweeps use them.

#include <cstdint>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include "drover/common/result.h"
#include "drover/sim/trace/trace.h"

namespace drover::sim {

// The GPU-job statistics of one cluster, in seconds and GPUs.
struct ClusterSummary {
  std::string id;
  double avg_run_seconds = 0, median_run_seconds = 0, max_run_seconds = 0, avg_gpus = 0,
         median_gpus = 0;
  int max_gpus = 0;
  double avg_queue_seconds = 0, median_queue_seconds = 0;
};

// The row `id` of a cluster summary CSV, from its GPU-job columns:
//   avg_run_time_gpu, med_run_time_gpu, avg_gpu_num, med_gpu_num, avg_que_time_gpu and
//   med_que_time_gpu (required), max_run_time_gpu and max_gpu (read when present).
// AcmeTrace's acme_cluster_summary.csv has all of them. HeliosArtifact's
// helios_cluster_summary.csv has no max_* columns: max_run_seconds stays 0 (no cap) and
// max_gpus is the cluster's GPU count (gpu_num), the widest a job can be.
// Errors: kNotFound for a missing file or an id the file lacks (the message lists the ids);
// kInvalidArgument ("FILE:LINE: column 'NAME': ...") for a missing column or a malformed or
// negative number in the row of `id`.
Result<ClusterSummary> LoadClusterSummary(const std::string& path, const std::string& id);

struct SyntheticOptions {
  int nodes = 64;  // nodes "node-00000".., each with gpus_per_node GPUs
  int gpus_per_node = 8;
  std::int64_t jobs = 1000;
  double load = 0.9;       // offered GPU-time / (cluster GPUs x arrival span)
  int queues = 4;          // queues "q0".."q{queues-1}"
  std::uint64_t seed = 1;  // seeds the trace's std::mt19937_64; same options, same trace
};

// A trace of options.jobs jobs on options.nodes identical nodes, drawn with one
// std::mt19937_64 seeded from options.seed (no other randomness): the same summary and options
// give the identical trace. The uniform, exponential and normal transforms are written out
// rather than taken from <random>'s distributions, whose algorithms differ between standard
// libraries, so only the math library's log/exp/cos could change a trace across platforms.
//
// Nodes: "node-00000".. with 16 cores and 128 GiB per GPU, gpus_per_node exclusive "H100" GPUs
// of 80 GiB (uuid "GPU-syn-<node>-<i>"), labelled rack "r<i/16>" (16 nodes a rack).
//
// Jobs "job-0000000".. in ascending submit:
//  - Run time: lognormal with the summary's median and mean, i.e. mu = ln(median) and
//    sigma = sqrt(2 ln(mean / median)) (0 when mean <= median), capped at max_run_seconds (when
//    > 0) and at least 1 s, in whole milliseconds. The cap trims the mean a little (Seren: 1414 s
//    uncapped, 1397 s capped).
//  - GPUs: powers of two from M to G, where G is the largest power of two <= min(max_gpus,
//    nodes x gpus_per_node) (max_gpus <= 0: the cluster alone) and M is median_gpus rounded to
//    a power of two in log scale (at least 1, at most G). The law is geometric in the exponent:
//    P(2^k M) proportional to r^k. If the r that gives mean avg_gpus leaves P(M) >= 0.55, that is
//    the law; otherwise P(M) is held at 0.55 (so the sample median is M with margin) and the
//    sizes 2M..G share 0.45 with their own ratio (which may exceed 1). r is found by bisection,
//    so the law's mean is avg_gpus exactly when reachable; a mean <= M gives every job M GPUs,
//    and one above 0.55 M + 0.45 G gets about that bound. With the defaults (64 x 8 GPUs):
//    Seren 5.68 (P(1) = 0.55, P(512) = 0.15%), Kalos 26.77 (P(1) = 0.55, P(512) = 2%);
//    MakeGpuSizeLaw returns the law and its mean.
//  - A job wider than a node is a gang of whole nodes: ceil(gpus / gpus_per_node) workers of
//    gpus_per_node GPUs (exact with a power-of-two gpus_per_node). Per worker: 8 cores and
//    64 GiB for each GPU, so GPUs are the scarce resource.
//  - Arrivals: a Poisson process conditioned on its count: exponential gaps scaled so that the
//    last job arrives at span T = (sum of gpus x duration) / (load x cluster GPUs); the offered
//    load over [0, T] is then `load` up to millisecond rounding.
//  - Each job's user is "u<k>" with k uniform in 0..4 x queues - 1, and its queue is
//    "q<k mod queues>" (each user submits to one queue). Priority "normal".
//  - Every 4th job (index 3, 7, 11, ...) is interruptible and checkpoints every 10 minutes;
//    the others are neither.
// Preconditions (clamped, not errors): nodes, gpus_per_node and queues at least 1, jobs at least
// 0, load > 0 (a load <= 0 is taken as 1).
// Cost: linear; a million jobs hold about 1.1 GB (sizeof(TraceJob) is about 1.1 KB) and take a
// few seconds of CPU in an optimized build, most of it first-touching that memory. A replay
// reads the same jobs from a SyntheticJobStream without holding them.
Trace MakeSyntheticTrace(const ClusterSummary& summary, const SyntheticOptions& options);

// The nodes of MakeSyntheticTrace(summary, options).
std::vector<model::Node> MakeSyntheticNodes(const SyntheticOptions& options);

// The jobs of MakeSyntheticTrace(summary, options), the same in the same order, one at a time:
// nothing is held per job. Construction draws every job once (the arrival span depends on all
// the jobs' sizes and run times, and Queues() on their users); Next draws them again from the
// same seed, so the draws cost twice what MakeSyntheticTrace's do (a fraction of a second per
// million jobs in an optimized build).
class SyntheticJobStream final : public JobStream {
 public:
  SyntheticJobStream(const ClusterSummary& summary, const SyntheticOptions& options);
  std::optional<TraceJob> Next() override;
  const std::vector<std::string>& Queues() const override { return queues_; }
  std::size_t SizeHint() const override { return static_cast<std::size_t>(jobs_); }

 private:
  struct Draw {
    int gpus = 0;
    DurationMs duration = 0;
    std::size_t user = 0;
    double gap = 0;  // before the arrival, unscaled
  };
  // The next job's draws from rng_.
  Draw DrawJob();

  int gpus_per_node_ = 1;
  std::int64_t jobs_ = 0;
  std::uint64_t seed_ = 1;
  std::vector<int> sizes_;
  std::vector<double> cumulative_;  // of the size law's probabilities
  double mu_ = 0, sigma_ = 0, cap_ = 0;
  std::vector<std::string> user_names_, user_queues_;
  std::vector<std::string> queues_;
  double scale_ = 0;  // unscaled arrival -> milliseconds
  std::mt19937_64 rng_;
  std::int64_t next_ = 0;
  double clock_ = 0;
};

// The job-size law MakeSyntheticTrace draws from (exposed for tests and reports).
struct GpuSizeLaw {
  std::vector<int> sizes;             // 1, 2, 4, ... (powers of two from the median up)
  std::vector<double> probabilities;  // same length, summing to 1
  double mean = 0;                    // the law's mean, what avg_gpus is matched to
};
GpuSizeLaw MakeGpuSizeLaw(const ClusterSummary& summary, const SyntheticOptions& options);

}  // namespace drover::sim
