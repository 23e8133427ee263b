// The time-based replay's part of the simulation reports (report_replay.h).

#include "drover/sim/report/report_replay.h"

#include <fmt/format.h>

#include <algorithm>
#include <cstddef>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <utility>

namespace drover::sim::report_internal {
namespace {

constexpr std::size_t kMaxQueueSeries = 9;  // per-queue CDF lines besides "all jobs"

constexpr const char* kStatKeys[] = {"mean", "p50", "p95", "p99"};

// Per-job queue and JCT seconds from "job_rows", grouped by queue (all jobs under "").
struct JobTimes {
  std::map<std::string, std::vector<double>> jct;
  std::map<std::string, std::vector<double>> wait;
  std::map<std::string, std::size_t> jobs;
  bool present = false;
};

JobTimes ReadJobRows(const json* result) {
  JobTimes times;
  const json* rows = Field(result, "job_rows");
  if (rows == nullptr || !rows->is_array()) return times;
  times.present = true;
  for (const json& row : *rows) {
    if (!row.is_object()) continue;
    const std::string queue = TextAt(&row, "queue", "(none)");
    ++times.jobs[queue];
    ++times.jobs[""];
    if (auto v = NumberAt(&row, "jct_s")) {
      times.jct[queue].push_back(*v);
      times.jct[""].push_back(*v);
    }
    if (auto v = NumberAt(&row, "queue_s")) {
      times.wait[queue].push_back(*v);
      times.wait[""].push_back(*v);
    }
  }
  return times;
}

// Queues by job count (largest first, then by name), at most kMaxQueueSeries.
std::vector<std::string> TopQueues(const JobTimes& times, std::size_t* left_out) {
  std::vector<std::pair<std::size_t, std::string>> order;
  for (const auto& [queue, n] : times.jobs) {
    if (!queue.empty()) order.push_back({n, queue});
  }
  std::sort(order.begin(), order.end(), [](const auto& a, const auto& b) {
    return a.first != b.first ? a.first > b.first : a.second < b.second;
  });
  std::vector<std::string> out;
  for (std::size_t i = 0; i < order.size() && i < kMaxQueueSeries; ++i) {
    out.push_back(order[i].second);
  }
  *left_out = order.size() - out.size();
  return out;
}

plot::Chart CdfChart(const std::string& what, const std::string& title) {
  plot::Chart chart;
  chart.title = title;
  chart.x_label = what + " (seconds)";
  chart.y_label = "jobs (%)";
  chart.log_x = true;
  chart.y_min = 0;
  chart.y_max = 100;
  return chart;
}

// A time axis in a readable unit for spans up to `max_seconds`: the divisor and its name.
std::pair<double, std::string> TimeUnit(double max_seconds) {
  if (max_seconds > 3 * 86400) return {86400, "days"};
  if (max_seconds > 3 * 3600) return {3600, "hours"};
  if (max_seconds > 3 * 60) return {60, "minutes"};
  return {1, "seconds"};
}

// Over-time lines (t in seconds) on one chart, the time axis in a readable unit.
void TimeChart(Page& page, const std::string& title, const std::string& y_label,
               std::vector<plot::Series> series, std::optional<double> y_max) {
  double max_t = 0;
  for (const auto& s : series) {
    for (const Point& p : s.points) max_t = std::max(max_t, p.x);
  }
  const auto [divisor, unit] = TimeUnit(max_t);
  for (auto& s : series) {
    for (Point& p : s.points) p.x /= divisor;
  }
  plot::Chart chart;
  chart.title = title;
  chart.x_label = "simulated time (" + unit + ")";
  chart.y_label = y_label;
  chart.x_min = 0;
  chart.y_min = 0;
  chart.y_max = y_max;
  page.Chart(chart, series);
}

std::vector<Cell> StatCells(const json* stats) {
  std::vector<Cell> cells;
  for (const char* key : kStatKeys) cells.push_back(Seconds(NumberAt(stats, key)));
  return cells;
}

// Rows per result: seconds in each lifecycle phase and its share of their sum.
Table LifecycleTable(const std::vector<Labeled>& results, bool with_policy) {
  Table table;
  if (with_policy) table.header.push_back("policy");
  for (const std::string phase : kLifecycle) {
    table.header.push_back(phase + " (s)");
    table.header.push_back(phase + " (%)");
  }
  for (const Labeled& r : results) {
    const json* split = Field(r.result, "lifecycle_seconds");
    double total = 0;
    for (const std::string phase : kLifecycle) total += NumberAt(split, phase).value_or(0);
    std::vector<Cell> row;
    if (with_policy) row.push_back(Plain(r.label));
    for (const std::string phase : kLifecycle) {
      const auto v = NumberAt(split, phase);
      row.push_back(Seconds(v));
      row.push_back(Percent(v && total > 0 ? std::optional(100 * *v / total) : std::nullopt));
    }
    table.rows.push_back(std::move(row));
  }
  return table;
}

// Rows per result: the headline numbers of a replay.
Table ReplaySummaryTable(const std::vector<Labeled>& results) {
  Table table{{"policy", "jobs", "finished", "unfinished", "JCT mean (s)", "JCT p50", "JCT p95",
               "JCT p99", "queue mean (s)", "queue p50", "queue p95", "queue p99", "makespan (s)",
               "preemptions", "lost GPU-h", "GPU-h allocated"},
              {}};
  for (const Labeled& r : results) {
    std::vector<Cell> row = {Plain(r.label), Num(Count(NumberAt(r.result, "jobs"))),
                             Num(Count(NumberAt(r.result, "finished"))),
                             Num(Count(NumberAt(r.result, "unfinished")))};
    for (Cell& c : StatCells(Field(r.result, "jct_seconds"))) row.push_back(std::move(c));
    for (Cell& c : StatCells(Field(r.result, "queue_seconds"))) row.push_back(std::move(c));
    row.push_back(Seconds(NumberAt(r.result, "makespan_seconds")));
    row.push_back(Num(Count(NumberAt(r.result, "preemptions"))));
    row.push_back(Num(Fixed(NumberAt(r.result, "lost_gpu_hours"), 2)));
    row.push_back(Num(Fixed(NumberAt(r.result, "gpu_hours_allocated"), 2)));
    table.rows.push_back(std::move(row));
  }
  return table;
}

void SingleReplayCdfs(Page& page, const json* r) {
  const JobTimes times = ReadJobRows(r);
  if (!times.present) {
    page.Note("No \"job_rows\" in the result: the JCT and queue-time CDFs need per-job rows.");
    return;
  }
  std::size_t left_out = 0;
  const std::vector<std::string> queues = TopQueues(times, &left_out);
  struct Kind {
    const char* what;
    const char* title;
    const std::map<std::string, std::vector<double>>* by_queue;
  };
  for (const Kind& kind : {Kind{"JCT", "JCT CDF per queue", &times.jct},
                           Kind{"queue time", "Queue-time CDF per queue", &times.wait}}) {
    auto values = [&](const std::string& queue) {
      auto it = kind.by_queue->find(queue);
      return it == kind.by_queue->end() ? std::vector<double>{} : it->second;
    };
    std::vector<plot::Series> series;
    // One queue: its line would repeat the line of all jobs.
    const bool one_queue = queues.size() == 1 && left_out == 0;
    series.push_back({one_queue ? "all jobs (queue " + queues[0] + ")" : "all jobs",
                      plot::EmpiricalCdf(values("")), false, 0});
    for (std::size_t i = 0; i < queues.size() && !one_queue; ++i) {
      series.push_back(
          {queues[i], plot::EmpiricalCdf(values(queues[i])), false, static_cast<int>(i + 1)});
    }
    page.Chart(CdfChart(kind.what, kind.title), series);
  }
  if (left_out > 0) {
    page.Note(fmt::format("{} smaller queues are not drawn (only the {} largest).", left_out,
                          queues.size()));
  }
}

void SingleReplayOverTime(Page& page, const json* r) {
  std::vector<Point> allocation = PairSeries(Field(r, "gpu_allocation_over_time"));
  if (allocation.empty()) page.Note("No \"gpu_allocation_over_time\" in the result.");
  TimeChart(page, "GPU allocation over time", "GPUs allocated (% of capacity)",
            {{"allocated", std::move(allocation), false, 0}}, 100.0);
  const json* shares = Field(r, "queue_share_over_time");
  if (!IsObject(shares) || shares->empty()) {
    page.Note("No \"queue_share_over_time\" in the result.");
    return;
  }
  std::vector<plot::Series> series;
  for (const auto& item : shares->items()) {
    series.push_back(
        {item.key(), PairSeries(&item.value()), false, static_cast<int>(series.size())});
  }
  TimeChart(page, "Share of the GPUs per queue over time", "share of allocated GPUs (%)",
            std::move(series), 100.0);
}

// "60 (58 finished, 2 unfinished, 1 timed out, 1 rejected)"; the last two when reported.
std::string JobsLine(const json* r) {
  std::string line = fmt::format("{} ({} finished, {} unfinished", Count(NumberAt(r, "jobs")),
                                 Count(NumberAt(r, "finished")), Count(NumberAt(r, "unfinished")));
  if (auto v = NumberAt(r, "timed_out")) line += fmt::format(", {} timed out", Count(v));
  if (auto v = NumberAt(r, "rejected")) line += fmt::format(", {} rejected", Count(v));
  return line + ")";
}

}  // namespace

std::string ClusterLine(const json* r) {
  if (auto per_node = NumberAt(r, "gpus_per_node")) {
    return fmt::format("{} nodes x {} GPUs ({} GPUs)", Count(NumberAt(r, "nodes")), Count(per_node),
                       Count(NumberAt(r, "total_gpus")));
  }
  return fmt::format("{} nodes, {} GPUs", Count(NumberAt(r, "nodes")),
                     Count(NumberAt(r, "total_gpus")));
}

std::string TraceLine(const json* r) {
  return fmt::format("{}: {}, {} jobs", TextAt(r, "trace", "unnamed trace"), ClusterLine(r),
                     Count(NumberAt(r, "jobs")));
}

Table GpuHoursTable(const std::vector<Labeled>& results) {
  Table table{{"policy"}, {}};
  for (const GpuHoursColumn& column : kGpuHoursColumns) table.header.push_back(column.header);
  table.header.push_back("per success");
  for (const Labeled& r : results) {
    const json* by_result = Field(r.result, "gpu_hours_by_result");
    std::vector<Cell> row = {Plain(r.label)};
    for (const GpuHoursColumn& column : kGpuHoursColumns) {
      row.push_back(Num(Fixed(NumberAt(by_result, column.key), 2)));
    }
    row.push_back(Num(Fixed(NumberAt(r.result, "gpu_hours_per_result"), 2)));
    table.rows.push_back(std::move(row));
  }
  return table;
}

Table QueueWaitTable(const std::vector<Labeled>& results, const std::vector<std::string>& keys) {
  std::set<std::string> queues;
  for (const Labeled& r : results) {
    if (const json* per_queue = Field(r.result, "per_queue"); IsObject(per_queue)) {
      for (const auto& item : per_queue->items()) queues.insert(item.key());
    }
  }
  Table table{{"queue"}, {}};
  for (const Labeled& r : results) {
    for (const std::string& key : keys) table.header.push_back(r.label + " " + key + " (s)");
  }
  for (const std::string& queue : queues) {
    std::vector<Cell> row = {Plain(queue)};
    for (const Labeled& r : results) {
      const json* stats = Field(Field(Field(r.result, "per_queue"), queue), "queue_seconds");
      for (const std::string& key : keys) row.push_back(Seconds(NumberAt(stats, key)));
    }
    table.rows.push_back(std::move(row));
  }
  return table;
}

// Rows: all jobs, then each queue of "per_queue": jobs, JCT and queue-time statistics.
Table QueueStatsTable(const json* r) {
  Table table{{"queue", "jobs", "JCT mean (s)", "JCT p50", "JCT p95", "JCT p99", "queue mean (s)",
               "queue p50", "queue p95", "queue p99"},
              {}};
  auto add = [&](const std::string& name, std::optional<double> jobs, const json* stats) {
    std::vector<Cell> row = {Plain(name), Num(Count(jobs))};
    for (Cell& c : StatCells(Field(stats, "jct_seconds"))) row.push_back(std::move(c));
    for (Cell& c : StatCells(Field(stats, "queue_seconds"))) row.push_back(std::move(c));
    table.rows.push_back(std::move(row));
  };
  add("all", NumberAt(r, "jobs"), r);
  if (const json* per_queue = Field(r, "per_queue"); IsObject(per_queue)) {
    for (const auto& item : per_queue->items()) {
      add(item.key(), NumberAt(&item.value(), "jobs"), &item.value());
    }
  }
  return table;
}

void ReplayPage(Page& page, const json& result) {
  const std::vector<Labeled> results = LabelResults({&result});
  const json* r = &result;
  page.Heading(1, "Replay: " + results[0].label + " on " + TraceLine(r));
  std::vector<std::pair<std::string, Cell>> facts = {
      {"policy", Plain(results[0].label)},
      {"trace", Plain(TextAt(r, "trace", "(not named in the result)"))},
      {"cluster", Plain(ClusterLine(r))},
      {"jobs", Plain(JobsLine(r))},
      {"makespan (s)", Seconds(NumberAt(r, "makespan_seconds"))},
      {"preemptions", Num(Count(NumberAt(r, "preemptions")))},
      {"lost GPU-hours", Num(Fixed(NumberAt(r, "lost_gpu_hours"), 2))},
      {"GPU-hours allocated", Num(Fixed(NumberAt(r, "gpu_hours_allocated"), 2))},
      {"GPU-hours per result", Num(Fixed(NumberAt(r, "gpu_hours_per_result"), 2))},
      {"events", Num(Count(NumberAt(r, "events")))},
  };
  if (auto wall = NumberAt(r, "wall_seconds")) facts.push_back({"wall time (s)", Seconds(wall)});
  page.Facts(facts);
  page.Heading(2, "JCT and queue time");
  page.AddTable(QueueStatsTable(r));
  SingleReplayCdfs(page, r);
  page.Heading(2, "GPU-hours by result");
  page.AddTable(GpuHoursTable(results));
  page.Heading(2, "Lifecycle split");
  if (!IsObject(Field(r, "lifecycle_seconds"))) {
    page.Note("No \"lifecycle_seconds\" in the result.");
  }
  page.AddTable(LifecycleTable(results, false));
  page.Heading(2, "Allocation over time");
  SingleReplayOverTime(page, r);
}

// Several replays on the same charts and tables.
void ReplayComparison(Page& page, const std::vector<Labeled>& results) {
  std::set<std::string> traces;
  for (const Labeled& r : results) traces.insert(TraceLine(r.result));
  for (const std::string& trace : traces) page.Paragraph("Trace: " + trace, "trace");
  page.AddTable(ReplaySummaryTable(results));
  std::vector<plot::Series> jct, wait, allocation;
  std::vector<std::string> no_rows;
  for (std::size_t i = 0; i < results.size(); ++i) {
    const JobTimes times = ReadJobRows(results[i].result);
    if (!times.present) no_rows.push_back(results[i].label);
    auto all = [](const std::map<std::string, std::vector<double>>& m) {
      auto it = m.find("");
      return it == m.end() ? std::vector<double>{} : it->second;
    };
    const int color = static_cast<int>(i);
    jct.push_back({results[i].label, plot::EmpiricalCdf(all(times.jct)), false, color});
    wait.push_back({results[i].label, plot::EmpiricalCdf(all(times.wait)), false, color});
    allocation.push_back({results[i].label,
                          PairSeries(Field(results[i].result, "gpu_allocation_over_time")), false,
                          color});
  }
  page.Heading(2, "Distributions");
  page.Chart(CdfChart("JCT", "JCT CDF per policy"), jct);
  page.Chart(CdfChart("queue time", "Queue-time CDF per policy"), wait);
  for (const std::string& label : no_rows) {
    page.Note(label + ": no \"job_rows\" in the result; its CDFs are empty.");
  }
  page.Heading(2, "Allocation over time");
  TimeChart(page, "GPU allocation over time per policy", "GPUs allocated (% of capacity)",
            std::move(allocation), 100.0);

  if (Table waits = QueueWaitTable(results, {"mean", "p95", "p99"}); !waits.rows.empty()) {
    page.Heading(2, "Queue time per queue");
    page.AddTable(waits);
  }
  page.Heading(2, "GPU-hours by result");
  page.AddTable(GpuHoursTable(results));
  page.Heading(2, "Lifecycle split");
  page.AddTable(LifecycleTable(results, true));
}

}  // namespace drover::sim::report_internal
