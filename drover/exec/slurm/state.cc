#include "drover/exec/slurm/state.h"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <charconv>
#include <map>
#include <optional>

namespace drover::exec::slurm {
namespace {

int ToInt(std::string_view text) {
  int value = 0;
  std::from_chars(text.data(), text.data() + text.size(), value);
  return value;
}

}  // namespace

TimeMs ParseLocalTime(std::string_view text) {
  if (text.empty() || text[0] < '0' || text[0] > '9') return 0;
  return ParseIsoTime(std::string(text)).value_or(0);
}

TimeMs LocalTimeMemo::operator()(std::string_view text) {
  auto [it, inserted] = seen_.try_emplace(text, 0);
  if (inserted) it->second = ParseLocalTime(text);
  return it->second;
}

std::optional<SlurmJob> ParseJobLine(std::string_view line, const TimeParser& parse_time) {
  // The keys read, each with the value of its first occurrence.
  enum Key {
    kJobId,
    kJobName,
    kArrayJobId,
    kArrayTaskId,
    kJobState,
    kReason,
    kSubmitTime,
    kEligibleTime,
    kStartTime,
    kEndTime,
    kNodeList,
    kExitCode,
    kRestarts,
    kKeyCount
  };
  static constexpr std::array<std::string_view, kKeyCount> kNames = {
      "JobId",        "JobName",   "ArrayJobId", "ArrayTaskId", "JobState", "Reason",  "SubmitTime",
      "EligibleTime", "StartTime", "EndTime",    "NodeList",    "ExitCode", "Restarts"};
  std::array<std::optional<std::string_view>, kKeyCount> values;
  for (std::size_t pos = 0; pos < line.size();) {
    while (pos < line.size() && line[pos] == ' ') ++pos;
    std::size_t end = line.find(' ', pos);
    if (end == std::string_view::npos) end = line.size();
    const std::string_view item = line.substr(pos, end - pos);
    pos = end;
    const std::size_t eq = item.find('=');
    if (eq == std::string_view::npos) continue;
    const auto name = std::find(kNames.begin(), kNames.end(), item.substr(0, eq));
    if (name == kNames.end()) continue;
    std::optional<std::string_view>& value = values[name - kNames.begin()];
    if (!value) value = item.substr(eq + 1);
  }
  auto get = [&](Key key) { return values[key].value_or(""); };
  SlurmJob job;
  job.id = get(kJobId);
  if (job.id.empty()) return std::nullopt;
  job.name = get(kJobName);
  job.array_job_id = get(kArrayJobId);
  job.array_task_ids = get(kArrayTaskId);
  job.state = get(kJobState);
  job.reason = get(kReason);
  job.submit_time = parse_time(get(kSubmitTime));
  job.eligible_time = parse_time(get(kEligibleTime));
  job.start_time = parse_time(get(kStartTime));
  job.end_time = parse_time(get(kEndTime));
  const std::string_view nodes = get(kNodeList);
  if (nodes != "(null)") job.nodes = ExpandHostList(nodes);
  const std::string_view exit = get(kExitCode);  // "3:0": code:signal
  if (std::size_t colon = exit.find(':'); colon != std::string_view::npos) {
    job.exit_code = ToInt(exit.substr(0, colon));
    job.exit_signal = ToInt(exit.substr(colon + 1));
  }
  job.restarts = ToInt(get(kRestarts));
  return job;
}

JobListing ParseListing(std::string_view text, const TimeParser& parse_time) {
  JobListing listing;
  while (!text.empty()) {
    const std::size_t newline = text.find('\n');
    const std::string_view line = text.substr(0, newline);
    text = newline == std::string_view::npos ? std::string_view() : text.substr(newline + 1);
    std::optional<SlurmJob> job = ParseJobLine(line, parse_time);
    if (!job) continue;
    for (std::string& id : RecordIds(*job)) {
      listing.record_of.emplace(std::move(id), listing.records.size());
    }
    listing.records.push_back(std::move(*job));
  }
  return listing;
}

std::vector<std::string> RecordIds(const SlurmJob& job) {
  if (job.array_job_id.empty() || job.array_task_ids.empty()) return {job.id};
  std::vector<std::string> ids;
  // "1-9:2,12%4": ranges with an optional step, then an optional throttle.
  std::string_view tasks = job.array_task_ids;
  tasks = tasks.substr(0, tasks.find('%'));
  while (!tasks.empty()) {
    const std::size_t comma = tasks.find(',');
    std::string_view range = tasks.substr(0, comma);
    tasks = comma == std::string_view::npos ? std::string_view() : tasks.substr(comma + 1);
    const std::size_t colon = range.find(':');
    const int step =
        colon == std::string_view::npos ? 1 : std::max(ToInt(range.substr(colon + 1)), 1);
    range = range.substr(0, colon);
    const std::size_t dash = range.find('-');
    const int from = ToInt(range.substr(0, dash));
    const int to = dash == std::string_view::npos ? from : ToInt(range.substr(dash + 1));
    for (int n = from; n <= to && ids.size() < 100'000; n += step) {
      ids.push_back(fmt::format("{}_{}", job.array_job_id, n));
    }
  }
  return ids;
}

std::vector<std::string> ExpandHostList(std::string_view list) {
  std::vector<std::string> hosts;
  std::size_t pos = 0;
  while (pos < list.size()) {
    // One item: a prefix, then optionally [ranges], up to a comma outside brackets.
    std::size_t end = pos;
    int depth = 0;
    while (end < list.size() && (depth > 0 || list[end] != ',')) {
      if (list[end] == '[') ++depth;
      if (list[end] == ']') --depth;
      ++end;
    }
    std::string_view item = list.substr(pos, end - pos);
    pos = end + 1;
    std::size_t open = item.find('[');
    std::size_t close = item.find(']');
    if (open == std::string_view::npos || close == std::string_view::npos || close < open) {
      if (!item.empty()) hosts.emplace_back(item);
      continue;
    }
    const std::string prefix(item.substr(0, open));
    const std::string suffix(item.substr(close + 1));
    std::string_view ranges = item.substr(open + 1, close - open - 1);
    while (!ranges.empty()) {
      std::size_t comma = ranges.find(',');
      std::string_view range = ranges.substr(0, comma);
      ranges = comma == std::string_view::npos ? std::string_view() : ranges.substr(comma + 1);
      std::size_t dash = range.find('-');
      std::string_view first = range.substr(0, dash);
      std::string_view last = dash == std::string_view::npos ? first : range.substr(dash + 1);
      const int from = ToInt(first);
      const int to = ToInt(last);
      for (int n = from; n <= to && n - from < 100'000; ++n) {
        hosts.push_back(fmt::format("{}{:0{}}{}", prefix, n, first.size(), suffix));
      }
    }
  }
  return hosts;
}

bool IsFinalState(std::string_view state) {
  return state == "COMPLETED" || state == "FAILED" || state == "CANCELLED" || state == "TIMEOUT" ||
         state == "PREEMPTED" || state == "NODE_FAIL" || state == "BOOT_FAIL" ||
         state == "DEADLINE" || state == "OUT_OF_MEMORY";
}

model::ExitStatus ExitOf(const SlurmJob& job, bool timeout_marker) {
  model::ExitStatus exit;
  exit.exit_code = job.exit_code;
  exit.signal = job.exit_signal;
  const std::string_view state = job.state;
  if (timeout_marker || state == "TIMEOUT" || state == "DEADLINE") {
    exit.timed_out = true;
  } else if (state == "CANCELLED") {
    exit.cancelled = true;
  } else if (state == "PREEMPTED") {
    exit.preempted = true;
    exit.message = "by Slurm";
  } else if (state == "NODE_FAIL" || state == "BOOT_FAIL") {
    exit.node_lost = true;
    exit.message = fmt::format("Slurm {} on {}", job.state, fmt::join(job.nodes, ","));
  } else if (state == "OUT_OF_MEMORY") {
    exit.message = "out of memory (Slurm OUT_OF_MEMORY)";
    if (exit.exit_code == 0 && exit.signal == 0) exit.exit_code = 1;
  } else if (state == "FAILED" && exit.exit_code == 0 && exit.signal == 0) {
    exit.exit_code = 1;  // FAILED without a code (e.g. a launch failure)
    exit.message = "Slurm reports FAILED (" + job.reason + ")";
  }
  return exit;
}

std::vector<SlurmJob> ParseRunEnds(std::string_view sacct_output, std::string_view id,
                                   std::string_view name, const TimeParser& parse_time) {
  std::vector<SlurmJob> runs;
  std::size_t pos = 0;
  while (pos < sacct_output.size()) {
    std::size_t end = sacct_output.find('\n', pos);
    if (end == std::string_view::npos) end = sacct_output.size();
    std::string_view line = sacct_output.substr(pos, end - pos);
    pos = end + 1;
    std::vector<std::string_view> fields;
    for (std::size_t from = 0;;) {
      std::size_t bar = line.find('|', from);
      fields.push_back(line.substr(from, bar - from));
      if (bar == std::string_view::npos) break;
      from = bar + 1;
    }
    if (fields.size() < 7 || fields[0] != id || fields[1] != name) continue;
    SlurmJob run;
    run.id = std::string(fields[0]);
    run.name = std::string(fields[1]);
    run.state = std::string(fields[2].substr(0, fields[2].find(' ')));  // "CANCELLED by 0"
    const std::string_view exit = fields[3];
    const std::size_t colon = exit.find(':');
    run.exit_code = ToInt(exit.substr(0, colon));
    if (colon != std::string_view::npos) run.exit_signal = ToInt(exit.substr(colon + 1));
    run.start_time = parse_time(fields[4]);
    run.end_time = parse_time(fields[5]);
    run.nodes = ExpandHostList(fields[6]);
    runs.push_back(std::move(run));
  }
  return runs;
}

model::ExitStatus RequeuedExit(const SlurmJob* run, std::string_view id) {
  model::ExitStatus exit;
  if (run != nullptr && (run->state == "NODE_FAIL" || run->state == "BOOT_FAIL")) {
    exit.node_lost = true;
    exit.message = fmt::format("Slurm {} on {}; Slurm requeued job {}", run->state,
                               fmt::join(run->nodes, ","), id);
  } else {
    exit.preempted = true;
    exit.message = fmt::format("Slurm requeued job {}{}", id,
                               run == nullptr            ? " (no jobcomp record says why)"
                               : run->state == "PENDING" ? " (scontrol requeue)"
                                                         : " after preempting it");
  }
  return exit;
}

std::string DescribeReason(std::string_view reason) {
  static const std::map<std::string_view, std::string_view> kMeaning = {
      {"Resources", "the nodes, GPUs or memory it needs are in use"},
      {"Priority", "jobs of higher priority are ahead of it in the partition"},
      {"Dependency", "waiting for a Slurm job dependency"},
      {"BeginTime", "its earliest start time (--begin, or 120 s after a requeue) has not arrived"},
      {"None", "not yet considered by the Slurm scheduler"},
      {"JobHeldUser", "held by its user (scontrol release)"},
      {"JobHeldAdmin", "held by an administrator"},
      {"ReqNodeNotAvail", "a node it needs is down, drained or reserved"},
      {"PartitionTimeLimit", "its time limit exceeds the partition's"},
      {"PartitionNodeLimit", "its node count exceeds the partition's limits"},
      {"PartitionDown", "the partition is down"},
      {"NodeDown", "a node it needs is down"},
      {"BadConstraints", "no node can ever satisfy its constraints"},
      {"QOSMaxGRESPerUser", "the QOS limit on GPUs per user is reached"},
      {"AssocGrpGRES", "the account's GPU limit is reached"},
  };
  auto it = kMeaning.find(reason);
  if (it != kMeaning.end()) return fmt::format("{}: {}", reason, it->second);
  return std::string(reason);
}

}  // namespace drover::exec::slurm
