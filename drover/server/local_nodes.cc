#include "drover/server/local_nodes.h"

#include <fmt/format.h>
#include <spdlog/spdlog.h>
#include <unistd.h>

#include <climits>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "drover/agent/executables.h"
#include "drover/agent/gpu/nvml.h"
#include "drover/agent/local_node.h"
#include "drover/agent/local_runtime.h"
#include "drover/agent/sampler.h"
#include "drover/common/quantity.h"
#include "drover/spec/gpu_declaration.h"
#include "drover/spec/node_file.h"

namespace drover::server {
namespace {

std::string HostName() {
  char name[HOST_NAME_MAX + 1] = {};
  if (gethostname(name, sizeof(name) - 1) != 0 || name[0] == '\0') return "local";
  return name;
}

}  // namespace

Result<std::vector<model::Node>> DescribeLocalNodes(const LocalNodeFlags& flags,
                                                    const std::string& fallback_gpus,
                                                    std::string* notice) {
  if (!flags.gpus.empty() && !flags.nodes_file.empty()) {
    return InvalidArgument("--gpus and --nodes exclude each other: declare GPUs in one place");
  }
  std::vector<model::Node> nodes;
  if (!flags.nodes_file.empty()) {
    std::ifstream in(flags.nodes_file);
    if (!in) return InvalidArgument(fmt::format("--nodes: cannot read {}", flags.nodes_file));
    std::ostringstream text;
    text << in.rdbuf();
    DROVER_ASSIGN_OR_RETURN(nodes, spec::ParseNodeFile(text.str(), flags.nodes_file));
  } else {
    std::vector<model::Gpu> gpus;
    std::string declaration = flags.gpus;
    if (declaration.empty()) {
      auto discovered = agent::DiscoverNvml();
      if (discovered && !discovered->gpus.empty()) {
        for (const agent::NvmlGpu& gpu : discovered->gpus) gpus.push_back(gpu.gpu);
      } else {
        declaration = fallback_gpus;
        if (notice) {
          *notice = fmt::format("no NVIDIA GPU found ({}); declaring {} (change with --gpus)",
                                discovered ? "NVML lists none" : discovered.error().message,
                                fallback_gpus == "0" ? "none" : fallback_gpus);
        }
      }
    }
    if (!declaration.empty()) {
      auto declared = spec::ParseGpuDeclaration(declaration);
      if (!declared) {
        return InvalidArgument("--gpus: " + declared.error().message);
      }
      gpus = *std::move(declared);
    }
    nodes.push_back(
        agent::LocalNode(flags.node_name.empty() ? HostName() : flags.node_name, std::move(gpus)));
  }
  if (!flags.address.empty()) {
    for (model::Node& node : nodes) node.address = flags.address;
  }
  return nodes;
}

Status AddLocalNodes(ControlPlane& plane, const std::vector<model::Node>& nodes,
                     const std::string& data_dir, const std::string& supervisor_path,
                     const std::string& server_url, const Clock& clock,
                     const agent::UsageSampler::Options& sampling) {
  for (const model::Node& node : nodes) {
    agent::LocalRuntime::Options options;
    options.runs_dir =
        (std::filesystem::path(data_dir) / "runs" / node.name.value()).lexically_normal();
    options.supervisor_path = supervisor_path;
    options.server_url = server_url;
    DROVER_ASSIGN_OR_RETURN(auto runtime, agent::LocalRuntime::Create(options, clock));
    std::string runs_dir = runtime->runs_dir();
    // The plane owns both; it stops the sampler before it lets go of the runtime.
    plane.AddUsageSampler(agent::MakeNodeSampler(
        node, sampling, *runtime,
        [&plane, name = node.name](model::UsageBatch batch) {
          if (Status recorded = plane.IngestUsage(name, std::move(batch)); !recorded) {
            spdlog::warn("usage of node {} lost: {}", name.value(), recorded.error().message);
          }
        },
        clock));
    plane.AddLocalNode(node, std::move(runtime), runs_dir);
  }
  return OkStatus();
}

Result<agent::UsageSampler::Options> SamplingOptions(const LocalNodeFlags& flags) {
  agent::UsageSampler::Options options;
  auto gpu = ParseDuration(flags.gpu_sample_interval);
  if (!gpu) return InvalidArgument("--gpu-sample-interval: " + gpu.error().message);
  auto process = ParseDuration(flags.process_sample_interval);
  if (!process) return InvalidArgument("--process-sample-interval: " + process.error().message);
  options.gpu_interval_ms = *gpu;
  options.process_interval_ms = *process;
  return options;
}

std::string SupervisorExecutable() { return agent::BesideSelfOrSelf("drover-supervise"); }

}  // namespace drover::server
