#pragma once

// `drover simulate`: runs the simulator (drover/sim) on a trace and prints its result as JSON,
// a text summary or a self-contained HTML report (drover/sim/report). One of three sources:
//
//   --format openb    --nodes NODES.csv --pods PODS.csv      (Alibaba GPU trace v2023)
//   --format tiresias --cluster CLUSTER.csv --jobs JOBS.csv  (Tiresias simulator files)
//   --format drover   --cluster NODES.yaml --jobs JOBS.csv|JOBS.jsonl
//   --synthetic SUMMARY.csv --cluster-id ID --nodes-count N --gpus-per-node G --jobs-count J
//               --load L [--seed S]
//   --from-server DATA_DIR --since ISO|--window 24h --policy NEW.yaml [--baseline-policy P]
//
// Experiments: "fgd" (the FGD placement experiment: pods one at a time, no departures; the
// default for openb) or "replay" (time-based, through the production controller; the default
// otherwise). --policy is repeatable; more than one gives a "compare" result. For fgd a policy
// is one of sim::FgdPolicyNames() (none: the server's default placement); for a replay it is
// fifo, sjf, las, fair-share (the default) or the path of a policy file
// (docs/scheduling-policy-file.md). --from-server is a what-if: the recorded window replayed
// under the baseline (--baseline-policy, else fair-share) and under --policy, with the per-team
// queue-time differences.
//
// Exit status: 0 on success; 2 for any invalid input (flags, files, policies), after one line
// "drover simulate: ..." on stderr naming the flag or file (and a policy file's diagnostics),
// with nothing on stdout; 1 if a simulation itself fails.

#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "drover/common/clock.h"
#include "drover/common/result.h"

namespace drover::daemons {

struct SimulateFlags {
  // Trace sources: exactly one of format, synthetic_summary, from_server.
  std::string format;        // --format openb|tiresias|drover
  std::string nodes_file;    // --nodes (openb)
  std::string pods_file;     // --pods (openb)
  std::string cluster_file;  // --cluster (tiresias, drover)
  std::string jobs_file;     // --jobs (tiresias, drover)

  std::string synthetic_summary;   // --synthetic SUMMARY.csv
  std::string cluster_id;          // --cluster-id
  int nodes_count = 64;            // --nodes-count
  int gpus_per_node = 8;           // --gpus-per-node
  std::int64_t jobs_count = 1000;  // --jobs-count
  double load = 0.9;               // --load
  int queues = 4;                  // --queues

  std::string from_server;      // --from-server DATA_DIR
  std::string since;            // --since ISO time (no zone: local time)
  std::string window;           // --window DURATION ("24h")
  std::string baseline_policy;  // --baseline-policy (what-if "before"; default fair-share)

  std::string experiment;             // --experiment fgd|replay ("": by source)
  std::vector<std::string> policies;  // --policy, repeatable
  std::uint64_t seed = 42;            // --seed (fgd, synthetic)
  int seeds = 1;                      // --seeds (fgd)
  double inflate = 1.3;               // --inflate (fgd)
  std::string published_dir;          // --published (fgd; "": fgd-expected-results beside pods)
  bool no_timing = false;             // --no-timing: no wall-clock fields, identical output
  std::string tick;                   // --tick DURATION (replay; "": the replay's default)
  std::string pass_interval;          // --pass-interval DURATION (replay; "": a pass per instant)

  std::string output;       // -o json|text|html ("": text)
  std::string report_file;  // --report FILE.html
};

// Runs the simulation the flags describe and returns its result JSON. kInvalidArgument (its
// message names the flag or file; a policy file's diagnostics in details) for bad input;
// kInternal when a simulation fails. `now` is the end of a --from-server window.
Result<nlohmann::json> RunSimulation(const SimulateFlags& flags, TimeMs now);

// The command: RunSimulation, then the output (and --report). Returns the exit status.
int SimulateCommand(const SimulateFlags& flags);

}  // namespace drover::daemons
