#pragma once

// UsageSampler: samples a node's GPUs (NVML) and its workers' process trees (/proc) on
// intervals, attributes every sample to the worker Drover gave the GPU or started the process
// for, and hands the samples to a sink in batches (docs/observability.md, "Sampling").
//
// Attribution: a GPU sample carries the worker whose LaunchSpec::gpus holds the GPU's index;
// none when Drover gave the GPU to no one ("no job"). A process NVML lists on a GPU carries the
// worker whose process tree held its pid at the latest process scan, or, failing that, nothing
// (a process Drover did not start, even on a GPU it gave out).
//
// The sink is called on the sampler's thread without any lock of the sampler held; it must not
// block for long (the local agent's hands the batch to the control plane's recorder, the remote
// agent's queues it for the agent loop). A batch the sink drops loses those samples only.
//
// Thread-safety: Start/Stop from one owner thread; RunOnce is for tests that drive the sampler
// without its thread (then from one thread only).

#include <sys/types.h>

#include <atomic>
#include <condition_variable>
#include <functional>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

#include "drover/agent/gpu/nvml.h"
#include "drover/agent/local_runtime.h"
#include "drover/agent/proc_tree.h"
#include "drover/common/clock.h"
#include "drover/model/usage.h"

namespace drover::agent {

class UsageSampler {
 public:
  struct Options {
    // How often GPUs are read (--gpu-sample-interval); 0: never.
    DurationMs gpu_interval_ms = 1'000;
    // How often worker process trees are read, and with them the SM share of each process on a
    // GPU (--process-sample-interval); 0: never.
    DurationMs process_interval_ms = 5'000;
    // How often the samples taken are handed to the sink (one bucket's width: fewer, larger
    // batches cost less on the wire and in the store).
    DurationMs batch_interval_ms = model::kUsageBucketMs;
    std::string proc_root = "/proc";
  };
  using Sink = std::function<void(model::UsageBatch)>;
  using Workers = std::function<std::vector<LocalRuntime::RunningWorker>()>;

  // `nvml` may be null (no GPU sampling). Only the GPUs whose UUID is in `gpu_uuids` are
  // sampled (the node's own; a node with declared GPUs has none NVML knows). `workers` lists the
  // running workers (LocalRuntime::RunningWorkers); `clock` must outlive the sampler.
  UsageSampler(NodeId node, Options options, std::unique_ptr<NvmlSampler> nvml,
               std::vector<std::string> gpu_uuids, Workers workers, Sink sink, const Clock& clock);
  ~UsageSampler();  // stops the thread
  UsageSampler(const UsageSampler&) = delete;
  UsageSampler& operator=(const UsageSampler&) = delete;

  // Starts the sampling thread (once).
  void Start();
  // Stops and joins it, handing what it holds to the sink first.
  void Stop();

  // One turn at steady time `steady_ms`: reads GPUs and processes if due (both when `force`),
  // and hands a batch to the sink if one is due (always when `force` and there are samples).
  // Returns the steady time of the next due turn.
  std::int64_t RunOnce(std::int64_t steady_ms, bool force = false);

 private:
  void Loop();

  const NodeId node_;
  const Options options_;
  std::unique_ptr<NvmlSampler> nvml_;
  const std::vector<std::string> gpu_uuids_;
  const Workers workers_;
  const Sink sink_;
  const Clock& clock_;
  ProcessTreeReader proc_;

  // Owned by the thread running RunOnce.
  model::UsageBatch pending_;
  std::map<std::int64_t, model::WorkerKey> pid_workers_;  // at the latest process scan
  std::int64_t next_gpu_ = 0;
  std::int64_t next_process_ = 0;
  std::int64_t next_batch_ = 0;
  // The thread's CPU time, in microseconds, after it last handed a batch over (-1: no turn yet).
  std::int64_t cpu_mark_us_ = -1;

  std::mutex mu_;  // only for the stop signal
  std::condition_variable wake_;
  bool stopping_ = false;
  std::thread thread_;
};

// The sampler of `node`, whose workers `runtime` runs (it must outlive the sampler), not yet
// started: NVML (kNvmlLibrary) is opened when the node has a GPU with a UUID (found through
// NVML); otherwise, or when NVML cannot be opened (logged), it samples processes only.
std::unique_ptr<UsageSampler> MakeNodeSampler(const model::Node& node,
                                              UsageSampler::Options options, LocalRuntime& runtime,
                                              UsageSampler::Sink sink, const Clock& clock);

}  // namespace drover::agent
