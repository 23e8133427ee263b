// The openb and Tiresias loaders and the node-file loader (loaders.h). Drover's job format is in
// drover_jobs.cc.

#include "drover/sim/trace/loaders.h"

#include <fmt/format.h>

#include <algorithm>
#include <cstdint>
#include <limits>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "drover/common/filesystem.h"
#include "drover/sim/trace/csv.h"
#include "drover/sim/trace/load_util.h"
#include "drover/spec/node_file.h"

namespace drover::sim {
namespace {

constexpr std::int64_t kMiB = 1LL << 20;
constexpr std::int64_t kGiB = 1LL << 30;

// `count` of `unit` bytes; an error naming `column` if it does not fit.
Result<std::int64_t> ScaledBytes(const CsvReader& csv, int column, std::int64_t count,
                                 std::int64_t unit) {
  if (count > std::numeric_limits<std::int64_t>::max() / unit) {
    return tl::unexpected(csv.ColumnError(column, "number is too large"));
  }
  return count * unit;
}

// Field `column` in seconds as milliseconds.
Result<DurationMs> SecondsField(const CsvReader& csv, int column) {
  DROVER_ASSIGN_OR_RETURN(std::int64_t seconds, csv.NonNegativeInt(column));
  std::optional<DurationMs> ms = internal::SecondsToMs(seconds);
  if (!ms) return tl::unexpected(csv.ColumnError(column, "number is too large"));
  return *ms;
}

// A node or job name seen before is an error naming `column`.
Status CheckUnique(internal::NameSet& names, const CsvReader& csv, int column,
                   const std::string& name, std::string_view what) {
  if (auto first = names.Insert(name, csv.line())) {
    return tl::unexpected(csv.ColumnError(
        column, fmt::format("duplicate {} '{}' (first on line {})", what, name, *first)));
  }
  return OkStatus();
}

int ToInt(std::int64_t value) { return static_cast<int>(value); }

}  // namespace

namespace internal {

std::vector<std::string> SplitModels(std::string_view text) {
  std::vector<std::string> models;
  while (true) {
    const std::size_t bar = text.find('|');
    std::string_view part = text.substr(0, bar);
    while (!part.empty() && (part.front() == ' ' || part.front() == '\t')) part.remove_prefix(1);
    while (!part.empty() && (part.back() == ' ' || part.back() == '\t')) part.remove_suffix(1);
    if (!part.empty() && std::find(models.begin(), models.end(), part) == models.end()) {
      models.emplace_back(part);
    }
    if (bar == std::string_view::npos) break;
    text.remove_prefix(bar + 1);
  }
  return models;
}

}  // namespace internal

std::int64_t OpenbGpuMemoryBytes(std::string_view model) {
  struct Entry {
    std::string_view model;
    std::int64_t mib;
  };
  static constexpr Entry kTable[] = {
      {"P4", 7611},    {"2080", 11019},    {"1080", 11178}, {"M40", 11448},
      {"T4", 15109},   {"V100M16", 16160}, {"P100", 16280}, {"A10", 22731},
      {"3090", 24268}, {"V100M32", 32510}, {"A100", 81251},
  };
  for (const Entry& e : kTable) {
    if (e.model == model) return e.mib * kMiB;
  }
  return 0;
}

Result<std::vector<model::Node>> LoadOpenbNodes(const std::string& path) {
  DROVER_ASSIGN_OR_RETURN(CsvReader csv, CsvReader::Open(path));
  DROVER_ASSIGN_OR_RETURN(const int sn, csv.Require("sn"));
  DROVER_ASSIGN_OR_RETURN(const int cpu, csv.Require("cpu_milli"));
  DROVER_ASSIGN_OR_RETURN(const int memory, csv.Require("memory_mib"));
  DROVER_ASSIGN_OR_RETURN(const int gpu, csv.Require("gpu"));
  DROVER_ASSIGN_OR_RETURN(const int model_column, csv.Require("model"));

  std::vector<model::Node> nodes;
  internal::NameSet names;
  while (true) {
    DROVER_ASSIGN_OR_RETURN(const bool more, csv.Next());
    if (!more) break;
    model::Node node;
    const std::string name(csv.Field(sn));
    if (name.empty()) return tl::unexpected(csv.ColumnError(sn, "must not be empty"));
    DROVER_RETURN_IF_ERROR(CheckUnique(names, csv, sn, name, "node"));
    node.name = NodeId(name);
    DROVER_ASSIGN_OR_RETURN(node.cpu_millis, csv.NonNegativeInt(cpu));
    DROVER_ASSIGN_OR_RETURN(const std::int64_t mib, csv.NonNegativeInt(memory));
    DROVER_ASSIGN_OR_RETURN(node.memory_bytes, ScaledBytes(csv, memory, mib, kMiB));
    DROVER_ASSIGN_OR_RETURN(const std::int64_t gpus, csv.NonNegativeInt(gpu));
    if (gpus > 1024) {
      return tl::unexpected(
          csv.ColumnError(gpu, fmt::format("{} GPUs on one node is more than 1024", gpus)));
    }
    const std::string gpu_model(csv.Field(model_column));
    const std::int64_t gpu_memory = OpenbGpuMemoryBytes(gpu_model);
    node.gpus.reserve(static_cast<std::size_t>(gpus));
    for (int i = 0; i < ToInt(gpus); ++i) {
      model::Gpu g;
      g.index = i;
      g.uuid = fmt::format("GPU-openb-{}-{}", name, i);
      g.model = gpu_model;
      g.memory_bytes = gpu_memory;
      g.sharing = model::GpuSharing::kTimeslice;
      node.gpus.push_back(std::move(g));
    }
    nodes.push_back(std::move(node));
  }
  return nodes;
}

Result<std::vector<TraceJob>> LoadOpenbPods(const std::string& path) {
  DROVER_ASSIGN_OR_RETURN(CsvReader csv, CsvReader::Open(path));
  DROVER_ASSIGN_OR_RETURN(const int name_column, csv.Require("name"));
  DROVER_ASSIGN_OR_RETURN(const int cpu, csv.Require("cpu_milli"));
  DROVER_ASSIGN_OR_RETURN(const int memory, csv.Require("memory_mib"));
  DROVER_ASSIGN_OR_RETURN(const int num_gpu, csv.Require("num_gpu"));
  DROVER_ASSIGN_OR_RETURN(const int gpu_milli, csv.Require("gpu_milli"));
  const int gpu_spec = csv.Find("gpu_spec");
  const int creation = csv.Find("creation_time");
  const int deletion = csv.Find("deletion_time");
  const int scheduled = csv.Find("scheduled_time");

  std::vector<TraceJob> jobs;
  internal::NameSet names;
  while (true) {
    DROVER_ASSIGN_OR_RETURN(const bool more, csv.Next());
    if (!more) break;
    TraceJob job;
    job.name = std::string(csv.Field(name_column));
    if (job.name.empty()) return tl::unexpected(csv.ColumnError(name_column, "must not be empty"));
    DROVER_RETURN_IF_ERROR(CheckUnique(names, csv, name_column, job.name, "job name"));
    job.user = "openb";
    model::JobSpec& spec = job.spec;
    spec.name = job.name;
    spec.owner = job.user;
    spec.queue = "default";
    model::Requirements& req = spec.requirements;
    DROVER_ASSIGN_OR_RETURN(req.per_worker.cpu_millis, csv.NonNegativeInt(cpu));
    DROVER_ASSIGN_OR_RETURN(const std::int64_t mib, csv.NonNegativeInt(memory));
    DROVER_ASSIGN_OR_RETURN(req.per_worker.memory_bytes, ScaledBytes(csv, memory, mib, kMiB));

    DROVER_ASSIGN_OR_RETURN(const std::int64_t gpus, csv.NonNegativeInt(num_gpu));
    DROVER_ASSIGN_OR_RETURN(const std::int64_t milli, csv.NonNegativeInt(gpu_milli));
    if (gpus > 1024) {
      return tl::unexpected(
          csv.ColumnError(num_gpu, fmt::format("{} GPUs for one pod is more than 1024", gpus)));
    }
    if (gpus > 0) {
      if (milli < 1 || milli > 1000) {
        return tl::unexpected(csv.ColumnError(
            gpu_milli,
            fmt::format("must be from 1 to 1000 for a pod with GPUs (num_gpu {}), found {}", gpus,
                        milli)));
      }
      if (milli == 1000) {
        req.per_worker.gpus = static_cast<std::int32_t>(gpus);
      } else if (gpus == 1) {
        req.gpu_share_millis = static_cast<std::int32_t>(milli);
      } else {
        return tl::unexpected(csv.ColumnError(
            gpu_milli, fmt::format("a pod with {} GPUs must take them whole (1000), found {}; "
                                   "only a one-GPU pod may share its GPU",
                                   gpus, milli)));
      }
      req.gpu_models = internal::SplitModels(csv.Field(gpu_spec));
    }

    std::optional<DurationMs> created, deleted, started;
    if (!csv.Empty(creation)) {
      DROVER_ASSIGN_OR_RETURN(created, SecondsField(csv, creation));
    }
    if (!csv.Empty(deletion)) {
      DROVER_ASSIGN_OR_RETURN(deleted, SecondsField(csv, deletion));
    }
    if (!csv.Empty(scheduled)) {
      DROVER_ASSIGN_OR_RETURN(started, SecondsField(csv, scheduled));
    }
    job.submit = created.value_or(0);
    if (deleted && (started || created)) {
      const bool from_start = started.has_value();
      const DurationMs begin = from_start ? *started : *created;
      if (*deleted < begin) {
        return tl::unexpected(csv.ColumnError(
            deletion,
            fmt::format("is before {} ({} < {})", from_start ? "scheduled_time" : "creation_time",
                        *deleted / 1000, begin / 1000)));
      }
      job.duration = *deleted - begin;
    }
    jobs.push_back(std::move(job));
  }
  return jobs;
}

Result<std::vector<model::Node>> LoadTiresiasCluster(const std::string& path) {
  DROVER_ASSIGN_OR_RETURN(CsvReader csv, CsvReader::Open(path));
  DROVER_ASSIGN_OR_RETURN(const int switches_column, csv.Require("num_switch"));
  DROVER_ASSIGN_OR_RETURN(const int nodes_column, csv.Require("num_node_p_switch"));
  DROVER_ASSIGN_OR_RETURN(const int gpus_column, csv.Require("num_gpu_p_node"));
  DROVER_ASSIGN_OR_RETURN(const int cpus_column, csv.Require("num_cpu_p_node"));
  DROVER_ASSIGN_OR_RETURN(const int memory_column, csv.Require("mem_p_node"));
  DROVER_ASSIGN_OR_RETURN(const bool any, csv.Next());
  if (!any) {
    return InvalidArgument(
        fmt::format("{}:2: expected one row describing the cluster, found none", csv.file_name()));
  }

  // Bounds that keep a typo from asking for billions of nodes.
  auto bounded = [&](int column, std::int64_t min, std::int64_t max) -> Result<int> {
    DROVER_ASSIGN_OR_RETURN(const std::int64_t value, csv.NonNegativeInt(column));
    if (value < min || value > max) {
      return tl::unexpected(
          csv.ColumnError(column, fmt::format("must be from {} to {}, found {}", min, max, value)));
    }
    return ToInt(value);
  };
  DROVER_ASSIGN_OR_RETURN(const int switches, bounded(switches_column, 1, 100'000));
  DROVER_ASSIGN_OR_RETURN(const int per_switch, bounded(nodes_column, 1, 100'000));
  DROVER_ASSIGN_OR_RETURN(const int gpus, bounded(gpus_column, 0, 1024));
  DROVER_ASSIGN_OR_RETURN(const int cpus, bounded(cpus_column, 0, 1'000'000));
  DROVER_ASSIGN_OR_RETURN(const int memory_gib, bounded(memory_column, 0, 1'000'000'000));
  if (static_cast<std::int64_t>(switches) * per_switch > 1'000'000) {
    return tl::unexpected(csv.ColumnError(
        nodes_column,
        fmt::format("{} switches of {} nodes is more than 1,000,000 nodes", switches, per_switch)));
  }
  DROVER_ASSIGN_OR_RETURN(const bool more, csv.Next());
  if (more) {
    return tl::unexpected(
        csv.RowError("expected one row describing the cluster, found a second one"));
  }

  std::vector<model::Node> nodes;
  nodes.reserve(static_cast<std::size_t>(switches) * static_cast<std::size_t>(per_switch));
  for (int s = 0; s < switches; ++s) {
    const std::string switch_name = fmt::format("s{}", s);
    for (int n = 0; n < per_switch; ++n) {
      model::Node node;
      const std::string name = fmt::format("{}-n{}", switch_name, n);
      node.name = NodeId(name);
      node.labels = {{"switch", switch_name}};
      node.cpu_millis = static_cast<std::int64_t>(cpus) * 1000;
      node.memory_bytes = static_cast<std::int64_t>(memory_gib) * kGiB;
      for (int g = 0; g < gpus; ++g) {
        model::Gpu gpu;
        gpu.index = g;
        gpu.uuid = fmt::format("GPU-tiresias-{}-{}", name, g);
        gpu.model = "GPU";
        node.gpus.push_back(std::move(gpu));
      }
      nodes.push_back(std::move(node));
    }
  }
  return nodes;
}

Result<std::vector<TraceJob>> LoadTiresiasJobs(const std::string& path, int gpus_per_node) {
  if (gpus_per_node < 1) {
    return InvalidArgument(fmt::format("gpus_per_node must be at least 1, found {} (loading {})",
                                       gpus_per_node, path));
  }
  DROVER_ASSIGN_OR_RETURN(CsvReader csv, CsvReader::Open(path));
  DROVER_ASSIGN_OR_RETURN(const int id_column, csv.Require("job_id"));
  DROVER_ASSIGN_OR_RETURN(const int gpus_column, csv.Require("num_gpu"));
  DROVER_ASSIGN_OR_RETURN(const int submit_column, csv.Require("submit_time"));
  DROVER_ASSIGN_OR_RETURN(const int duration_column, csv.Require("duration"));

  std::vector<TraceJob> jobs;
  internal::NameSet names;
  while (true) {
    DROVER_ASSIGN_OR_RETURN(const bool more, csv.Next());
    if (!more) break;
    TraceJob job;
    if (csv.Empty(id_column)) {
      return tl::unexpected(csv.ColumnError(id_column, "must not be empty"));
    }
    job.name = fmt::format("job-{}", csv.Field(id_column));
    DROVER_RETURN_IF_ERROR(CheckUnique(names, csv, id_column, job.name, "job"));
    DROVER_ASSIGN_OR_RETURN(const std::int64_t gpus, csv.NonNegativeInt(gpus_column));
    if (gpus < 1 || gpus > 1'000'000) {
      return tl::unexpected(csv.ColumnError(
          gpus_column,
          fmt::format("must be from 1 to 1000000 (a Tiresias job uses GPUs), found {}", gpus)));
    }
    DROVER_ASSIGN_OR_RETURN(job.submit, SecondsField(csv, submit_column));
    DROVER_ASSIGN_OR_RETURN(job.duration, SecondsField(csv, duration_column));
    job.user = "tiresias";
    model::JobSpec& spec = job.spec;
    spec.name = job.name;
    spec.owner = job.user;
    spec.queue = "default";
    spec.interruptible = true;
    if (gpus <= gpus_per_node) {
      spec.workers = 1;
      spec.requirements.per_worker.gpus = static_cast<std::int32_t>(gpus);
    } else if (gpus % gpus_per_node != 0) {
      return tl::unexpected(csv.ColumnError(
          gpus_column,
          fmt::format("{} GPUs do not split into whole nodes of {} GPUs", gpus, gpus_per_node)));
    } else {
      spec.workers = ToInt(gpus / gpus_per_node);
      spec.requirements.per_worker.gpus = gpus_per_node;
    }
    jobs.push_back(std::move(job));
  }
  std::stable_sort(jobs.begin(), jobs.end(),
                   [](const TraceJob& a, const TraceJob& b) { return a.submit < b.submit; });
  return jobs;
}

Result<std::vector<model::Node>> LoadClusterFile(const std::string& path) {
  DROVER_ASSIGN_OR_RETURN(const std::string text, ReadWholeFile(path));
  return spec::ParseNodeFile(text, path);
}

}  // namespace drover::sim
