// The FGD placement experiment's part of the simulation reports (report_fgd.h).

#include "drover/sim/report/report_fgd.h"

#include <fmt/format.h>

#include <cstddef>
#include <optional>
#include <set>
#include <utility>

namespace drover::sim::report_internal {
namespace {

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

}  // namespace

std::string PublishedLabel(const json* published) {
  return TextAt(published, "policy", "FGD paper") + " (published)";
}

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

}  // namespace drover::sim::report_internal
