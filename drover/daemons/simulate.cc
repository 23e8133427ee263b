#include "drover/daemons/simulate.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cctype>
#include <chrono>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <memory>
#include <optional>
#include <utility>

#include "drover/cli/text.h"
#include "drover/common/quantity.h"
#include "drover/model/policy.h"
#include "drover/sim/fgd/fgd.h"
#include "drover/sim/replay/replay.h"
#include "drover/sim/report/report.h"
#include "drover/sim/trace/loaders.h"
#include "drover/sim/trace/synthetic.h"
#include "drover/spec/policy.h"

namespace drover::daemons {

using cli::ReadSpecFile;

namespace {

using nlohmann::json;

// Replays of more jobs than this leave out the per-job rows (the JSON would be hundreds of MB);
// the reports then draw no CDFs and say so.
constexpr std::size_t kJobDetailLimit = 200'000;

// `error` as an input problem of `what` (a flag and its value): "WHAT: MESSAGE", where WHAT
// loses its value when the message already names it (loaders start with the file's path). A
// missing or unreadable file is bad input to the command, so every code becomes
// kInvalidArgument.
tl::unexpected<Error> InputError(const std::string& what, Error error) {
  const std::size_t space = what.find(' ');
  const bool named =
      space != std::string::npos && error.message.find(what.substr(space + 1)) != std::string::npos;
  error.message = (named ? what.substr(0, space) : what) + ": " + error.message;
  error.code = ErrorCode::kInvalidArgument;
  return tl::unexpected(std::move(error));
}

std::string Stem(const std::string& path) { return std::filesystem::path(path).stem().string(); }

bool IsDirectory(const std::string& path) {
  std::error_code ec;
  return std::filesystem::is_directory(path, ec);
}

bool IsRegularFile(const std::string& path) {
  std::error_code ec;
  return std::filesystem::is_regular_file(path, ec);
}

// A trace with what the reports call it.
struct Source {
  sim::Trace trace;
  // --synthetic: trace.jobs stays empty; each replay draws the jobs again as it goes
  // (sim::SyntheticJobStream) rather than holding a million of them, and the fgd experiment,
  // which needs them all, makes them (sim::MakeSyntheticTrace).
  std::optional<std::pair<sim::ClusterSummary, sim::SyntheticOptions>> synthetic;
  std::string workload;   // the jobs file's stem, or "synthetic-<id>"
  std::string jobs_path;  // where fgd-expected-results may sit beside ("" for none)
  std::string name;       // what the replay reports call the trace (ReplayOptions::trace_name)
};

std::string FileName(const std::string& path) {
  return std::filesystem::path(path).filename().string();
}

// --format FORMAT and its files.
Result<Source> LoadFormatTrace(const SimulateFlags& f) {
  Source source;
  if (f.format == "openb") {
    if (f.nodes_file.empty() || f.pods_file.empty()) {
      return InvalidArgument("--format openb needs --nodes NODES.csv and --pods PODS.csv");
    }
    if (!f.cluster_file.empty() || !f.jobs_file.empty()) {
      return InvalidArgument("--format openb reads --nodes and --pods, not --cluster or --jobs");
    }
    auto nodes = sim::LoadOpenbNodes(f.nodes_file);
    if (!nodes) return InputError("--nodes " + f.nodes_file, nodes.error());
    auto pods = sim::LoadOpenbPods(f.pods_file);
    if (!pods) return InputError("--pods " + f.pods_file, pods.error());
    source.trace = {std::move(*nodes), std::move(*pods)};
    source.workload = Stem(f.pods_file);
    source.jobs_path = f.pods_file;
    return source;
  }
  if (f.format != "tiresias" && f.format != "drover") {
    return InvalidArgument("--format " + f.format + ": expected openb, tiresias or drover");
  }
  if (f.cluster_file.empty() || f.jobs_file.empty()) {
    return InvalidArgument(fmt::format("--format {} needs --cluster and --jobs", f.format));
  }
  if (!f.nodes_file.empty() || !f.pods_file.empty()) {
    return InvalidArgument(
        fmt::format("--format {} reads --cluster and --jobs, not --nodes or --pods", f.format));
  }
  if (f.format == "tiresias") {
    auto nodes = sim::LoadTiresiasCluster(f.cluster_file);
    if (!nodes) return InputError("--cluster " + f.cluster_file, nodes.error());
    if (nodes->empty()) return InvalidArgument("--cluster " + f.cluster_file + ": no nodes");
    const int gpus_per_node = static_cast<int>(nodes->front().gpus.size());
    auto jobs = sim::LoadTiresiasJobs(f.jobs_file, gpus_per_node);
    if (!jobs) return InputError("--jobs " + f.jobs_file, jobs.error());
    source.trace = {std::move(*nodes), std::move(*jobs)};
  } else {
    auto nodes = sim::LoadClusterFile(f.cluster_file);
    if (!nodes) return InputError("--cluster " + f.cluster_file, nodes.error());
    auto jobs = sim::LoadDroverJobs(f.jobs_file);
    if (!jobs) return InputError("--jobs " + f.jobs_file, jobs.error());
    source.trace = {std::move(*nodes), std::move(*jobs)};
  }
  source.workload = Stem(f.jobs_file);
  source.jobs_path = f.jobs_file;
  source.name =
      fmt::format("{} {} on {}", f.format, FileName(f.jobs_file), FileName(f.cluster_file));
  return source;
}

// The sizes a synthetic trace may have (docs/simulation.md), so that a typo fails at once naming
// its flag rather than after minutes or by exhausting memory: nodes and jobs ten times the
// largest replay measured (1,000,000 jobs on 10,000 nodes, about 415 MB), GPUs per node well
// past a rack-scale NVLink domain (72), queues past any real queue tree.
constexpr int kMaxSyntheticNodes = 100'000;
constexpr int kMaxSyntheticGpusPerNode = 1'024;
constexpr std::int64_t kMaxSyntheticJobs = 10'000'000;
constexpr int kMaxSyntheticQueues = 1'000;
// Runs of the FGD experiment one invocation may average (each a whole run, about half a second
// on openb's default trace here): ten times the paper's ten seeds, and then some.
constexpr int kMaxFgdSeeds = 1'000;

// OK when `value` is in [least, most]; else kInvalidArgument "FLAG must be an integer from LEAST
// to MOST, got VALUE".
Status CheckRange(const char* flag, std::int64_t value, std::int64_t least, std::int64_t most) {
  if (value >= least && value <= most) return OkStatus();
  return InvalidArgument(
      fmt::format("{} must be an integer from {} to {}, got {}", flag, least, most, value));
}

// --synthetic SUMMARY.csv --cluster-id ID and the sizes.
Result<Source> LoadSyntheticTrace(const SimulateFlags& f) {
  if (f.cluster_id.empty()) return InvalidArgument("--synthetic needs --cluster-id ID");
  DROVER_RETURN_IF_ERROR(CheckRange("--nodes-count", f.nodes_count, 1, kMaxSyntheticNodes));
  DROVER_RETURN_IF_ERROR(
      CheckRange("--gpus-per-node", f.gpus_per_node, 1, kMaxSyntheticGpusPerNode));
  DROVER_RETURN_IF_ERROR(CheckRange("--jobs-count", f.jobs_count, 0, kMaxSyntheticJobs));
  if (!(f.load > 0)) return InvalidArgument("--load must be greater than 0");
  DROVER_RETURN_IF_ERROR(CheckRange("--queues", f.queues, 1, kMaxSyntheticQueues));
  auto summary = sim::LoadClusterSummary(f.synthetic_summary, f.cluster_id);
  if (!summary) {
    return InputError("--synthetic " + f.synthetic_summary, summary.error());
  }
  sim::SyntheticOptions options;
  options.nodes = f.nodes_count;
  options.gpus_per_node = f.gpus_per_node;
  options.jobs = f.jobs_count;
  options.load = f.load;
  options.queues = f.queues;
  options.seed = f.seed;
  Source source;
  source.trace.nodes = sim::MakeSyntheticNodes(options);
  source.synthetic.emplace(*summary, options);
  source.workload = "synthetic-" + f.cluster_id;
  source.name = fmt::format("synthetic {} from {}, load {:g}, seed {}, {} queues", f.cluster_id,
                            FileName(f.synthetic_summary), f.load, f.seed, f.queues);
  return source;
}

struct NamedPolicy {
  std::string name;  // as the reports show it
  model::Policy policy;
};

// The replay policy when none is given: the server's default queue order ("fair-share").
std::string DefaultReplayPolicy() {
  return std::string(model::QueueOrderName(model::Policy{}.order));
}

// A replay policy given to `flag`: a queue order by name (model::kQueueOrderNames) or a policy
// file.
Result<NamedPolicy> ResolveReplayPolicy(const std::string& flag, const std::string& value,
                                        const std::vector<std::string>& queues) {
  if (model::ParseQueueOrder(value)) {
    auto policy = sim::NamedReplayPolicy(value, queues);
    if (!policy) return InputError(flag + " " + value, policy.error());
    return NamedPolicy{value, std::move(*policy)};
  }
  if (!IsRegularFile(value)) {
    return InvalidArgument(fmt::format("{} {}: not a queue order ({}) and no such policy file",
                                       flag, value, model::kQueueOrderNames.ChoiceList()));
  }
  auto text = ReadSpecFile(value);
  if (!text) return InputError(flag + " " + value, text.error());
  spec::ParseOptions options;
  options.file_name = value;
  auto policy = spec::ParsePolicy(*text, options);
  if (!policy) return InputError(flag + " " + value, policy.error());
  return NamedPolicy{std::filesystem::path(value).filename().string(), std::move(*policy)};
}

// The replay's pacing from --tick and --pass-interval.
Result<sim::ReplayOptions> ReplayPacing(const SimulateFlags& f) {
  sim::ReplayOptions options;
  if (!f.tick.empty()) {
    auto tick = ParseDuration(f.tick);
    if (!tick) return InputError("--tick " + f.tick, tick.error());
    if (*tick < 1) return InvalidArgument("--tick " + f.tick + ": must be at least 1ms");
    options.tick = *tick;
  }
  if (!f.pass_interval.empty()) {
    auto pass = ParseDuration(f.pass_interval);
    if (!pass) return InputError("--pass-interval " + f.pass_interval, pass.error());
    options.pass_interval = *pass;
  }
  return options;
}

Result<json> Replay(const std::vector<model::Node>& nodes, sim::JobStream& jobs,
                    const std::string& trace_name, const NamedPolicy& policy,
                    const sim::ReplayOptions& pacing, bool timing, bool job_detail) {
  sim::ReplayOptions options = pacing;
  options.policy = policy.policy;
  options.policy_name = policy.name;
  options.trace_name = trace_name;
  options.timing = timing;
  options.job_detail = job_detail;
  auto result = sim::RunReplay(nodes, jobs, options);
  if (!result) {
    Error error = result.error();
    error.message = "replay under " + policy.name + ": " + error.message;
    return tl::unexpected(std::move(error));
  }
  return std::move(*result);
}

// One result, or {"experiment":"compare","results":[...]} for several.
json OneOrCompare(std::vector<json> results) {
  if (results.size() == 1) return std::move(results.front());
  return json{{"experiment", "compare"}, {"results", std::move(results)}};
}

// A fresh stream of the source's jobs, for one replay.
std::unique_ptr<sim::JobStream> JobsOf(const Source& source) {
  if (source.synthetic) {
    return std::make_unique<sim::SyntheticJobStream>(source.synthetic->first,
                                                     source.synthetic->second);
  }
  return std::make_unique<sim::TraceJobStream>(source.trace.jobs);
}

Result<json> RunReplays(const SimulateFlags& f, Source source) {
  DROVER_ASSIGN_OR_RETURN(auto pacing, ReplayPacing(f));
  const std::vector<std::string> names =
      f.policies.empty() ? std::vector<std::string>{DefaultReplayPolicy()} : f.policies;
  // Every policy is checked before the first replay starts.
  std::vector<NamedPolicy> policies;
  std::unique_ptr<sim::JobStream> jobs = JobsOf(source);
  for (const std::string& name : names) {
    DROVER_ASSIGN_OR_RETURN(auto policy, ResolveReplayPolicy("--policy", name, jobs->Queues()));
    policies.push_back(std::move(policy));
  }
  const std::int64_t job_count = source.synthetic
                                     ? std::max<std::int64_t>(source.synthetic->second.jobs, 0)
                                     : static_cast<std::int64_t>(source.trace.jobs.size());
  const bool job_detail = job_count <= static_cast<std::int64_t>(kJobDetailLimit);
  std::vector<json> results;
  for (const NamedPolicy& policy : policies) {
    if (!jobs) jobs = JobsOf(source);
    DROVER_ASSIGN_OR_RETURN(auto result, Replay(source.trace.nodes, *jobs, source.name, policy,
                                                pacing, !f.no_timing, job_detail));
    jobs.reset();
    results.push_back(std::move(result));
  }
  return OneOrCompare(std::move(results));
}

Result<json> RunFgd(const SimulateFlags& f, const Source& source) {
  // The paper's policies, and the server's own placement orders, which the experiment also
  // takes.
  std::vector<std::string> known = sim::FgdPolicyNames();
  for (model::Scoring scoring : {model::Scoring::kBinpack, model::Scoring::kSpread}) {
    known.emplace_back(model::ScoringName(scoring));
  }
  const std::vector<std::string> names =
      f.policies.empty() ? std::vector<std::string>{""} : f.policies;
  for (const std::string& name : names) {
    if (!name.empty() && std::find(known.begin(), known.end(), name) == known.end()) {
      return InvalidArgument(fmt::format("--policy {}: not an FGD placement policy (one of: {})",
                                         name, fmt::join(known, ", ")));
    }
  }
  DROVER_RETURN_IF_ERROR(CheckRange("--seeds", f.seeds, 1, kMaxFgdSeeds));
  if (!(f.inflate > 0 && f.inflate <= sim::kMaxFgdInflate)) {
    return InvalidArgument(fmt::format("--inflate must be greater than 0 and at most {}, got {}",
                                       sim::kMaxFgdInflate, f.inflate));
  }
  std::string published = f.published_dir;
  if (!published.empty()) {
    if (!IsDirectory(published)) {
      return InvalidArgument("--published " + published + ": no such directory");
    }
  } else if (!source.jobs_path.empty()) {
    const std::string beside =
        (std::filesystem::path(source.jobs_path).parent_path() / "fgd-expected-results").string();
    if (IsDirectory(beside)) published = beside;
  }
  std::vector<json> results;
  for (const std::string& name : names) {
    sim::FgdOptions options;
    options.policy = name;
    options.seed = f.seed;
    options.seeds = f.seeds;
    options.inflate = f.inflate;
    options.workload = source.workload;
    options.timing = !f.no_timing;
    options.published_dir = published;
    auto result = sim::RunFgdExperiment(source.trace.nodes, source.trace.jobs, options);
    if (!result) {
      Error error = result.error();
      error.message = "fgd experiment" + (name.empty() ? std::string() : " with " + name) + ": " +
                      error.message;
      return tl::unexpected(std::move(error));
    }
    results.push_back(std::move(*result));
  }
  return OneOrCompare(std::move(results));
}

// --from-server: the recorded window under the baseline and under the new policy.
Result<json> RunWhatIf(const SimulateFlags& f, TimeMs now) {
  if (f.policies.size() != 1) {
    return InvalidArgument("--from-server needs exactly one --policy (the new policy)");
  }
  std::optional<DurationMs> window;
  if (!f.window.empty()) {
    auto parsed = ParseDuration(f.window);
    if (!parsed) return InputError("--window " + f.window, parsed.error());
    if (*parsed <= 0) return InvalidArgument("--window " + f.window + ": must be positive");
    window = *parsed;
  }
  TimeMs from = 0, to = now;
  if (!f.since.empty()) {
    auto since = ParseIsoTime(f.since);
    if (!since) return InputError("--since", since.error());
    from = *since;
    if (window) to = from + *window;
    if (from > now) return InvalidArgument("--since " + f.since + ": in the future");
  } else if (window) {
    from = now - *window;
  } else {
    return InvalidArgument("--from-server needs --since ISO-TIME or --window DURATION");
  }
  auto trace = sim::TraceFromDataDir(f.from_server, from, to);
  if (!trace) return InputError("--from-server " + f.from_server, trace.error());
  const std::vector<std::string> queues = sim::TraceJobStream(trace->jobs).Queues();
  DROVER_ASSIGN_OR_RETURN(
      auto before, f.baseline_policy.empty()
                       ? ResolveReplayPolicy("baseline", DefaultReplayPolicy(), queues)
                       : ResolveReplayPolicy("--baseline-policy", f.baseline_policy, queues));
  DROVER_ASSIGN_OR_RETURN(auto after, ResolveReplayPolicy("--policy", f.policies.front(), queues));
  DROVER_ASSIGN_OR_RETURN(auto pacing, ReplayPacing(f));
  const std::string name = "jobs recorded in " + f.from_server;
  // CompareQueueTimes reads the per-job rows: always kept here.
  sim::TraceJobStream before_jobs(trace->jobs), after_jobs(trace->jobs);
  DROVER_ASSIGN_OR_RETURN(auto before_result, Replay(trace->nodes, before_jobs, name, before,
                                                     pacing, !f.no_timing, true));
  DROVER_ASSIGN_OR_RETURN(
      auto after_result, Replay(trace->nodes, after_jobs, name, after, pacing, !f.no_timing, true));
  json teams = sim::CompareQueueTimes(before_result, after_result);
  json per_team = json::object();
  if (teams.is_object()) {
    if (auto it = teams.find("teams"); it != teams.end() && it->is_object()) per_team = *it;
  }
  return json{{"experiment", "what-if"},
              {"data_dir", f.from_server},
              {"from_ms", from},
              {"to_ms", to},
              {"jobs", trace->jobs.size()},
              {"before", std::move(before_result)},
              {"after", std::move(after_result)},
              {"per_team", std::move(per_team)}};
}

// "drover simulate: MESSAGE" and any details on stderr; the exit status for it.
int Fail(const Error& error) {
  std::cerr << "drover simulate: " << error.message << "\n";
  for (const std::string& detail : error.details) std::cerr << detail << "\n";
  return error.code == ErrorCode::kInternal ? 1 : 2;
}

}  // namespace

Result<json> RunSimulation(const SimulateFlags& f, TimeMs now) {
  const int sources = !f.format.empty() + !f.synthetic_summary.empty() + !f.from_server.empty();
  if (sources == 0) {
    return InvalidArgument(
        "no trace: give --format openb|tiresias|drover with its files, --synthetic "
        "SUMMARY.csv or --from-server DATA_DIR");
  }
  if (sources > 1) {
    return InvalidArgument("--format, --synthetic and --from-server exclude each other");
  }
  if (!f.experiment.empty() && f.experiment != "fgd" && f.experiment != "replay") {
    return InvalidArgument("--experiment " + f.experiment + ": expected fgd or replay");
  }
  if (f.from_server.empty() &&
      (!f.since.empty() || !f.window.empty() || !f.baseline_policy.empty())) {
    return InvalidArgument("--since, --window and --baseline-policy need --from-server");
  }
  if (!f.from_server.empty()) {
    if (f.experiment == "fgd") {
      return InvalidArgument("--experiment fgd: --from-server replays; it has no fgd");
    }
    return RunWhatIf(f, now);
  }
  DROVER_ASSIGN_OR_RETURN(Source source,
                          f.format.empty() ? LoadSyntheticTrace(f) : LoadFormatTrace(f));
  const std::string experiment =
      !f.experiment.empty() ? f.experiment : (f.format == "openb" ? "fgd" : "replay");
  if (experiment == "fgd") {
    if (source.synthetic) {
      source.trace.jobs =
          sim::MakeSyntheticTrace(source.synthetic->first, source.synthetic->second).jobs;
    }
    return RunFgd(f, source);
  }
  return RunReplays(f, std::move(source));
}

int SimulateCommand(const SimulateFlags& flags) {
  const std::string output = flags.output.empty() ? "text" : flags.output;
  if (output != "json" && output != "text" && output != "html") {
    return Fail(
        Error{ErrorCode::kInvalidArgument, "-o " + output + ": expected json, text or html", {}});
  }
  auto result = RunSimulation(flags, SystemClock().Now());
  if (!result) return Fail(result.error());
  // The report file first: a failure to write it leaves stdout empty.
  if (!flags.report_file.empty()) {
    std::ofstream out(flags.report_file, std::ios::binary | std::ios::trunc);
    out << sim::RenderHtmlReport(*result);
    out.close();
    if (!out) {
      return Fail(Error{ErrorCode::kInvalidArgument,
                        "--report " + flags.report_file + ": cannot write the file",
                        {}});
    }
  }
  if (output == "json") {
    std::cout << result->dump(2, ' ', false, json::error_handler_t::replace) << "\n";
  } else if (output == "text") {
    std::cout << sim::RenderTextReport(*result);
  } else if (flags.report_file.empty()) {
    std::cout << sim::RenderHtmlReport(*result);
  }
  std::cout.flush();
  return 0;
}

}  // namespace drover::daemons
