#include "drover/sim/trace/synthetic.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <numbers>
#include <random>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "drover/sim/trace/csv.h"
#include "drover/sim/trace/load_util.h"

namespace drover::sim {
namespace {

constexpr std::int64_t kGiB = 1LL << 30;
// The least probability of the median size when the single geometric law cannot reach the mean.
constexpr double kMinMedianMass = 0.55;

// Uniform in [0, 1) from the top 53 bits.
double Uniform(std::mt19937_64& rng) { return static_cast<double>(rng() >> 11) * 0x1.0p-53; }

// Exponential with mean 1.
double Exponential(std::mt19937_64& rng) { return -std::log1p(-Uniform(rng)); }

// Standard normal by Box-Muller; each call draws two uniforms and returns one value (the other
// is dropped: simpler state, and the cost is small beside building a JobSpec).
double Normal(std::mt19937_64& rng) {
  const double u1 = 1.0 - Uniform(rng);  // (0, 1]
  const double u2 = Uniform(rng);
  return std::sqrt(-2.0 * std::log(u1)) * std::cos(2.0 * std::numbers::pi * u2);
}

// The probabilities of exponents 0..n-1 with weights r^k, r = exp(log_r), computed stably.
std::vector<double> GeometricWeights(int n, double log_r) {
  std::vector<double> p(static_cast<std::size_t>(n));
  const double top = log_r > 0 ? log_r * (n - 1) : 0.0;
  double sum = 0;
  for (int k = 0; k < n; ++k) {
    p[static_cast<std::size_t>(k)] = std::exp(log_r * k - top);
    sum += p[static_cast<std::size_t>(k)];
  }
  for (double& x : p) x /= sum;
  return p;
}

// Mean of sizes base * 2^k under `p`.
double MeanOf(const std::vector<double>& p, double base) {
  double mean = 0;
  double size = base;
  for (double x : p) {
    mean += x * size;
    size *= 2;
  }
  return mean;
}

// The log r for which the geometric law on n exponents (sizes base * 2^k) has mean `target`,
// by bisection; clamped to the ends of [-40, 40].
double SolveLogR(int n, double base, double target) {
  double lo = -40, hi = 40;
  for (int i = 0; i < 200; ++i) {
    const double mid = (lo + hi) / 2;
    if (MeanOf(GeometricWeights(n, mid), base) < target) {
      lo = mid;
    } else {
      hi = mid;
    }
  }
  return (lo + hi) / 2;
}

std::int64_t LargestPowerOfTwoAtMost(std::int64_t n) {
  std::int64_t p = 1;
  while (p <= n / 2) p *= 2;
  return p;
}

}  // namespace

Result<ClusterSummary> LoadClusterSummary(const std::string& path, const std::string& id) {
  DROVER_ASSIGN_OR_RETURN(CsvReader csv, CsvReader::Open(path));
  DROVER_ASSIGN_OR_RETURN(const int id_column, csv.Require("id"));
  DROVER_ASSIGN_OR_RETURN(const int avg_run, csv.Require("avg_run_time_gpu"));
  DROVER_ASSIGN_OR_RETURN(const int med_run, csv.Require("med_run_time_gpu"));
  DROVER_ASSIGN_OR_RETURN(const int avg_gpu, csv.Require("avg_gpu_num"));
  DROVER_ASSIGN_OR_RETURN(const int med_gpu, csv.Require("med_gpu_num"));
  DROVER_ASSIGN_OR_RETURN(const int avg_queue, csv.Require("avg_que_time_gpu"));
  DROVER_ASSIGN_OR_RETURN(const int med_queue, csv.Require("med_que_time_gpu"));
  const int max_run = csv.Find("max_run_time_gpu");
  const int max_gpu = csv.Find("max_gpu");
  const int cluster_gpus = csv.Find("gpu_num");

  std::vector<std::string> ids;
  while (true) {
    DROVER_ASSIGN_OR_RETURN(const bool more, csv.Next());
    if (!more) break;
    if (csv.Field(id_column) != id) {
      ids.emplace_back(csv.Field(id_column));
      continue;
    }
    auto number = [&](int column) -> Result<double> {
      DROVER_ASSIGN_OR_RETURN(const double value, csv.Number(column));
      if (value < 0) return tl::unexpected(csv.ColumnError(column, "must not be negative"));
      return value;
    };
    ClusterSummary summary;
    summary.id = id;
    DROVER_ASSIGN_OR_RETURN(summary.avg_run_seconds, number(avg_run));
    DROVER_ASSIGN_OR_RETURN(summary.median_run_seconds, number(med_run));
    DROVER_ASSIGN_OR_RETURN(summary.avg_gpus, number(avg_gpu));
    DROVER_ASSIGN_OR_RETURN(summary.median_gpus, number(med_gpu));
    DROVER_ASSIGN_OR_RETURN(summary.avg_queue_seconds, number(avg_queue));
    DROVER_ASSIGN_OR_RETURN(summary.median_queue_seconds, number(med_queue));
    if (max_run >= 0 && !csv.Empty(max_run)) {
      DROVER_ASSIGN_OR_RETURN(summary.max_run_seconds, number(max_run));
    }
    const int widest = max_gpu >= 0 ? max_gpu : cluster_gpus;
    if (widest >= 0 && !csv.Empty(widest)) {
      DROVER_ASSIGN_OR_RETURN(const double gpus, number(widest));
      if (gpus > 1e9) return tl::unexpected(csv.ColumnError(widest, "number is too large"));
      summary.max_gpus = static_cast<int>(std::llround(gpus));
    }
    return summary;
  }
  return NotFound(
      fmt::format("{}: no cluster '{}' (the file has {})", path, id,
                  ids.empty() ? std::string("none") : fmt::format("{}", fmt::join(ids, ", "))));
}

GpuSizeLaw MakeGpuSizeLaw(const ClusterSummary& summary, const SyntheticOptions& options) {
  const std::int64_t cluster =
      static_cast<std::int64_t>(std::max(options.nodes, 1)) * std::max(options.gpus_per_node, 1);
  const std::int64_t limit =
      summary.max_gpus > 0 ? std::min<std::int64_t>(summary.max_gpus, cluster) : cluster;
  const std::int64_t largest = LargestPowerOfTwoAtMost(std::max<std::int64_t>(limit, 1));
  std::int64_t median = 1;
  if (summary.median_gpus > 1) {
    median = std::int64_t{1} << std::lround(std::log2(summary.median_gpus));
  }
  median = std::min(median, largest);

  int n = 1;  // sizes median, 2 median, ..., largest
  while ((median << n) <= largest) ++n;

  GpuSizeLaw law;
  for (int k = 0; k < n; ++k) law.sizes.push_back(static_cast<int>(median << k));
  const double base = static_cast<double>(median);
  const double target = summary.avg_gpus;
  if (n == 1 || !(target > base)) {
    law.probabilities.assign(static_cast<std::size_t>(n), 0.0);
    law.probabilities[0] = 1.0;
  } else {
    std::vector<double> single = GeometricWeights(n, SolveLogR(n, base, target));
    if (single[0] >= kMinMedianMass) {
      law.probabilities = std::move(single);
    } else {
      // P(median) = kMinMedianMass; the tail 2M..G carries the rest with its own ratio.
      const double tail_target = (target - kMinMedianMass * base) / (1 - kMinMedianMass);
      std::vector<double> tail = GeometricWeights(n - 1, SolveLogR(n - 1, 2 * base, tail_target));
      law.probabilities.push_back(kMinMedianMass);
      for (double p : tail) law.probabilities.push_back(p * (1 - kMinMedianMass));
    }
  }
  law.mean = MeanOf(law.probabilities, base);
  return law;
}

std::vector<model::Node> MakeSyntheticNodes(const SyntheticOptions& options) {
  const int nodes = std::max(options.nodes, 1);
  const int gpus_per_node = std::max(options.gpus_per_node, 1);
  std::vector<model::Node> out;
  out.reserve(static_cast<std::size_t>(nodes));
  for (int i = 0; i < nodes; ++i) {
    model::Node node;
    const std::string name = fmt::format("node-{:05}", i);
    node.name = NodeId(name);
    node.labels = {{"rack", fmt::format("r{}", i / 16)}};
    node.cpu_millis = std::int64_t{16'000} * gpus_per_node;
    node.memory_bytes = 128 * kGiB * gpus_per_node;
    for (int g = 0; g < gpus_per_node; ++g) {
      model::Gpu gpu;
      gpu.index = g;
      gpu.uuid = fmt::format("GPU-syn-{}-{}", name, g);
      gpu.model = "H100";
      gpu.memory_bytes = 80 * kGiB;
      node.gpus.push_back(std::move(gpu));
    }
    out.push_back(std::move(node));
  }
  return out;
}

SyntheticJobStream::SyntheticJobStream(const ClusterSummary& summary,
                                       const SyntheticOptions& options)
    : gpus_per_node_(std::max(options.gpus_per_node, 1)),
      jobs_(std::max<std::int64_t>(options.jobs, 0)),
      seed_(options.seed),
      rng_(options.seed) {
  const int nodes = std::max(options.nodes, 1);
  const int queues = std::max(options.queues, 1);
  const double load = options.load > 0 ? options.load : 1.0;

  const GpuSizeLaw law = MakeGpuSizeLaw(summary, options);
  sizes_ = law.sizes;
  cumulative_.resize(law.probabilities.size());
  double acc = 0;
  for (std::size_t k = 0; k < cumulative_.size(); ++k) cumulative_[k] = acc += law.probabilities[k];

  const double median_run = std::max(summary.median_run_seconds, 1.0);
  mu_ = std::log(median_run);
  sigma_ = summary.avg_run_seconds > median_run
               ? std::sqrt(2.0 * std::log(summary.avg_run_seconds / median_run))
               : 0.0;
  cap_ = summary.max_run_seconds > 0 ? std::max(summary.max_run_seconds, 1.0)
                                     : std::numeric_limits<double>::infinity();
  // User k submits to queue k mod queues; their names are made once.
  for (int k = 0; k < 4 * queues; ++k) {
    user_names_.push_back(fmt::format("u{}", k));
    user_queues_.push_back(fmt::format("q{}", k % queues));
  }

  // The first pass: the offered GPU-time, the unscaled span and the queues used.
  double gpu_ms = 0;  // a statistic (not capacity accounting)
  std::set<std::string> used;
  for (std::int64_t i = 0; i < jobs_; ++i) {
    const Draw draw = DrawJob();
    clock_ += draw.gap;
    used.insert(user_queues_[draw.user]);
    const int per_worker = std::min(draw.gpus, gpus_per_node_);
    const int workers = (draw.gpus + gpus_per_node_ - 1) / gpus_per_node_;
    gpu_ms += static_cast<double>(workers) * per_worker * static_cast<double>(draw.duration);
  }
  queues_.assign(used.begin(), used.end());
  // Scale the arrivals so that the last one lands at the span that makes the offered load
  // `load`.
  if (jobs_ > 0) {
    const double cluster_gpus = static_cast<double>(nodes) * gpus_per_node_;
    const double span_ms = gpu_ms / (load * cluster_gpus);
    scale_ = span_ms / clock_;
  }
  rng_.seed(seed_);
  clock_ = 0;
}

SyntheticJobStream::Draw SyntheticJobStream::DrawJob() {
  Draw draw;
  const double u = Uniform(rng_);
  std::size_t k = 0;
  while (k + 1 < cumulative_.size() && u >= cumulative_[k]) ++k;
  draw.gpus = sizes_[k];
  const double seconds = std::clamp(std::exp(mu_ + sigma_ * Normal(rng_)), 1.0, cap_);
  draw.duration = static_cast<DurationMs>(std::llround(seconds * 1000));
  draw.user = static_cast<std::size_t>(rng_() % user_names_.size());
  draw.gap = Exponential(rng_);
  return draw;
}

std::optional<TraceJob> SyntheticJobStream::Next() {
  // Built in the optional that is returned, and every path returns it (so that the compiler
  // constructs it in place: a TraceJob returned into it would be moved).
  std::optional<TraceJob> out;
  if (next_ == jobs_) return out;
  const std::int64_t i = next_++;
  const Draw draw = DrawJob();
  clock_ += draw.gap;
  TraceJob& job = out.emplace();
  char name[32];
  const auto end = fmt::format_to_n(name, sizeof(name), "job-{:07}", i);
  job.name.assign(name, end.out);
  job.submit = static_cast<TimeMs>(std::llround(clock_ * scale_));
  job.duration = draw.duration;
  job.user = user_names_[draw.user];
  model::JobSpec& spec = job.spec;
  spec.name = job.name;
  spec.owner = job.user;
  spec.queue = user_queues_[draw.user];
  const int per_worker = std::min(draw.gpus, gpus_per_node_);
  spec.workers = (draw.gpus + gpus_per_node_ - 1) / gpus_per_node_;
  spec.requirements.per_worker.gpus = per_worker;
  spec.requirements.per_worker.cpu_millis = std::int64_t{8'000} * per_worker;
  spec.requirements.per_worker.memory_bytes = 64 * kGiB * per_worker;
  if (i % 4 == 3) {
    spec.interruptible = true;
    job.checkpoint_interval = 10 * 60 * 1000;
  }
  return out;
}

Trace MakeSyntheticTrace(const ClusterSummary& summary, const SyntheticOptions& options) {
  Trace trace;
  trace.nodes = MakeSyntheticNodes(options);
  SyntheticJobStream stream(summary, options);
  trace.jobs.reserve(static_cast<std::size_t>(std::max<std::int64_t>(options.jobs, 0)));
  while (std::optional<TraceJob> job = stream.Next()) trace.jobs.push_back(std::move(*job));
  return trace;
}

}  // namespace drover::sim
