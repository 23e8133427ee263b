// The FGD experiment (fgd.h).

#include "drover/sim/fgd/fgd.h"

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <map>
#include <numeric>
#include <random>

#include "drover/sched/cluster_state.h"
#include "drover/sched/fragmentation.h"
#include "drover/sched/placement.h"
#include "drover/sim/trace/csv.h"

namespace drover::sim {
namespace {

constexpr int kMaxPercent = 130;  // the paper's curves end at 130% demand

// Milli-GPUs a pod asks for.
std::int64_t GpuDemand(const model::JobSpec& spec) {
  const model::Requirements& req = spec.requirements;
  if (req.per_worker.gpus > 0) return std::int64_t{req.per_worker.gpus} * 1000 * spec.workers;
  return std::int64_t{req.gpu_share_millis} * spec.workers;
}

Result<model::Scoring> ScoringOf(const std::string& policy) {
  if (policy.empty()) return model::Policy{}.scoring;
  if (policy == "fgd") return model::Scoring::kFragmentation;
  if (auto scoring = model::ParseScoring(policy)) return *scoring;
  return InvalidArgument(
      fmt::format("unknown policy '{}'; known: random, best-fit, dot-product, "
                  "gpu-packing, gpu-clustering, fgd, binpack, spread",
                  policy));
}

// The published folder's name of a policy.
std::string PublishedName(const std::string& policy) {
  static const std::map<std::string, std::string> names = {{"random", "01-Random"},
                                                           {"dot-product", "02-DotProd"},
                                                           {"gpu-clustering", "03-GpuClustering"},
                                                           {"gpu-packing", "04-GpuPacking"},
                                                           {"best-fit", "05-BestFit"},
                                                           {"fgd", "06-FGD"},
                                                           {"fragmentation", "06-FGD"}};
  auto it = names.find(policy);
  return it == names.end() ? std::string() : it->second;
}

double Round2(double value) { return std::round(value * 100.0) / 100.0; }

// Samples (demand percent, value percent) -> the paper's discrete curve.
nlohmann::json Discretize(const std::vector<std::pair<double, double>>& samples) {
  std::map<int, std::pair<double, int>> buckets;
  for (const auto& [x, y] : samples) {
    auto& [sum, n] = buckets[static_cast<int>(std::lround(x))];
    sum += y;
    ++n;
  }
  nlohmann::json out = nlohmann::json::object();
  for (int k = 0; k <= kMaxPercent; ++k) {
    double sum = 0.0;
    int n = 0;
    if (auto it = buckets.find(k); it != buckets.end()) {
      std::tie(sum, n) = it->second;
    } else {
      for (int j = k - 1; j <= k + 1; ++j) {
        if (auto near = buckets.find(j); near != buckets.end()) {
          sum += near->second.first;
          n += near->second.second;
        }
      }
    }
    if (n > 0) out[std::to_string(k)] = Round2(sum / n);
  }
  return out;
}

// One seed of the experiment.
nlohmann::json RunOnce(const std::vector<model::Node>& nodes, const std::vector<TraceJob>& pods,
                       const sched::WorkloadMix& mix, const sched::WorkloadMix& scoring_mix,
                       model::Scoring scoring, std::uint64_t seed, double inflate,
                       std::int64_t capacity) {
  std::mt19937_64 rng(seed);
  // The workload: the pods shuffled, then tuned to inflate x capacity of GPU demand.
  std::vector<std::size_t> order(pods.size());
  std::iota(order.begin(), order.end(), 0);
  std::shuffle(order.begin(), order.end(), rng);
  std::int64_t total = 0;
  for (std::size_t i : order) total += GpuDemand(pods[i].spec);
  const double target = inflate * static_cast<double>(capacity);
  if (static_cast<double>(total) < target) {
    std::uniform_int_distribution<std::size_t> pick(0, pods.size() - 1);
    while (true) {
      const std::size_t i = pick(rng);
      const std::int64_t demand = GpuDemand(pods[i].spec);
      if (static_cast<double>(total + demand) > target) break;
      total += demand;
      order.push_back(i);
    }
  } else {
    while (static_cast<double>(total) > target && !order.empty()) {
      std::uniform_int_distribution<std::size_t> pick(0, order.size() - 1);
      const std::size_t k = pick(rng);
      total -= GpuDemand(pods[order[k]].spec);
      order.erase(order.begin() + static_cast<std::ptrdiff_t>(k));
    }
  }

  sched::ClusterState cluster;
  for (const model::Node& node : nodes) cluster.UpsertNode(node);
  sched::FragmentationCache cache;    // bound to scoring_mix
  sched::FragmentationCache measure;  // bound to mix
  sched::internal::PlanOptions options;
  options.scoring = scoring;
  options.rng = &rng;
  options.mix = &scoring_mix;
  options.fragmentation_cache = &cache;

  std::map<std::string, double> node_fragmentation;
  double fragmentation = 0.0;
  for (const model::Node& node : nodes) {
    const double f = sched::NodeFragmentation(cluster, node.name, mix, &measure);
    node_fragmentation[node.name.value()] = f;
    fragmentation += f;
  }
  const double cap = static_cast<double>(capacity);
  std::vector<std::pair<double, double>> allocation, frag, frag_ratio;
  allocation.reserve(order.size());
  std::int64_t arrived = 0;
  std::int64_t used = 0;
  int placed = 0;
  std::int64_t id = 0;
  for (std::size_t i : order) {
    const model::JobSpec& spec = pods[i].spec;
    const std::int64_t demand = GpuDemand(spec);
    arrived += demand;
    auto placement = sched::TryPlace(cluster, JobId(++id), spec, options);
    if (placement && cluster.Allocate(*placement, spec.requirements).has_value()) {
      used += demand;
      ++placed;
      for (const sched::WorkerAssignment& worker : placement->workers) {
        double& f = node_fragmentation[worker.node.value()];
        const double now = sched::NodeFragmentation(cluster, worker.node, mix, &measure);
        fragmentation += now - f;
        f = now;
      }
    }
    const double x = 100.0 * static_cast<double>(arrived) / cap;
    allocation.emplace_back(x, 100.0 * static_cast<double>(used) / cap);
    frag.emplace_back(x, 100.0 * fragmentation / cap);
    const double idle = cap - static_cast<double>(used);
    frag_ratio.emplace_back(x, idle > 0 ? 100.0 * fragmentation / idle : 0.0);
  }
  nlohmann::json run;
  run["seed"] = seed;
  run["pods_arrived"] = order.size();
  run["pods_placed"] = placed;
  run["pods_failed"] = static_cast<std::int64_t>(order.size()) - placed;
  run["allocation_ratio_at"] = Discretize(allocation);
  run["fragmentation_at"] = Discretize(frag);
  run["fragmentation_ratio_at"] = Discretize(frag_ratio);
  return run;
}

// The mean of several runs' curves (keys present in every run).
nlohmann::json MeanCurve(const std::vector<nlohmann::json>& runs, const std::string& key) {
  nlohmann::json out = nlohmann::json::object();
  for (int k = 0; k <= kMaxPercent; ++k) {
    const std::string at = std::to_string(k);
    double sum = 0.0;
    int n = 0;
    for (const nlohmann::json& run : runs) {
      if (!run[key].contains(at)) continue;
      sum += run[key][at].get<double>();
      ++n;
    }
    if (n == static_cast<int>(runs.size()) && n > 0) out[at] = Round2(sum / n);
  }
  return out;
}

}  // namespace

const std::vector<std::string>& FgdPolicyNames() {
  static const std::vector<std::string> names = {"random",      "best-fit",       "dot-product",
                                                 "gpu-packing", "gpu-clustering", "fgd"};
  return names;
}

Result<nlohmann::json> LoadPublishedFgd(const std::string& dir, const std::string& workload,
                                        const std::string& policy) {
  const std::string name = PublishedName(policy);
  if (name.empty()) return NotFound(fmt::format("no published results for policy '{}'", policy));
  nlohmann::json out;
  out["policy"] = name;
  const std::pair<const char*, const char*> files[] = {
      {"analysis_allo_discrete.csv", "allocation_ratio_at"},
      {"analysis_frag_discrete.csv", "fragmentation_at"},
      {"analysis_frag_ratio_discrete.csv", "fragmentation_ratio_at"}};
  for (const auto& [file, key] : files) {
    const std::string path = dir + "/" + file;
    DROVER_ASSIGN_OR_RETURN(auto csv, CsvReader::Open(path));
    DROVER_ASSIGN_OR_RETURN(auto workload_column, csv.Require("workload"));
    DROVER_ASSIGN_OR_RETURN(auto policy_column, csv.Require("sc_policy"));
    std::map<std::string, std::pair<double, int>> sums;  // by demand percent
    int seeds = 0;
    while (true) {
      DROVER_ASSIGN_OR_RETURN(auto more, csv.Next());
      if (!more) break;
      if (csv.Field(workload_column) != workload || csv.Field(policy_column) != name) continue;
      ++seeds;
      for (int c = 0; c < static_cast<int>(csv.columns().size()); ++c) {
        const std::string& column = csv.columns()[c];
        if (!std::all_of(column.begin(), column.end(), ::isdigit) || csv.Empty(c)) continue;
        DROVER_ASSIGN_OR_RETURN(auto value, csv.Number(c));
        auto& [sum, n] = sums[column];
        sum += value;
        ++n;
      }
    }
    if (seeds == 0) {
      return NotFound(fmt::format("{}: no rows for {} / {}", path, workload, name));
    }
    nlohmann::json curve = nlohmann::json::object();
    for (const auto& [column, sum_n] : sums) curve[column] = Round2(sum_n.first / sum_n.second);
    out[key] = std::move(curve);
    out["seeds"] = seeds;
  }
  return out;
}

Result<nlohmann::json> RunFgdExperiment(const std::vector<model::Node>& nodes,
                                        const std::vector<TraceJob>& pods,
                                        const FgdOptions& options) {
  const auto started = std::chrono::steady_clock::now();
  DROVER_ASSIGN_OR_RETURN(auto scoring, ScoringOf(options.policy));
  if (!(options.inflate > 0 && options.inflate <= kMaxFgdInflate)) {
    return InvalidArgument(
        fmt::format("inflate {} is outside (0, {}]", options.inflate, kMaxFgdInflate));
  }
  if (options.seeds < 1) return InvalidArgument("seeds must be at least 1");
  if (pods.empty()) return InvalidArgument("the pod list is empty");
  std::int64_t capacity = 0;
  for (const model::Node& node : nodes) capacity += 1000 * std::int64_t(node.gpus.size());
  if (capacity == 0) return InvalidArgument("the cluster has no GPU");

  std::vector<const model::JobSpec*> specs;
  specs.reserve(pods.size());
  for (const TraceJob& pod : pods) specs.push_back(&pod.spec);
  // Fragmentation is reported against the paper's typical tasks (95% of the pods, by count);
  // Drover's fgd policy scores against every shape of the workload, so that rare large ones
  // (8-GPU pods are 0.5% of openb's) keep whole nodes to land on.
  const sched::WorkloadMix all_shapes = sched::MixOf(specs);
  const sched::WorkloadMix mix = sched::TypicalMix(all_shapes, 0.95);

  std::vector<nlohmann::json> runs;
  for (int k = 0; k < options.seeds; ++k) {
    runs.push_back(RunOnce(nodes, pods, mix, all_shapes, scoring, options.seed + k, options.inflate,
                           capacity));
  }
  nlohmann::json out;
  out["experiment"] = "fgd";
  out["workload"] = options.workload;
  out["policy"] = options.policy.empty() ? fmt::format("default ({})", model::ScoringName(scoring))
                                         : options.policy;
  nlohmann::json seeds = nlohmann::json::array();
  for (const nlohmann::json& run : runs) seeds.push_back(run["seed"]);
  out["seeds"] = seeds;
  out["inflate"] = options.inflate;
  out["nodes"] = nodes.size();
  out["total_gpus"] = capacity / 1000;
  out["typical_shapes"] = mix.shapes.size();
  std::int64_t arrived = 0, placed = 0;
  for (const nlohmann::json& run : runs) {
    arrived += run["pods_arrived"].get<std::int64_t>();
    placed += run["pods_placed"].get<std::int64_t>();
  }
  out["pods_arrived"] = arrived / options.seeds;
  out["pods_placed"] = placed / options.seeds;
  out["pods_failed"] = (arrived - placed) / options.seeds;
  for (const char* key : {"allocation_ratio_at", "fragmentation_at", "fragmentation_ratio_at"}) {
    out[key] = runs.size() == 1 ? runs[0][key] : MeanCurve(runs, key);
  }
  if (runs.size() > 1) out["runs"] = runs;
  if (!options.published_dir.empty()) {
    auto published = LoadPublishedFgd(
        options.published_dir, options.workload,
        options.policy.empty() ? std::string(model::ScoringName(scoring)) : options.policy);
    if (published) out["published"] = std::move(*published);
  }
  if (options.timing) {
    out["wall_seconds"] =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
  }
  return out;
}

}  // namespace drover::sim
