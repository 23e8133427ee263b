#include "drover/cli/text.h"

#include <fmt/format.h>
#include <pwd.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cstring>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <optional>
#include <utility>
#include <vector>

#include "drover/api/views.h"
#include "drover/cli/table.h"
#include "drover/common/quantity.h"
#include "drover/model/decision.h"
#include "drover/model/job.h"
#include "drover/model/job_spec.h"
#include "drover/spec/limits.h"
#include "drover/workflow/rollup.h"

namespace drover::cli {

using nlohmann::json;

Result<std::string> ReadSpecFile(const std::string& path) {
  std::ifstream file;
  std::istream* in = &std::cin;
  const std::string name = path == "-" ? "<stdin>" : path;
  if (path != "-") {
    std::error_code ec;
    if (std::filesystem::is_directory(path, ec)) {
      return InvalidArgument(fmt::format("cannot read {}: it is a directory", path));
    }
    file.open(path, std::ios::binary);
    if (!file)
      return InvalidArgument(fmt::format("cannot read {}: {}", path, std::strerror(errno)));
    in = &file;
  }
  std::string text;
  std::string chunk(64 * spec::kBytesPerKiB, '\0');
  while (in->read(chunk.data(), static_cast<std::streamsize>(chunk.size())) || in->gcount() > 0) {
    text.append(chunk.data(), static_cast<std::size_t>(in->gcount()));
    if (text.size() > static_cast<std::size_t>(spec::kMaxSpecFileBytes)) {
      return InvalidArgument(
          fmt::format("cannot read {}: more than {} MiB; a spec file is at most that", name,
                      spec::kMaxSpecFileBytes / spec::kBytesPerMiB));
    }
  }
  if (in->bad())
    return InvalidArgument(fmt::format("cannot read {}: {}", name, std::strerror(errno)));
  return text;
}

spec::ParseOptions SpecOptionsFor(const std::string& path) {
  spec::ParseOptions options;
  options.file_name = path == "-" ? "<stdin>" : path;
  std::error_code ec;
  std::filesystem::path base = path == "-" ? std::filesystem::current_path(ec)
                                           : std::filesystem::absolute(path, ec).parent_path();
  options.base_dir = base.lexically_normal().string();
  options.known_time_zone = [](std::string_view name) { return ZoneinfoHas(name); };
  return options;
}

bool ZoneinfoHas(std::string_view name, const std::string& zoneinfo_dir) {
  std::error_code ec;
  if (!std::filesystem::is_directory(zoneinfo_dir, ec)) return true;
  const std::filesystem::path relative(name);
  if (name.empty() || relative.is_absolute()) return false;
  for (const std::filesystem::path& part : relative) {
    if (part == "..") return false;
  }
  std::ifstream zone(zoneinfo_dir + "/" + std::string(name), std::ios::binary);
  std::string magic(4, '\0');
  return zone.read(magic.data(), 4) && magic == "TZif";
}

int ReportError(const Error& error) {
  std::cerr << "drover: " << error.message << "\n";
  for (const std::string& detail : error.details) std::cerr << detail << "\n";
  return error.code == ErrorCode::kInvalidArgument ? 2 : 1;
}

std::string CurrentUser() {
  if (const char* user = std::getenv("USER"); user && *user) return user;
  if (const passwd* entry = getpwuid(getuid())) return entry->pw_name;
  return fmt::format("uid{}", getuid());
}

std::string Truncate(const std::string& text, std::size_t width) {
  if (text.size() <= width) return text;
  return text.substr(0, width - 3) + "...";
}

std::string TaintText(const json& taint) {
  std::string value = taint.value("value", "");
  return fmt::format("{}{}:{}", taint.value("key", ""), value.empty() ? "" : "=" + value,
                     taint.value("effect", ""));
}

namespace {

std::string Offset(const json& value, std::int64_t origin) {
  if (!value.is_number() || value.get<std::int64_t>() == 0) return "-";
  return "+" + FormatDuration(value.get<std::int64_t>() - origin);
}

std::string Gpus(const json& gpus) {
  std::string out;
  for (const json& gpu : gpus) out += (out.empty() ? "" : ",") + std::to_string(gpu.get<int>());
  return out.empty() ? "-" : out;
}

// The mean of a usage Stat ({"count", "sum", "max"}); -1 when it has no sample.
double StatMean(const json& stat) {
  const auto count = stat.value("count", std::int64_t{0});
  return count > 0 ? stat.value("sum", 0.0) / static_cast<double>(count) : -1.0;
}

// "; per GPU 0 98%, 1 0%, ..." (NVML index and mean activity, by index) for an attempt with
// more than one GPU sampled, at most kListed of them; empty otherwise.
std::string DescribePerGpu(const json& gpus) {
  constexpr std::size_t kListed = 16;
  if (!gpus.is_array() || gpus.size() < 2) return "";
  std::vector<std::pair<int, double>> means;  // index, mean activity
  for (const json& gpu : gpus) {
    means.emplace_back(gpu.value("index", 0),
                       std::max(StatMean(gpu.value("util", json::object())), 0.0));
  }
  std::stable_sort(means.begin(), means.end(),
                   [](const auto& a, const auto& b) { return a.first < b.first; });
  std::string out = "; per GPU";
  for (std::size_t i = 0; i < means.size() && i < kListed; ++i) {
    out += fmt::format("{} {} {:.0f}%", i == 0 ? "" : ",", means[i].first, means[i].second);
  }
  if (means.size() > kListed) out += fmt::format(" and {} more", means.size() - kListed);
  return out;
}

// One line of an attempt's usage summary (GET /v1/jobs/{id}'s "usage"; docs/observability.md).
std::string DescribeUsage(const json& summary) {
  const json& util = summary.value("gpu_util", json::object());
  const std::int64_t gpu_samples = util.value("count", std::int64_t{0});
  std::string gpu = "no GPU samples";
  if (gpu_samples > 0) {
    gpu = fmt::format("GPU activity mean {:.0f}% (p50 {}%, p95 {}%), peak GPU memory {}",
                      util.value("sum", 0.0) / static_cast<double>(gpu_samples),
                      summary.value("gpu_util_p50", 0), summary.value("gpu_util_p95", 0),
                      FormatBytesApprox(summary.value("peak_gpu_memory_bytes", std::int64_t{0})));
    // Its own processes' share of the device's memory, and anyone else on its GPUs.
    if (const auto own = summary.value("peak_process_gpu_memory_bytes", std::int64_t{0}); own > 0) {
      gpu += fmt::format(" ({} its processes)", FormatBytesApprox(own));
    }
    if (const int others = summary.value("peak_other_gpu_processes", 0); others > 0) {
      gpu += fmt::format(", {} other process(es) on its GPUs", others);
    }
    // GPM (Hopper and newer): how much of the GPU the kernels used while they ran.
    auto mean = [&summary](const char* key) {
      return StatMean(summary.value(key, json::object()));
    };
    if (const double sm = mean("sm_active"); sm >= 0) {
      gpu += fmt::format(", SM activity {:.0f}% (occupancy {:.0f}%), tensor {:.1f}%, DRAM {:.0f}%",
                         sm, mean("sm_occupancy"), mean("tensor_active"), mean("dram_bandwidth"));
    }
  }
  return fmt::format("usage: {}, peak RSS {}, CPU {}, energy {:.0f} J{}{}", gpu,
                     FormatBytesApprox(summary.value("peak_rss_bytes", std::int64_t{0})),
                     FormatDuration(summary.value("cpu_ms", std::int64_t{0})),
                     summary.value("energy_joules", 0.0),
                     summary.value("series_truncated", false) ? " (series truncated)" : "",
                     DescribePerGpu(summary.value("gpus", json::array())));
}

}  // namespace

std::string DescribeJob(const json& job) {
  std::string out;
  const std::int64_t created = job["created_at"].get<std::int64_t>();
  const json& m = job["metrics"];
  out +=
      fmt::format("Job {} ({})\n", job["id"].get<std::int64_t>(), job["name"].get<std::string>());
  out += fmt::format("  state:     {}\n", job["state"].get<std::string>());
  if (!job["message"].get<std::string>().empty()) {
    out += fmt::format("  message:   {}\n", job["message"].get<std::string>());
  }
  if (const json hold = job.value("hold", json(nullptr)); hold.is_object()) {
    out += fmt::format("  held:      by {} since {}{}\n", hold.value("by", ""),
                       FormatTimestamp(hold.value("since", std::int64_t{0})),
                       hold.value("reason", "").empty() ? "" : ": " + hold.value("reason", ""));
  }
  out += fmt::format("  owner:     {}   team: {}   queue: {}   priority: {}\n",
                     job["owner"].get<std::string>(), OrNone(job["team"].get<std::string>()),
                     job["queue"].get<std::string>(), job["priority"].get<std::string>());
  out += fmt::format("  shape:     {} worker(s) x {} GPU(s)\n", job["workers"].get<int>(),
                     job["spec"]["requirements"]["per_worker"]["gpus"].get<int>());
  out +=
      fmt::format("  durations: queue wait {}, start-up {}, run {}, total {}; {:.4f} GPU-hours\n",
                  FormatDuration(m["queue_wait_ms"].get<std::int64_t>()),
                  FormatDuration(m["startup_ms"].get<std::int64_t>()),
                  FormatDuration(m["run_time_ms"].get<std::int64_t>()),
                  FormatDuration(m["total_ms"].get<std::int64_t>()), m["gpu_hours"].get<double>());
  out += fmt::format("  split:     {}\n", DescribeSplit(job["split"]));
  out += "  timeline (current attempt, from creation):\n";
  for (const char* phase : {"ready", "dequeued", "admitted", "placed", "workers_started", "running",
                            "useful_work", "finished"}) {
    if (job["timeline"].contains(phase)) {
      out += fmt::format("    {:<16} {}\n", phase, Offset(job["timeline"][phase], created));
    }
  }
  std::string previous_external_id;  // of the attempt before: the same one means a continuation
  for (const json& attempt : job["attempts"]) {
    std::string outcome = attempt.contains("outcome") && attempt["outcome"].is_string()
                              ? attempt["outcome"].get<std::string>()
                              : "in progress";
    const std::string cause = attempt.value("cause", "");
    const double gpu_seconds = attempt.value("gpu_seconds", 0.0);
    out +=
        fmt::format("  attempt {}: {}{}{}\n", attempt["number"].get<int>(), outcome,
                    cause.empty() ? "" : " - " + cause,
                    gpu_seconds > 0 ? fmt::format(" ({:.1f} GPU-seconds, {:.1f} lost)", gpu_seconds,
                                                  attempt.value("lost_gpu_seconds", 0.0))
                                    : "");
    // Preemption and checkpoints: how the attempt began and what it kept.
    std::vector<std::string> notes;
    if (const std::string executor = attempt.value("executor", ""); !executor.empty()) {
      // Under an external executor: its id there, its times and, while queued, its reason.
      const std::string external_id = attempt.value("external_id", "");
      std::string where =
          fmt::format("{} job {}", executor, external_id.empty() ? "-" : external_id);
      if (!external_id.empty() && external_id == previous_external_id) {
        where += " (continued after " + executor + " requeued it)";
      }
      previous_external_id = external_id;
      if (const json at = attempt.value("external_submitted_at", json(0)); at != 0) {
        where += " submitted " + Offset(at, created);
      }
      if (const json at = attempt.value("external_eligible_at", json(0)); at != 0) {
        where += ", eligible " + Offset(at, created);
      }
      if (const std::string reason = attempt.value("external_reason", ""); !reason.empty()) {
        where += ", pending: " + reason;
      }
      notes.push_back(where);
    }
    if (attempt.value("resumed", false)) notes.push_back("resumed from a checkpoint");
    // What the job reported (`drover report`).
    if (const json at = attempt.value("useful_work_at", json(0)); at.is_number() && at != 0) {
      notes.push_back("useful work began " + Offset(at, created));
    }
    if (const json progress = attempt.value("progress", json(nullptr)); progress.is_number()) {
      notes.push_back(fmt::format("progress {:.0f}%", progress.get<double>() * 100));
    }
    if (const json rate = attempt.value("throughput", json(nullptr)); rate.is_number()) {
      notes.push_back(fmt::format("throughput {:g} {}", rate.get<double>(),
                                  attempt.value("throughput_unit", std::string())));
    }
    if (const json at = attempt.value("last_checkpoint_at", json(0)); at.is_number() && at != 0) {
      notes.push_back(fmt::format("last checkpoint {} ({})", Offset(at, created),
                                  FormatTimestamp(at.get<std::int64_t>())));
    } else if (attempt.contains("preempted_by")) {
      notes.push_back("no checkpoint");
    }
    if (attempt.contains("preempted_by") && attempt["preempted_by"].is_number()) {
      notes.push_back(
          fmt::format("preempted by job {}", attempt["preempted_by"].get<std::int64_t>()));
    }
    if (const std::string disruption = attempt.value("disruption", ""); !disruption.empty()) {
      notes.push_back("disruption: " + disruption);
    }
    if (!notes.empty()) out += fmt::format("    {}\n", fmt::join(notes, "; "));
    for (const json& usage : job.value("usage", json::array())) {
      if (usage.value("attempt", 0) == attempt["number"].get<int>()) {
        out += "    " + DescribeUsage(usage.value("summary", json::object())) + "\n";
      }
    }
    Table workers({"    RANK", "NODE", "GPUS", "STATE", "STARTED", "FINISHED", "EXIT"});
    for (const json& worker : attempt["workers"]) {
      std::string exit = "-";
      if (worker.contains("exit") && worker["exit"].is_object()) {
        const json& e = worker["exit"];
        exit = e["cancelled"].get<bool>()     ? "cancelled"
               : e.value("preempted", false)  ? "preempted"
               : e.value("node_lost", false)  ? "node lost"
               : e.value("oom_killed", false) ? "OOM-killed"
               : e["timed_out"].get<bool>()   ? "timed out"
               : e["signal"].get<int>() != 0  ? fmt::format("signal {}", e["signal"].get<int>())
                                              : fmt::format("{}", e["exit_code"].get<int>());
        if (!e.value("message", "").empty()) exit += " (" + e["message"].get<std::string>() + ")";
      }
      const std::string node = worker.value("host", worker["node"].get<std::string>());
      workers.AddRow({"    " + std::to_string(worker["rank"].get<int>()), node,
                      Gpus(worker["gpus"]), worker["state"], Offset(worker["started_at"], created),
                      Offset(worker["finished_at"], created), exit});
    }
    out += workers.Render();
  }
  out += "  transitions:\n";
  for (const json& t : job["transitions"]) {
    // A step that keeps the state is an event in it (the submission, a user's hold, release or
    // update), not a change.
    const std::string from = t["from_state"].get<std::string>();
    const std::string to = t["to_state"].get<std::string>();
    const std::string actor = t.value("actor", std::string(model::kSystemActor));
    const std::string by = actor == model::kSystemActor ? "" : " by " + actor;
    out += from == to ? fmt::format("    {:>8}  {}  ({}){}\n", Offset(t["at"], created),
                                    t["cause"].get<std::string>(), to, by)
                      : fmt::format("    {:>8}  {} -> {}  ({}){}\n", Offset(t["at"], created), from,
                                    to, t["cause"].get<std::string>(), by);
  }
  return out;
}

std::string DescribeUserActions(const json& job) {
  std::string out;
  if (!job.contains("transitions")) return out;
  for (const json& t : job["transitions"]) {
    const std::string actor = t.value("actor", std::string(model::kSystemActor));
    if (actor == model::kSystemActor) continue;
    out += fmt::format("  {}  {}: {}\n", FormatTimestamp(t.value("at", std::int64_t{0})), actor,
                       t.value("cause", ""));
  }
  return out.empty() ? out : "user actions:\n" + out;
}

std::string FormatMs(const json& ms) {
  return FormatMs(ms.is_number() ? ms.get<std::int64_t>() : 0);
}

std::string FormatMs(std::int64_t ms) { return ms > 0 ? FormatDuration(ms) : "-"; }

std::string DescribeSplit(const json& split) {
  std::vector<std::string> phases;
  for (const api::SplitPhase& phase : api::kSplitPhases) {
    const std::int64_t ms = split.value(std::string(phase.name) + "_ms", std::int64_t{0});
    if (ms > 0) phases.push_back(fmt::format("{} {}", phase.name, FormatDuration(ms)));
  }
  return phases.empty() ? "-" : fmt::format("{}", fmt::join(phases, ", "));
}

namespace {

// "lr=0.1 batch=32", "accuracy=0.93": a JSON object of strings on one line.
std::string Pairs(const json& object) {
  std::vector<std::string> pairs;
  for (const auto& [key, value] : object.items()) {
    pairs.push_back(key + "=" + (value.is_string() ? value.get<std::string>() : value.dump()));
  }
  return fmt::format("{}", fmt::join(pairs, " "));
}

// What a pipeline tree says of a job besides its state: its outputs and its message.
std::string JobNotes(const json& job) {
  std::vector<std::string> notes;
  if (!job["outputs"].empty()) notes.push_back(Pairs(job["outputs"]));
  if (!job.value("message", "").empty()) notes.push_back(Truncate(job["message"], 60));
  return fmt::format("{}", fmt::join(notes, "; "));
}

}  // namespace

std::string DescribePipeline(const json& run) {
  std::string out = fmt::format(
      "Pipeline run {} ({}): {}, {}/{} stages done, wall {}\n", run.value("id", std::int64_t{0}),
      run.value("name", ""), run.value("state", ""), run.value("stages_done", 0),
      run.value("stages_total", 0), FormatDuration(run.value("wall_ms", std::int64_t{0})));
  Table tree({"STAGE", "STATE", "JOB", "QUEUED", "RAN", "DETAIL"});
  const json& stages = run["stages"];
  for (std::size_t i = 0; i < stages.size(); ++i) {
    const json& stage = stages[i];
    const bool last_stage = i + 1 == stages.size();
    const json& jobs = stage["jobs"];
    const bool sweep = !jobs.empty() && jobs[0]["trial"].is_object();
    std::vector<std::string> notes;
    std::vector<std::string> upstreams;
    for (const json& dependency : stage["depends_on"]) {
      const std::string condition = dependency["condition"];
      upstreams.push_back(
          dependency["stage"].get<std::string>() +
          (model::ParseDependencyCondition(condition) == model::DependencyCondition::kSucceeded
               ? ""
               : " " + condition));
    }
    if (!upstreams.empty()) notes.push_back(fmt::format("after {}", fmt::join(upstreams, ", ")));
    // A skipped stage's message already says why its `if` did not hold.
    if (!stage.value("if", "").empty() && stage["state"] != "skipped") {
      notes.push_back("if " + stage["if"].get<std::string>());
    }
    if (!sweep && jobs.size() == 1 && !JobNotes(jobs[0]).empty()) {
      notes.push_back(JobNotes(jobs[0]));
    }
    tree.AddRow({(last_stage ? "`-- " : "|-- ") + stage["name"].get<std::string>() +
                     (sweep ? fmt::format(" (sweep, {} trials)", jobs.size()) : ""),
                 stage["state"], sweep || jobs.size() != 1 ? "-" : jobs[0]["id"].dump(),
                 FormatMs(stage["queue_wait_ms"]), FormatMs(stage["run_time_ms"]),
                 fmt::format("{}", fmt::join(notes, "; "))});
    if (!sweep && jobs.size() == 1) continue;
    for (std::size_t j = 0; j < jobs.size(); ++j) {
      const json& job = jobs[j];
      const json& trial = job["trial"];
      tree.AddRow({std::string(last_stage ? "    " : "|   ") +
                       (j + 1 == jobs.size() ? "`-- " : "|-- ") + job["name"].get<std::string>() +
                       (trial.is_object() ? " " + Pairs(trial["params"]) : ""),
                   job["state"], job["id"].dump(), FormatMs(job["queue_wait_ms"]),
                   FormatMs(job["run_time_ms"]), JobNotes(job)});
    }
  }
  out += tree.Render();
  out += fmt::format("split (adds up to the wall time): {}\n", DescribeSplit(run["split"]));
  return out;
}

std::string DescribeCancelledPipeline(const json& run) {
  const std::string title =
      fmt::format("pipeline run {} ({})", run.value("id", std::int64_t{0}), run.value("name", ""));
  const std::string state = run.value("state", "");
  switch (workflow::kRunStateNames.Parse(state).value_or(workflow::RunState::kRunning)) {
    case workflow::RunState::kCancelled:
      return title + " cancelled\n";
    case workflow::RunState::kCancelling: {
      std::int64_t stopping = 0;
      const json jobs = run.value("jobs", json::object());
      for (const auto& [name, count] : jobs.items()) {
        const std::optional<model::JobState> job_state = model::ParseJobState(name);
        if (job_state && !model::IsTerminal(*job_state)) stopping += count.get<std::int64_t>();
      }
      return fmt::format("{} is being cancelled: {} {} stopping\n", title, stopping,
                         stopping == 1 ? "job" : "jobs");
    }
    case workflow::RunState::kSucceeded:
    case workflow::RunState::kFailed:
      return fmt::format("{}: its unfinished jobs were cancelled; it has {}\n", title, state);
    default:
      return fmt::format("{}: its unfinished jobs were cancelled; it is now {}\n", title, state);
  }
}

std::string OrNone(const std::string& text) { return text.empty() ? std::string(kNone) : text; }

std::string DescribeGoodput(const json& report) {
  std::string by = report.value("by", "queue");
  std::transform(by.begin(), by.end(), by.begin(), [](unsigned char c) { return std::toupper(c); });
  Table table({by, "JOBS", "SUCCEEDED", "GPU-HOURS", "PER RESULT", "RETRY LOST", "PREEMPTION LOST",
               "SPLIT"});
  auto add = [&](const std::string& name, const json& row) {
    table.AddRow({name, std::to_string(row.value("jobs", 0)),
                  std::to_string(row.value("succeeded", 0)),
                  fmt::format("{:.4f}", row.value("gpu_hours", 0.0)),
                  fmt::format("{:.4f}", row.value("gpu_hours_per_result", 0.0)),
                  fmt::format("{:.4f}", row.value("retry_lost_gpu_hours", 0.0)),
                  fmt::format("{:.4f}", row.value("preemption_lost_gpu_hours", 0.0)),
                  DescribeSplit(row.value("split", json::object()))});
  };
  for (const json& group : report.value("groups", json::array())) {
    add(OrNone(group["name"].get<std::string>()), group);
  }
  add("(total)", report.value("total", json::object()));
  return table.Render();
}

std::string FormatTimestamp(TimeMs at) {
  std::time_t seconds = static_cast<std::time_t>(at / 1000);
  std::tm local{};
  localtime_r(&seconds, &local);
  char text[32];
  std::strftime(text, sizeof(text), "%Y-%m-%d %H:%M:%S", &local);
  return text;
}

Result<TimeMs> ParseSince(const std::string& text, TimeMs now) {
  if (Result<TimeMs> at = ParseIsoTime(text)) return *at;
  if (Result<DurationMs> ago = ParseDuration(text)) return now - *ago;
  return InvalidArgument(fmt::format(
      "--since: '{}' is neither a time (2026-12-01T08:00:00Z) nor a duration ago (24h)", text));
}

std::string FormatRelative(TimeMs at, TimeMs now) {
  if (at - now >= 1000) return "in " + FormatDuration(at - now);
  if (now - at >= 1000) return FormatDuration(now - at) + " ago";
  return "now";
}

std::string FormatGpuCount(double gpus) {
  std::string text = fmt::format("{:.3f}", gpus);
  while (text.ends_with('0')) text.pop_back();
  if (text.ends_with('.')) text.pop_back();
  return text == "-0" ? "0" : text;
}

namespace {

double Number(const json& value) { return value.is_number() ? value.get<double>() : 0.0; }

}  // namespace

std::string DescribeQueues(const json& body) {
  Table table({"QUEUE", "WEIGHT", "GPU QUOTA", "GPU USED", "BORROWED", "LENT", "SHARE", "RUNNING",
               "PENDING"});
  for (const json& queue : body.value("queues", json::array())) {
    const json gpus = queue.value("gpus", json::object());
    const json nominal = gpus.value("nominal", json(nullptr));
    table.AddRow({std::string(2 * queue.value("depth", 0), ' ') + queue.value("name", ""),
                  FormatGpuCount(Number(queue["weight"])),
                  nominal.is_number() ? FormatGpuCount(nominal.get<double>()) : "-",
                  FormatGpuCount(Number(gpus["usage"])), FormatGpuCount(Number(gpus["borrowed"])),
                  FormatGpuCount(Number(gpus["lent"])),
                  fmt::format("{:.3f}", Number(queue["share"])),
                  std::to_string(queue.value("running_jobs", 0)),
                  std::to_string(queue.value("pending_jobs", 0))});
  }
  return table.Render();
}

std::string DescribeDecisions(const json& body) {
  std::string out;
  const json decisions = body.value("decisions", json::array());
  if (decisions.empty()) return "no scheduling decisions recorded for this job yet\n";
  for (const json& d : decisions) {
    const std::string kind = d.value("kind", "");
    out +=
        fmt::format("{}  {:<9}  attempt {}: {}\n", FormatTimestamp(d.value("at", std::int64_t{0})),
                    kind, d.value("attempt", 0), d.value("summary", ""));
    const std::string indent(21, ' ');
    std::vector<std::string> nodes;
    for (const json& node : d.value("nodes", json::array())) {
      if (node.is_string()) nodes.push_back(node.get<std::string>());
    }
    if (!nodes.empty()) {
      out += fmt::format("{}nodes: {}  score {:.3f}  ({} candidate node{})\n", indent,
                         fmt::join(nodes, ", "), d.value("score", 0.0), d.value("candidates", 0),
                         d.value("candidates", 0) == 1 ? "" : "s");
    }
    const std::optional<model::Decision::Kind> parsed_kind = model::ParseDecisionKind(kind);
    if (parsed_kind == model::Decision::Kind::kReserved &&
        d.value("reserved_start_at", std::int64_t{0}) > 0) {
      out += fmt::format("{}reserved from {}\n", indent,
                         FormatTimestamp(d.value("reserved_start_at", std::int64_t{0})));
    }
    if (parsed_kind == model::Decision::Kind::kEvicted &&
        d.value("preemptor", std::int64_t{0}) > 0) {
      out += fmt::format("{}preempted by job {}{}\n", indent, d["preemptor"].get<std::int64_t>(),
                         d.value("reason", "").empty() ? "" : " (" + d.value("reason", "") + ")");
    }
    for (const json& victim : d.value("victims", json::array())) {
      out += fmt::format("{}victim: job {} ({}, {} GPU{}) loses {:.0f} GPU-seconds{}\n", indent,
                         victim.value("job_id", std::int64_t{0}), victim.value("queue", ""),
                         victim.value("gpus", 0), victim.value("gpus", 0) == 1 ? "" : "s",
                         victim.value("lost_gpu_seconds", 0.0),
                         victim.value("has_checkpoint", false) ? ", resumes from its checkpoint"
                                                               : ", restarts from the beginning");
    }
  }
  return out;
}

std::string DescribeWorkRates(const json& work) {
  const std::string unit = work.value("work_unit", std::string());
  std::vector<std::string> rates;
  if (const json per_hour = work.value("per_gpu_hour", json()); per_hour.is_number()) {
    rates.push_back(fmt::format("{:.4g} {} per GPU-hour", per_hour.get<double>(), unit));
  }
  if (const json per_joule = work.value("per_joule", json()); per_joule.is_number()) {
    rates.push_back(fmt::format("{:.4g} {} per joule", per_joule.get<double>(), unit));
  }
  std::string line = fmt::format("throughput: {:g} {}", work.value("throughput", 0.0),
                                 work.value("unit", std::string()));
  if (!rates.empty()) line += fmt::format(" ({})", fmt::join(rates, ", "));
  return line;
}

}  // namespace drover::cli
