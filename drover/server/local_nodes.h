#pragma once

// What this machine offers, from the command line's point of view: declared GPUs (--gpus),
// a node file (--nodes), or the GPUs NVML finds.

#include <string>
#include <vector>

#include "drover/agent/sampler.h"
#include "drover/common/clock.h"
#include "drover/common/result.h"
#include "drover/model/node.h"
#include "drover/server/control_plane.h"

namespace drover::server {

struct LocalNodeFlags {
  std::string gpus;        // e.g. "8xH100-80GB"; "0" for none
  std::string nodes_file;  // a YAML node file; its nodes all run their workers here
  std::string node_name;   // default: the host name
  std::string address;     // what other nodes reach this one at; default 127.0.0.1
  // How often the node's GPUs and worker processes are sampled (docs/observability.md,
  // "Sampling"); durations as ParseDuration reads them, "0" for never.
  std::string gpu_sample_interval = "1s";
  std::string process_sample_interval = "5s";
};

// The sampler's options from `flags`: kInvalidArgument naming the flag for a bad duration.
Result<agent::UsageSampler::Options> SamplingOptions(const LocalNodeFlags& flags);

// The nodes described by `flags`. Without --gpus and --nodes, NVML is asked; when it finds no
// GPU, `fallback_gpus` is declared instead (may be "0") and `notice` says so.
Result<std::vector<model::Node>> DescribeLocalNodes(const LocalNodeFlags& flags,
                                                    const std::string& fallback_gpus,
                                                    std::string* notice);

// Adds each node to `plane` with a LocalRuntime keeping its workers in
// `data_dir`/runs/<node>, supervised by the binary at `supervisor_path`, and giving them
// `server_url` as DROVER_SERVER (LocalRuntime::Options::server_url), and a usage sampler
// (`sampling`; agent::MakeNodeSampler) whose batches go to plane.IngestUsage.
Status AddLocalNodes(ControlPlane& plane, const std::vector<model::Node>& nodes,
                     const std::string& data_dir, const std::string& supervisor_path,
                     const std::string& server_url, const Clock& clock,
                     const agent::UsageSampler::Options& sampling = {});

// What agents spawn as each worker's supervisor: `drover-supervise` beside the running
// executable when it is there (it starts faster), otherwise the running executable itself.
std::string SupervisorExecutable();

}  // namespace drover::server
