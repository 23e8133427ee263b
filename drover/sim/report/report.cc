#include "drover/sim/report/report.h"

#include <fmt/format.h>

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstddef>
#include <exception>
#include <map>
#include <optional>
#include <set>
#include <string_view>
#include <utility>
#include <vector>

#include "drover/sim/report/svg_plot.h"

namespace drover::sim {
namespace {

using nlohmann::json;
using plot::Point;

constexpr int kDemandLevels[] = {100, 110, 120, 130};
constexpr std::size_t kMaxQueueSeries = 9;     // per-queue CDF lines besides "all jobs"
constexpr std::size_t kMaxTimePoints = 2000;   // per over-time line
constexpr std::size_t kMaxTextQueueRows = 12;  // per-queue rows in the text summary
constexpr std::size_t kMaxTextTeamRows = 12;   // per-team rows in the text summary

// ---------------------------------------------------------------------------------------------
// Reading JSON without throwing: every accessor takes a possibly-null pointer and answers
// nullptr / nullopt / the fallback for anything missing or of the wrong type.

const json* Field(const json* object, const std::string& key) {
  if (object == nullptr || !object->is_object()) return nullptr;
  auto it = object->find(key);
  return it == object->end() ? nullptr : &*it;
}

std::optional<double> Number(const json* value) {
  if (value == nullptr || !value->is_number()) return std::nullopt;
  const double v = value->get<double>();
  if (!std::isfinite(v)) return std::nullopt;
  return v;
}

std::optional<double> NumberAt(const json* object, const std::string& key) {
  return Number(Field(object, key));
}

std::string TextAt(const json* object, const std::string& key, std::string fallback = "") {
  const json* v = Field(object, key);
  if (v != nullptr && v->is_string()) return v->get<std::string>();
  return fallback;
}

bool IsObject(const json* value) { return value != nullptr && value->is_object(); }

// A "*_at" map ({"0": 0.25, ..., "130": 95.4}) as points sorted by demand; keys that are not
// integers and values that are not numbers are skipped.
std::vector<Point> AtCurve(const json* map) {
  std::vector<Point> points;
  if (!IsObject(map)) return points;
  for (const auto& item : map->items()) {
    const std::string& key = item.key();
    int demand = 0;
    const auto [end, ec] = std::from_chars(key.data(), key.data() + key.size(), demand);
    if (ec != std::errc() || end != key.data() + key.size()) continue;
    const std::optional<double> y = Number(&item.value());
    if (!y) continue;
    points.push_back({static_cast<double>(demand), *y});
  }
  std::sort(points.begin(), points.end(), [](const Point& a, const Point& b) { return a.x < b.x; });
  return points;
}

std::optional<double> AtValue(const json* map, int demand) {
  return NumberAt(map, std::to_string(demand));
}

// [[t, v], ...] as points, thinned to at most kMaxTimePoints (every k-th and the last).
std::vector<Point> PairSeries(const json* array) {
  std::vector<Point> points;
  if (array == nullptr || !array->is_array()) return points;
  for (const json& pair : *array) {
    if (!pair.is_array() || pair.size() < 2) continue;
    const std::optional<double> x = Number(&pair[0]);
    const std::optional<double> y = Number(&pair[1]);
    if (x && y) points.push_back({*x, *y});
  }
  if (points.size() > kMaxTimePoints) {
    const std::size_t stride = (points.size() + kMaxTimePoints - 1) / kMaxTimePoints;
    std::vector<Point> thin;
    for (std::size_t i = 0; i < points.size(); i += stride) thin.push_back(points[i]);
    if (thin.back().x != points.back().x) thin.push_back(points.back());
    points = std::move(thin);
  }
  return points;
}

// ---------------------------------------------------------------------------------------------
// Formatting.

std::string Fixed(std::optional<double> v, int decimals) {
  if (!v) return "n/a";
  std::string s = fmt::format("{:.{}f}", *v, decimals);
  if (s[0] == '-' && s.find_first_not_of("-0.") == std::string::npos) s.erase(0, 1);
  return s;
}

std::string SignedFixed(std::optional<double> v, int decimals) {
  if (!v) return "n/a";
  std::string s = Fixed(v, decimals);
  return s[0] == '-' ? s : "+" + s;
}

// A count: no decimals when whole.
std::string Count(std::optional<double> v) {
  if (!v) return "n/a";
  return *v == std::floor(*v) && std::abs(*v) < 1e15 ? fmt::format("{}", std::llround(*v))
                                                     : Fixed(v, 2);
}

// Seconds for people: "45.2s", "3m12s", "2h05m", "1d03h".
std::string Human(std::optional<double> seconds) {
  if (!seconds) return "n/a";
  if (*seconds < 0) return "-" + Human(-*seconds);
  if (*seconds < 59.95) return fmt::format("{:.1f}s", *seconds);
  const long long s = std::llround(*seconds);
  if (s < 3600) return fmt::format("{}m{:02}s", s / 60, s % 60);
  const long long m = (s + 30) / 60;
  if (m < 24 * 60) return fmt::format("{}h{:02}m", m / 60, m % 60);
  const long long h = (m + 30) / 60;
  return fmt::format("{}d{:02}h", h / 24, h % 24);
}

// "42..51 (10 seeds)", "42", "1, 5, 9" for a JSON array of seeds.
std::string Seeds(const json* seeds) {
  if (seeds == nullptr || !seeds->is_array() || seeds->empty()) return "n/a";
  std::vector<long long> values;
  for (const json& s : *seeds) {
    if (!s.is_number_integer()) return fmt::format("{} seeds", seeds->size());
    values.push_back(s.get<long long>());
  }
  if (values.size() == 1) return fmt::format("{}", values[0]);
  bool consecutive = true;
  for (std::size_t i = 1; i < values.size(); ++i) {
    consecutive = consecutive && values[i] == values[i - 1] + 1;
  }
  if (consecutive) {
    return fmt::format("{}..{} ({} seeds)", values.front(), values.back(), values.size());
  }
  std::string out;
  for (std::size_t i = 0; i < values.size() && i < 8; ++i) {
    out += (i ? ", " : "") + std::to_string(values[i]);
  }
  if (values.size() > 8) out += fmt::format(", ... ({} seeds)", values.size());
  return out;
}

// Display width of UTF-8 text: one per code point.
std::size_t Width(std::string_view text) {
  std::size_t n = 0;
  for (char c : text) n += (static_cast<unsigned char>(c) & 0xC0) != 0x80;
  return n;
}

// ---------------------------------------------------------------------------------------------
// Tables, rendered either as HTML or as aligned text.

struct Cell {
  std::string text;   // what HTML shows (and text, unless `human` is set)
  std::string human;  // the people's form, shown by text; HTML adds it under `text` if `aside`
  bool aside = false;
  bool number = false;
};

Cell Plain(std::string text) { return Cell{std::move(text), "", false, false}; }
Cell Num(std::string text) { return Cell{std::move(text), "", false, true}; }
Cell Percent(std::optional<double> v) { return Num(Fixed(v, 2)); }
Cell SignedPoints(std::optional<double> v) { return Num(SignedFixed(v, 2)); }
Cell Seconds(std::optional<double> v) {
  return Cell{Fixed(v, 1), Human(v), v && std::abs(*v) >= 60, true};
}

struct Table {
  std::vector<std::string> header;
  std::vector<std::vector<Cell>> rows;
};

std::string HtmlEscape(std::string_view text) { return plot::EscapeXml(text); }

// With `header` false the header row is left out (a list of facts).
std::string RenderHtmlTable(const Table& table, bool header = true) {
  std::string out = "<table>\n";
  if (header) {
    out += "<thead><tr>";
    for (const std::string& h : table.header) out += "<th>" + HtmlEscape(h) + "</th>";
    out += "</tr></thead>\n";
  }
  out += "<tbody>\n";
  for (const auto& row : table.rows) {
    out += "<tr>";
    for (const Cell& c : row) {
      out += c.number ? "<td class=\"num\">" : "<td>";
      out += HtmlEscape(c.text);
      if (c.aside) out += "<span class=\"human\">" + HtmlEscape(c.human) + "</span>";
      out += "</td>";
    }
    out += "</tr>\n";
  }
  out += "</tbody>\n</table>\n";
  return out;
}

std::string RenderTextTable(const Table& table) {
  auto shown = [](const Cell& c) -> const std::string& {
    return c.human.empty() ? c.text : c.human;
  };
  std::vector<std::size_t> widths(table.header.size(), 0);
  for (std::size_t i = 0; i < table.header.size(); ++i) widths[i] = Width(table.header[i]);
  for (const auto& row : table.rows) {
    for (std::size_t i = 0; i < row.size() && i < widths.size(); ++i) {
      widths[i] = std::max(widths[i], Width(shown(row[i])));
    }
  }
  auto line = [&](const std::vector<std::string>& cells, const std::vector<bool>& right) {
    std::string out;
    for (std::size_t i = 0; i < cells.size() && i < widths.size(); ++i) {
      const std::string pad(widths[i] - Width(cells[i]), ' ');
      if (i) out += "  ";
      out += right[i] ? pad + cells[i] : cells[i] + (i + 1 == cells.size() ? "" : pad);
    }
    while (!out.empty() && out.back() == ' ') out.pop_back();
    return out + "\n";
  };
  std::vector<bool> right(widths.size(), false);
  for (std::size_t i = 1; i < right.size(); ++i) right[i] = true;
  std::string out = line(table.header, right);
  for (const auto& row : table.rows) {
    std::vector<std::string> cells;
    for (const Cell& c : row) cells.push_back(shown(c));
    out += line(cells, right);
  }
  return out;
}

// ---------------------------------------------------------------------------------------------
// The HTML page.

constexpr std::string_view kCss =
    "body{font-family:sans-serif;margin:24px;color:#222;max-width:1120px}"
    "h1{font-size:22px;margin-bottom:4px}"
    "h2{font-size:18px;margin-top:32px;border-bottom:1px solid #ddd;padding-bottom:4px}"
    "h3{font-size:15px;margin-top:20px}"
    "table{border-collapse:collapse;margin:8px 0 16px}"
    "th,td{border:1px solid #ddd;padding:3px 8px;font-size:13px;vertical-align:top}"
    "th{background:#f4f4f4;text-align:left}"
    "td.num{text-align:right;font-variant-numeric:tabular-nums}"
    ".human{display:block;color:#888;font-size:11px}"
    ".note{color:#7a4f00;background:#fff8e6;padding:4px 8px;border-left:3px solid #e0a000}"
    ".meta{color:#555}"
    "svg.chart{display:block;margin:8px 0 20px;background:#fff}";

class Page {
 public:
  void Heading(int level, std::string_view text) {
    body_ += fmt::format("<h{0}>{1}</h{0}>\n", level, HtmlEscape(text));
  }
  void Paragraph(std::string_view text, std::string_view css_class = "") {
    body_ += css_class.empty() ? "<p>" : fmt::format("<p class=\"{}\">", css_class);
    body_ += HtmlEscape(text) + "</p>\n";
  }
  void Note(std::string_view text) { Paragraph(text, "note"); }
  void AddTable(const Table& table) { body_ += RenderHtmlTable(table); }
  void Chart(const plot::Chart& chart, const std::vector<plot::Series>& series) {
    body_ += plot::RenderLineChart(chart, series);
  }
  // Two columns: name, value.
  void Facts(const std::vector<std::pair<std::string, Cell>>& facts) {
    Table table{{"", ""}, {}};
    for (const auto& [name, value] : facts) table.rows.push_back({Plain(name), value});
    body_ += RenderHtmlTable(table, /*header=*/false);
  }

  // The whole document. "://" is written as "&#58;//" so that no text taken from the result
  // reads as a URL: the page links to nothing.
  std::string Finish(std::string_view title) const {
    std::string page = fmt::format(
        "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n"
        "<title>{}</title>\n<style>{}</style>\n</head>\n<body>\n{}"
        "<p class=\"meta\">Generated by drover simulate from the result JSON.</p>\n"
        "</body>\n</html>\n",
        HtmlEscape(title), kCss, body_);
    std::string out;
    out.reserve(page.size());
    for (std::size_t i = 0; i < page.size(); ++i) {
      if (page.compare(i, 3, "://") == 0) {
        out += "&#58;";
        continue;
      }
      out += page[i];
    }
    return out;
  }

 private:
  std::string body_;
};

// ---------------------------------------------------------------------------------------------
// Results with their display labels.

struct Labeled {
  std::string label;
  const json* result = nullptr;
};

// Each result labeled by its policy (or "result N"); repeated labels get " #2", " #3".
std::vector<Labeled> LabelResults(const std::vector<const json*>& results,
                                  std::string_view prefix_before = "") {
  std::vector<Labeled> out;
  std::map<std::string, int> seen;
  for (std::size_t i = 0; i < results.size(); ++i) {
    std::string label = TextAt(results[i], "policy");
    if (label.empty()) label = TextAt(results[i], "policy_name");
    if (label.empty()) label = fmt::format("result {}", i + 1);
    label = std::string(prefix_before) + label;
    const int n = ++seen[label];
    if (n > 1) label += fmt::format(" #{}", n);
    out.push_back({label, results[i]});
  }
  return out;
}

// ---------------------------------------------------------------------------------------------
// FGD.

std::string PublishedLabel(const json* published) {
  return TextAt(published, "policy", "FGD paper") + " (published)";
}

// One chart of `key` ("allocation_ratio_at", ...) against demand, each result solid in its
// color and its published curve (when the result carries one under the same key) dashed in
// the same color; a published curve shared by several results is drawn once.
void FgdCurveChart(Page& page, const std::vector<Labeled>& results, const std::string& key,
                   const std::string& title, const std::string& y_label,
                   std::optional<double> y_max) {
  std::vector<plot::Series> series;
  std::vector<std::string> missing;
  std::set<std::string> published_seen;
  for (std::size_t i = 0; i < results.size(); ++i) {
    std::vector<Point> curve = AtCurve(Field(results[i].result, key));
    if (curve.empty()) missing.push_back(results[i].label);
    series.push_back({results[i].label, std::move(curve), false, static_cast<int>(i)});
  }
  for (std::size_t i = 0; i < results.size(); ++i) {
    const json* published = Field(results[i].result, "published");
    std::vector<Point> curve = AtCurve(Field(published, key));
    if (curve.empty()) continue;
    const std::string label = PublishedLabel(published);
    if (!published_seen.insert(label).second) continue;
    series.push_back({label, std::move(curve), true, static_cast<int>(i)});
  }
  plot::Chart chart;
  chart.title = title;
  chart.x_label = "arrived GPU demand (% of capacity)";
  chart.y_label = y_label;
  chart.x_min = 0;
  chart.x_max = 130;
  chart.y_min = 0;
  chart.y_max = y_max;
  page.Chart(chart, series);
  for (const std::string& label : missing) {
    page.Note(fmt::format("{}: no \"{}\" in the result; its curve is empty.", label, key));
  }
}

// Rows per result and demand level: ours, published and the difference, for allocation and
// fragmentation.
Table FgdLevelTable(const std::vector<Labeled>& results, bool with_policy) {
  Table table;
  if (with_policy) table.header.push_back("policy");
  for (const char* h : {"demand (%)", "allocation (%)", "published (%)", "diff (pp)",
                        "fragmentation (%)", "published (%)", "diff (pp)"}) {
    table.header.push_back(h);
  }
  for (const Labeled& r : results) {
    const json* published = Field(r.result, "published");
    for (int level : kDemandLevels) {
      const auto ours = AtValue(Field(r.result, "allocation_ratio_at"), level);
      const auto theirs = AtValue(Field(published, "allocation_ratio_at"), level);
      const auto frag = AtValue(Field(r.result, "fragmentation_at"), level);
      const auto frag_theirs = AtValue(Field(published, "fragmentation_at"), level);
      std::vector<Cell> row;
      if (with_policy) row.push_back(Plain(r.label));
      row.push_back(Num(std::to_string(level)));
      row.push_back(Percent(ours));
      row.push_back(Percent(theirs));
      row.push_back(SignedPoints(ours && theirs ? std::optional(*ours - *theirs) : std::nullopt));
      row.push_back(Percent(frag));
      row.push_back(Percent(frag_theirs));
      row.push_back(
          SignedPoints(frag && frag_theirs ? std::optional(*frag - *frag_theirs) : std::nullopt));
      table.rows.push_back(std::move(row));
    }
  }
  return table;
}

std::string PodsLine(const json* r) {
  return fmt::format("{} arrived, {} placed, {} failed", Count(NumberAt(r, "pods_arrived")),
                     Count(NumberAt(r, "pods_placed")), Count(NumberAt(r, "pods_failed")));
}

void FgdCharts(Page& page, const std::vector<Labeled>& results) {
  FgdCurveChart(page, results, "allocation_ratio_at", "GPU allocation ratio vs arrived GPU demand",
                "GPU allocation ratio (%)", 100.0);
  FgdCurveChart(page, results, "fragmentation_at", "GPU fragmentation vs arrived GPU demand",
                "fragmented GPUs (% of capacity)", std::nullopt);
  bool any_ratio = false;
  for (const Labeled& r : results) {
    any_ratio = any_ratio || !AtCurve(Field(r.result, "fragmentation_ratio_at")).empty();
  }
  if (any_ratio) {
    FgdCurveChart(page, results, "fragmentation_ratio_at",
                  "GPU fragmentation ratio vs arrived GPU demand",
                  "fragmented GPUs (% of idle GPUs)", std::nullopt);
  }
}

void FgdPage(Page& page, const json& result) {
  const std::vector<Labeled> results = LabelResults({&result});
  const json* r = &result;
  page.Heading(1, "FGD placement experiment: " + results[0].label);
  std::vector<std::pair<std::string, Cell>> facts = {
      {"policy", Plain(results[0].label)},
      {"workload", Plain(TextAt(r, "workload", "n/a"))},
      {"nodes", Num(Count(NumberAt(r, "nodes")))},
      {"GPUs", Num(Count(NumberAt(r, "total_gpus")))},
      {"seeds", Plain(Seeds(Field(r, "seeds")))},
      {"inflate", Num(Fixed(NumberAt(r, "inflate"), 2))},
      {"pods", Plain(PodsLine(r))},
  };
  if (const json* published = Field(r, "published"); IsObject(published)) {
    facts.push_back({"published", Plain(fmt::format("{} over {} seeds", PublishedLabel(published),
                                                    Count(NumberAt(published, "seeds"))))});
  }
  if (auto wall = NumberAt(r, "wall_seconds")) facts.push_back({"wall time (s)", Seconds(wall)});
  page.Facts(facts);
  if (!IsObject(Field(r, "published"))) {
    page.Note("No published curves in this result (run with --published DIR to compare).");
  }
  page.Heading(2, "Allocation and fragmentation");
  FgdCharts(page, results);
  page.Heading(2, "Against the published results");
  page.AddTable(FgdLevelTable(results, false));

  const json* runs = Field(r, "runs");
  if (runs != nullptr && runs->is_array() && !runs->empty()) {
    page.Heading(2, "Per seed");
    Table table{{"seed", "pods placed", "pods failed"}, {}};
    for (int level : kDemandLevels) table.header.push_back(fmt::format("allocation @{}%", level));
    for (const json& run : *runs) {
      std::vector<Cell> row;
      const json* seeds = Field(&run, "seeds");
      const json* seed = Field(&run, "seed");
      row.push_back(Num(seed ? Count(Number(seed)) : Seeds(seeds)));
      row.push_back(Num(Count(NumberAt(&run, "pods_placed"))));
      row.push_back(Num(Count(NumberAt(&run, "pods_failed"))));
      for (int level : kDemandLevels) {
        row.push_back(Percent(AtValue(Field(&run, "allocation_ratio_at"), level)));
      }
      table.rows.push_back(std::move(row));
    }
    page.AddTable(table);
  }
}

Table FgdCompareTable(const std::vector<Labeled>& results) {
  Table table{{"policy", "workload", "seeds", "inflate", "pods arrived", "placed", "failed"}, {}};
  for (const Labeled& r : results) {
    table.rows.push_back({Plain(r.label), Plain(TextAt(r.result, "workload", "n/a")),
                          Plain(Seeds(Field(r.result, "seeds"))),
                          Num(Fixed(NumberAt(r.result, "inflate"), 2)),
                          Num(Count(NumberAt(r.result, "pods_arrived"))),
                          Num(Count(NumberAt(r.result, "pods_placed"))),
                          Num(Count(NumberAt(r.result, "pods_failed")))});
  }
  return table;
}

// ---------------------------------------------------------------------------------------------
// Replay.

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
  chart.x_label = what + " (seconds, log scale)";
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

constexpr const char* kLifecycle[] = {"queue", "placement", "startup", "run"};

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

void ReplayPage(Page& page, const json& result) {
  const std::vector<Labeled> results = LabelResults({&result});
  const json* r = &result;
  page.Heading(1, "Replay: " + results[0].label);
  std::vector<std::pair<std::string, Cell>> facts = {
      {"policy", Plain(results[0].label)},
      {"cluster", Plain(fmt::format("{} nodes, {} GPUs", Count(NumberAt(r, "nodes")),
                                    Count(NumberAt(r, "total_gpus"))))},
      {"jobs", Plain(JobsLine(r))},
      {"makespan (s)", Seconds(NumberAt(r, "makespan_seconds"))},
      {"preemptions", Num(Count(NumberAt(r, "preemptions")))},
      {"lost GPU-hours", Num(Fixed(NumberAt(r, "lost_gpu_hours"), 2))},
      {"GPU-hours allocated", Num(Fixed(NumberAt(r, "gpu_hours_allocated"), 2))},
      {"events", Num(Count(NumberAt(r, "events")))},
  };
  if (auto wall = NumberAt(r, "wall_seconds")) facts.push_back({"wall time (s)", Seconds(wall)});
  page.Facts(facts);
  page.Heading(2, "JCT and queue time");
  page.AddTable(QueueStatsTable(r));
  SingleReplayCdfs(page, r);
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

  // Per-queue waits side by side.
  std::set<std::string> queues;
  for (const Labeled& r : results) {
    if (const json* per_queue = Field(r.result, "per_queue"); IsObject(per_queue)) {
      for (const auto& item : per_queue->items()) queues.insert(item.key());
    }
  }
  if (!queues.empty()) {
    page.Heading(2, "Queue time per queue");
    Table table{{"queue"}, {}};
    for (const Labeled& r : results) {
      table.header.push_back(r.label + " mean (s)");
      table.header.push_back(r.label + " p95 (s)");
    }
    for (const std::string& queue : queues) {
      std::vector<Cell> row = {Plain(queue)};
      for (const Labeled& r : results) {
        const json* stats = Field(Field(Field(r.result, "per_queue"), queue), "queue_seconds");
        row.push_back(Seconds(NumberAt(stats, "mean")));
        row.push_back(Seconds(NumberAt(stats, "p95")));
      }
      table.rows.push_back(std::move(row));
    }
    page.AddTable(table);
  }
  page.Heading(2, "Lifecycle split");
  page.AddTable(LifecycleTable(results, true));
}

// ---------------------------------------------------------------------------------------------
// Compare and what-if.

// The results of a "compare" split by kind; anything else is described in `notes`.
struct Grouped {
  std::vector<const json*> fgd;
  std::vector<const json*> replay;
  std::vector<std::string> notes;
};

Grouped GroupResults(const json& compare) {
  Grouped grouped;
  const json* results = Field(&compare, "results");
  if (results == nullptr || !results->is_array()) {
    grouped.notes.push_back("No \"results\" array in the compare result.");
    return grouped;
  }
  for (std::size_t i = 0; i < results->size(); ++i) {
    const json* r = &(*results)[i];
    const std::string kind = TextAt(r, "experiment");
    if (kind == "fgd") {
      grouped.fgd.push_back(r);
    } else if (kind == "replay") {
      grouped.replay.push_back(r);
    } else {
      grouped.notes.push_back(fmt::format(
          "Result {} is left out: experiment \"{}\" is not fgd or replay.", i + 1, kind));
    }
  }
  if (grouped.fgd.empty() && grouped.replay.empty() && grouped.notes.empty()) {
    grouped.notes.push_back("The compare result holds no results.");
  }
  return grouped;
}

void ComparePage(Page& page, const json& result) {
  const Grouped grouped = GroupResults(result);
  page.Heading(1, "Comparison of policies");
  for (const std::string& note : grouped.notes) page.Note(note);
  if (!grouped.fgd.empty()) {
    const std::vector<Labeled> fgd = LabelResults(grouped.fgd);
    page.Heading(2, "FGD placement experiment");
    page.AddTable(FgdCompareTable(fgd));
    FgdCharts(page, fgd);
    page.Heading(3, "Against the published results");
    page.AddTable(FgdLevelTable(fgd, true));
  }
  if (!grouped.replay.empty()) {
    page.Heading(2, "Replays");
    ReplayComparison(page, LabelResults(grouped.replay));
  }
}

// The per-team difference (after - before) of `key`, from "difference" or computed.
std::optional<double> TeamDifference(const json* team, const std::string& key) {
  if (auto d = NumberAt(Field(team, "difference"), key)) return d;
  const auto before = NumberAt(Field(team, "before"), key);
  const auto after = NumberAt(Field(team, "after"), key);
  if (before && after) return *after - *before;
  return std::nullopt;
}

struct TeamRow {
  std::string team;
  const json* value;
};

std::vector<TeamRow> Teams(const json& result) {
  std::vector<TeamRow> teams;
  if (const json* per_team = Field(&result, "per_team"); IsObject(per_team)) {
    for (const auto& item : per_team->items()) teams.push_back({item.key(), &item.value()});
  }
  return teams;
}

Table TeamTable(const std::vector<TeamRow>& teams) {
  const std::vector<std::string> keys = {"mean", "p50", "p95"};
  Table table{{"team"}, {}};
  for (const char* side : {"before", "after", "difference"}) {
    for (const std::string& key : keys) table.header.push_back(fmt::format("{} {}", side, key));
  }
  table.header[1] += " (s)";
  for (const TeamRow& t : teams) {
    std::vector<Cell> row = {Plain(t.team)};
    for (const char* side : {"before", "after"}) {
      for (const std::string& key : keys)
        row.push_back(Seconds(NumberAt(Field(t.value, side), key)));
    }
    for (const std::string& key : keys) {
      const auto d = TeamDifference(t.value, key);
      Cell c = Seconds(d);
      if (d && *d > 0) {
        c.text = "+" + c.text;
        c.human = "+" + c.human;
      }
      row.push_back(std::move(c));
    }
    table.rows.push_back(std::move(row));
  }
  return table;
}

std::vector<Labeled> WhatIfSides(const json& result) {
  std::vector<Labeled> sides;
  for (const char* side : {"before", "after"}) {
    const json* r = Field(&result, side);
    if (!IsObject(r)) continue;
    std::string policy = TextAt(r, "policy", "?");
    sides.push_back({fmt::format("{}: {}", side, policy), r});
  }
  return sides;
}

void WhatIfPage(Page& page, const json& result) {
  page.Heading(1, "What-if: the recorded window under another policy");
  const std::vector<Labeled> sides = WhatIfSides(result);
  if (sides.size() < 2) {
    page.Note("The what-if result needs both \"before\" and \"after\" replay objects.");
  }
  const std::vector<TeamRow> teams = Teams(result);
  page.Heading(2, "Queue time per team");
  if (teams.empty()) {
    page.Note("No \"per_team\" in the result.");
  } else {
    page.Paragraph("Difference = after - before; negative means the team waits less.");
    page.AddTable(TeamTable(teams));
  }
  if (!sides.empty()) {
    page.Heading(2, "Before and after");
    ReplayComparison(page, sides);
  }
}

void UnknownPage(Page& page, const json& result) {
  page.Heading(1, "Simulation result");
  if (!result.is_object()) {
    page.Note("The result is not a JSON object; nothing to report.");
    return;
  }
  std::string keys;
  for (const auto& item : result.items()) keys += (keys.empty() ? "" : ", ") + item.key();
  page.Note(fmt::format(
      "Unknown experiment \"{}\" (expected fgd, replay, compare or what-if); top-level keys: {}.",
      TextAt(&result, "experiment"), keys.empty() ? "none" : keys));
}

std::string PageTitle(const json& result) {
  const std::string kind = TextAt(&result, "experiment", "result");
  const std::string policy = TextAt(&result, "policy");
  return "Drover simulation: " + kind + (policy.empty() ? "" : " (" + policy + ")");
}

// ---------------------------------------------------------------------------------------------
// Text.

std::string FgdText(const json& result) {
  const json* r = &result;
  std::string out = fmt::format(
      "FGD experiment: policy {} on {} ({} nodes, {} GPUs), seeds {}, inflate {}\n",
      TextAt(r, "policy", "?"), TextAt(r, "workload", "?"), Count(NumberAt(r, "nodes")),
      Count(NumberAt(r, "total_gpus")), Seeds(Field(r, "seeds")), Fixed(NumberAt(r, "inflate"), 2));
  out += "pods: " + PodsLine(r);
  if (auto wall = NumberAt(r, "wall_seconds")) out += "; wall " + Human(wall);
  out += "\n";
  const json* published = Field(r, "published");
  if (IsObject(published)) {
    out += fmt::format("published: {} over {} seeds\n", PublishedLabel(published),
                       Count(NumberAt(published, "seeds")));
  } else {
    out += "published: none\n";
  }
  out += RenderTextTable(FgdLevelTable(LabelResults({r}), false));
  return out;
}

std::string ReplayText(const json& result) {
  const json* r = &result;
  std::string out =
      fmt::format("Replay: policy {}, {} jobs ({} finished, {} unfinished) on {} nodes / {} GPUs\n",
                  TextAt(r, "policy", "?"), Count(NumberAt(r, "jobs")),
                  Count(NumberAt(r, "finished")), Count(NumberAt(r, "unfinished")),
                  Count(NumberAt(r, "nodes")), Count(NumberAt(r, "total_gpus")));
  out += fmt::format("makespan {}, preemptions {}, lost {} of {} GPU-hours allocated, {} events",
                     Human(NumberAt(r, "makespan_seconds")), Count(NumberAt(r, "preemptions")),
                     Fixed(NumberAt(r, "lost_gpu_hours"), 2),
                     Fixed(NumberAt(r, "gpu_hours_allocated"), 2), Count(NumberAt(r, "events")));
  if (auto wall = NumberAt(r, "wall_seconds")) out += "; wall " + Human(wall);
  out += "\n";
  const json* split = Field(r, "lifecycle_seconds");
  double total = 0;
  for (const std::string phase : kLifecycle) total += NumberAt(split, phase).value_or(0);
  if (total > 0) {
    out += "lifecycle:";
    for (const std::string phase : kLifecycle) {
      out +=
          fmt::format(" {} {}%", phase, Fixed(100 * NumberAt(split, phase).value_or(0) / total, 1));
    }
    out += "\n";
  } else {
    out += "lifecycle: n/a\n";
  }
  Table table = QueueStatsTable(r);
  for (std::string& h : table.header) {
    if (const auto at = h.find(" (s)"); at != std::string::npos) h.erase(at);
  }
  const std::size_t extra =
      table.rows.size() > kMaxTextQueueRows + 1 ? table.rows.size() - kMaxTextQueueRows - 1 : 0;
  table.rows.resize(table.rows.size() - extra);
  out += RenderTextTable(table);
  if (extra > 0) out += fmt::format("... {} more queues (see -o json or --report)\n", extra);
  return out;
}

Table ReplayCompareTextTable(const std::vector<Labeled>& results) {
  Table table{{"policy", "jobs", "unfinished", "JCT mean", "JCT p95", "queue mean", "queue p95",
               "makespan", "preempt", "lost GPU-h"},
              {}};
  for (const Labeled& r : results) {
    const json* jct = Field(r.result, "jct_seconds");
    const json* wait = Field(r.result, "queue_seconds");
    table.rows.push_back({Plain(r.label), Num(Count(NumberAt(r.result, "jobs"))),
                          Num(Count(NumberAt(r.result, "unfinished"))),
                          Seconds(NumberAt(jct, "mean")), Seconds(NumberAt(jct, "p95")),
                          Seconds(NumberAt(wait, "mean")), Seconds(NumberAt(wait, "p95")),
                          Seconds(NumberAt(r.result, "makespan_seconds")),
                          Num(Count(NumberAt(r.result, "preemptions"))),
                          Num(Fixed(NumberAt(r.result, "lost_gpu_hours"), 2))});
  }
  return table;
}

Table FgdCompareTextTable(const std::vector<Labeled>& results) {
  Table table{{"policy"}, {}};
  for (int level : kDemandLevels) table.header.push_back(fmt::format("alloc@{}%", level));
  table.header.push_back("published@130%");
  table.header.push_back("diff@130%");
  table.header.push_back("frag@100%");
  for (const Labeled& r : results) {
    std::vector<Cell> row = {Plain(r.label)};
    const json* alloc = Field(r.result, "allocation_ratio_at");
    for (int level : kDemandLevels) row.push_back(Percent(AtValue(alloc, level)));
    const auto ours = AtValue(alloc, 130);
    const auto theirs = AtValue(Field(Field(r.result, "published"), "allocation_ratio_at"), 130);
    row.push_back(Percent(theirs));
    row.push_back(SignedPoints(ours && theirs ? std::optional(*ours - *theirs) : std::nullopt));
    row.push_back(Percent(AtValue(Field(r.result, "fragmentation_at"), 100)));
    table.rows.push_back(std::move(row));
  }
  return table;
}

std::string CompareText(const json& result) {
  const Grouped grouped = GroupResults(result);
  std::string out = "Comparison of policies\n";
  for (const std::string& note : grouped.notes) out += "note: " + note + "\n";
  if (!grouped.fgd.empty()) {
    out += "FGD experiment (GPU allocation ratio %, by arrived demand % of capacity):\n";
    out += RenderTextTable(FgdCompareTextTable(LabelResults(grouped.fgd)));
  }
  if (!grouped.replay.empty()) {
    out += "Replays:\n";
    out += RenderTextTable(ReplayCompareTextTable(LabelResults(grouped.replay)));
  }
  return out;
}

std::string WhatIfText(const json& result) {
  std::string out = "What-if: the recorded window under another policy\n";
  const std::vector<Labeled> sides = WhatIfSides(result);
  if (sides.size() < 2) out += "note: the result needs both \"before\" and \"after\"\n";
  if (!sides.empty()) out += RenderTextTable(ReplayCompareTextTable(sides));
  std::vector<TeamRow> teams = Teams(result);
  if (teams.empty()) {
    out += "per team: n/a\n";
    return out;
  }
  // The largest changes of mean queue time first.
  std::stable_sort(teams.begin(), teams.end(), [](const TeamRow& a, const TeamRow& b) {
    const double da = std::abs(TeamDifference(a.value, "mean").value_or(0));
    const double db = std::abs(TeamDifference(b.value, "mean").value_or(0));
    return da > db;
  });
  const std::size_t extra = teams.size() > kMaxTextTeamRows ? teams.size() - kMaxTextTeamRows : 0;
  teams.resize(teams.size() - extra);
  out += "Queue time per team (diff = after - before):\n";
  Table table{
      {"team", "mean before", "mean after", "mean diff", "p95 before", "p95 after", "p95 diff"},
      {}};
  for (const TeamRow& t : teams) {
    std::vector<Cell> row = {Plain(t.team)};
    for (const char* key : {"mean", "p95"}) {
      row.push_back(Seconds(NumberAt(Field(t.value, "before"), key)));
      row.push_back(Seconds(NumberAt(Field(t.value, "after"), key)));
      const auto d = TeamDifference(t.value, key);
      row.push_back(Plain(d && *d > 0 ? "+" + Human(d) : Human(d)));
    }
    table.rows.push_back(std::move(row));
  }
  out += RenderTextTable(table);
  if (extra > 0) out += fmt::format("... {} more teams (see -o json or --report)\n", extra);
  return out;
}

}  // namespace

std::string RenderHtmlReport(const json& result) {
  Page page;
  try {
    const std::string kind = TextAt(&result, "experiment");
    if (kind == "fgd") {
      FgdPage(page, result);
    } else if (kind == "replay") {
      ReplayPage(page, result);
    } else if (kind == "compare") {
      ComparePage(page, result);
    } else if (kind == "what-if") {
      WhatIfPage(page, result);
    } else {
      UnknownPage(page, result);
    }
    return page.Finish(PageTitle(result));
  } catch (const std::exception& e) {
    // Not expected (the readers check every type); a page that says so beats no page.
    Page fallback;
    fallback.Heading(1, "Simulation result");
    fallback.Note(std::string("The report could not be rendered: ") + e.what());
    return fallback.Finish("Drover simulation");
  }
}

std::string RenderTextReport(const json& result) {
  try {
    const std::string kind = TextAt(&result, "experiment");
    if (kind == "fgd") return FgdText(result);
    if (kind == "replay") return ReplayText(result);
    if (kind == "compare") return CompareText(result);
    if (kind == "what-if") return WhatIfText(result);
    return fmt::format(
        "Unknown simulation result (experiment \"{}\"; expected fgd, replay, compare or "
        "what-if)\n",
        kind);
  } catch (const std::exception& e) {
    return std::string("The report could not be rendered: ") + e.what() + "\n";
  }
}

}  // namespace drover::sim
