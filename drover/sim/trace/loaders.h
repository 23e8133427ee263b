#pragma once

// Loaders that turn trace files into the simulator's values (trace.h): public GPU-cluster traces
// (Alibaba's openb, Tiresias) and Drover's own node and job files.
//
// Every loader reads the whole file and returns all of it or an error, never part of it:
//   kNotFound          the file does not exist;
//   kInvalidArgument   a malformed row, a column missing from the header, a duplicate name.
//                      The message says where: "FILE:LINE: column 'NAME': what is wrong" for
//                      CSV (LINE is 1-based, the header is line 1), "FILE:LINE: field 'NAME':
//                      what is wrong" for JSONL, and "FILE:LINE:COL: ..." for YAML node files.
//   kInternal          the file exists but cannot be read.
// Times in the files are seconds; TraceJob times are milliseconds. Loaders never crash on input.

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "drover/common/result.h"
#include "drover/model/node.h"
#include "drover/sim/trace/trace.h"

namespace drover::sim {

// Alibaba GPU trace v2023 (openb) node list: columns sn,cpu_milli,memory_mib,gpu,model.
// Node `sn` with cpu_milli millicores, memory_mib MiB and `gpu` GPUs of `model`, indexes 0..n-1,
// uuids "GPU-openb-<sn>-<i>", sharing kTimeslice (openb GPUs are shared by fractional pods, as in
// the FGD paper) and the memory of OpenbGpuMemoryBytes(model). Duplicate sn: an error.
Result<std::vector<model::Node>> LoadOpenbNodes(const std::string& path);

// Alibaba GPU trace v2023 (openb) pod list: columns name,cpu_milli,memory_mib,num_gpu,gpu_milli
// are required; gpu_spec, creation_time, deletion_time and scheduled_time are read when present
// (the multigpu* variants lack them) and may be empty. Each pod becomes one single-worker job:
//   num_gpu 0                    -> CPU only (gpu_milli ignored);
//   num_gpu 1, gpu_milli 1..999  -> requirements.gpu_share_millis = gpu_milli, per_worker.gpus 0;
//   num_gpu n, gpu_milli 1000    -> per_worker.gpus = n;
//   num_gpu > 1, gpu_milli < 1000, or gpu_milli outside 1..1000 with GPUs: an error.
// gpu_spec "A|B" -> requirements.gpu_models {A, B} (duplicates dropped; empty = any model).
// submit = creation_time; duration = deletion_time - scheduled_time when both are set, else
// deletion_time - creation_time when both are set, else 0 (a negative difference is an error).
// queue "default", user and owner "openb", not interruptible.
// Jobs keep the file's order, which the FGD experiment replays; it is not always ascending in
// submit (the cpu* and gpushare* variants are not), so a time-based replay sorts them first.
Result<std::vector<TraceJob>> LoadOpenbPods(const std::string& path);

// MiB of memory of one GPU of an openb `model` (P4, 2080, 1080, M40, T4, V100M16, P100, A10,
// 3090, V100M32, A100), in bytes; 0 for a model the table lacks (G2, G3 and others).
std::int64_t OpenbGpuMemoryBytes(std::string_view model);

// Tiresias simulator cluster spec (cluster_spec.csv, n32g4.csv, ...): one row of
// num_switch,num_node_p_switch,num_gpu_p_node,num_cpu_p_node,mem_p_node. Nodes "s<i>-n<j>"
// (switch i, node j within it, both from 0) labelled {"switch": "s<i>"}, num_cpu_p_node cores,
// mem_p_node GiB (the file says GB; a "256 GB" machine has 256 GiB) and num_gpu_p_node exclusive
// GPUs of model "GPU" (memory unknown: 0) with uuids "GPU-tiresias-s<i>-n<j>-<k>".
// More or fewer than one data row is an error.
Result<std::vector<model::Node>> LoadTiresiasCluster(const std::string& path);

// Tiresias simulator jobs (60_job.csv): columns job_id,num_gpu,submit_time,duration are required
// (iterations, model_name, interval and any other columns are ignored, so tf_job.csv's layout
// loads too; the tf_job.csv in the repository repeats job 10 and is rejected as a duplicate).
// Job "job-<job_id>", submit and duration in seconds, queue "default", user "tiresias",
// interruptible (Tiresias's LAS policy preempts), no checkpoint interval. num_gpu <=
// gpus_per_node: one worker with num_gpu GPUs; larger: a gang of num_gpu / gpus_per_node workers
// with gpus_per_node GPUs each (no topology requirement); not a multiple: an error.
// gpus_per_node < 1 is kInvalidArgument. Jobs are sorted by submit (stable).
Result<std::vector<TraceJob>> LoadTiresiasJobs(const std::string& path, int gpus_per_node);

// Drover's YAML node file, parsed by spec::ParseNodeFile (its format and errors).
Result<std::vector<model::Node>> LoadClusterFile(const std::string& path);

// Drover's job trace: CSV with a header (path ending in .csv) or JSON Lines (.jsonl: one object
// per line; blank lines skipped), with the keys below in any order. Only submit_s and
// duration_s are required; an empty cell or a JSON null means "not given". JSON values may be
// numbers, strings or (interruptible) booleans.
//   name                   unique; default "job-<line>"
//   submit_s, duration_s   seconds, decimals allowed ("90", "1.5"; ParseDuration also takes
//                          "2h"); not negative
//   cpu, memory            per worker, ParseCpuMillis ("4", "500m") and ParseBytes ("16Gi");
//                          default 1 core and 1Gi, as in a job spec
//   gpus                   whole GPUs per worker (default 0)
//   gpu_share              part of one GPU, "250m" or 0.25 (1m..999m; 0 = none); not with gpus
//   gpu_model              acceptable models, '|'-separated ("H100|A100")
//   workers, min_workers   gang size (default 1) and elastic minimum (1..workers; default
//                          rigid)
//   queue, user            default "default" each; user is also spec.owner
//   priority               a class of model::PriorityClassNames() (default "normal")
//   topology               requirements.topology_level: a node label key (no '=' or spaces)
//   interruptible          true/false (also True, TRUE, ...)
//   checkpoint_interval_s  TraceJob::checkpoint_interval (0 = never)
//   timeout_s              spec.timeout, > 0
// Unknown keys are errors (with a did-you-mean). Jobs are sorted by submit (stable).
// Any other extension is kInvalidArgument.
Result<std::vector<TraceJob>> LoadDroverJobs(const std::string& path);

}  // namespace drover::sim
