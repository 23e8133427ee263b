// The simulation reports' entry points (report.h) and what is theirs alone: the compare and
// what-if pages and the text summaries. The pieces shared by every section are in
// report_parts.h; the FGD and replay sections in report_fgd.h and report_replay.h.

#include "drover/sim/report/report.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <exception>
#include <optional>
#include <string_view>
#include <vector>

#include "drover/sim/report/report_fgd.h"
#include "drover/sim/report/report_parts.h"
#include "drover/sim/report/report_replay.h"

namespace drover::sim {
namespace report_internal {
namespace {

constexpr std::size_t kMaxTextQueueRows = 12;  // per-queue rows in the text summary
constexpr std::size_t kMaxTextTeamRows = 12;   // per-team rows in the text summary
constexpr std::size_t kTextWidth = 100;        // columns of the text summary

// The widest line of `text`, in display columns.
std::size_t MaxLineWidth(std::string_view text) {
  std::size_t widest = 0;
  for (std::size_t at = 0; at < text.size();) {
    const std::size_t end = std::min(text.find('\n', at), text.size());
    widest = std::max(widest, Width(text.substr(at, end - at)));
    at = end + 1;
  }
  return widest;
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

// "Drover simulation: KIND (POLICY)", and for replays (alone or compared) the trace they ran.
std::string PageTitle(const json& result) {
  const std::string kind = TextAt(&result, "experiment", "result");
  const std::string policy = TextAt(&result, "policy");
  std::string title = "Drover simulation: " + kind + (policy.empty() ? "" : " (" + policy + ")");
  if (kind == "replay") return title + " on " + TraceLine(&result);
  if (kind == "compare") {
    const Grouped grouped = GroupResults(result);
    if (!grouped.replay.empty()) title += " on " + TraceLine(grouped.replay.front());
  }
  return title;
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

// `table` with " (s)" dropped from its headers: the text writes durations for people ("1h02m").
Table WithoutSecondsUnit(Table table) {
  for (std::string& h : table.header) {
    if (const auto at = h.find(" (s)"); at != std::string::npos) h.erase(at);
  }
  return table;
}

// "trace: NAME\ncluster: ..., N jobs\n" (two lines: a trace's name alone may fill one).
std::string TraceLines(const json* r) {
  return fmt::format("trace: {}\ncluster: {}, {} jobs\n", TextAt(r, "trace", "unnamed"),
                     ClusterLine(r), Count(NumberAt(r, "jobs")));
}

std::string ReplayText(const json& result) {
  const json* r = &result;
  std::string out = fmt::format("Replay: policy {}, {} jobs ({} finished, {} unfinished)\n",
                                TextAt(r, "policy", "?"), Count(NumberAt(r, "jobs")),
                                Count(NumberAt(r, "finished")), Count(NumberAt(r, "unfinished")));
  out += TraceLines(r);
  out +=
      fmt::format("makespan {}, preemptions {}, {} events", Human(NumberAt(r, "makespan_seconds")),
                  Count(NumberAt(r, "preemptions")), Count(NumberAt(r, "events")));
  if (auto wall = NumberAt(r, "wall_seconds")) out += "; wall " + Human(wall);
  out += fmt::format("\nGPU-hours: {} allocated, {} lost to preemption, {} per success\n",
                     Fixed(NumberAt(r, "gpu_hours_allocated"), 2),
                     Fixed(NumberAt(r, "lost_gpu_hours"), 2),
                     Fixed(NumberAt(r, "gpu_hours_per_result"), 2));
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
  Table table = WithoutSecondsUnit(QueueStatsTable(r));
  const std::size_t extra =
      table.rows.size() > kMaxTextQueueRows + 1 ? table.rows.size() - kMaxTextQueueRows - 1 : 0;
  table.rows.resize(table.rows.size() - extra);
  out += RenderTextTable(table);
  if (extra > 0) out += fmt::format("... {} more queues (see -o json or --report)\n", extra);
  return out;
}

Table ReplayCompareTextTable(const std::vector<Labeled>& results) {
  Table table{{"policy", "unfinished", "JCT mean", "JCT p99", "queue mean", "queue p95",
               "queue p99", "makespan", "preempt"},
              {}};
  for (const Labeled& r : results) {
    const json* jct = Field(r.result, "jct_seconds");
    const json* wait = Field(r.result, "queue_seconds");
    table.rows.push_back({Plain(r.label), Num(Count(NumberAt(r.result, "unfinished"))),
                          Seconds(NumberAt(jct, "mean")), Seconds(NumberAt(jct, "p99")),
                          Seconds(NumberAt(wait, "mean")), Seconds(NumberAt(wait, "p95")),
                          Seconds(NumberAt(wait, "p99")),
                          Seconds(NumberAt(r.result, "makespan_seconds")),
                          Num(Count(NumberAt(r.result, "preemptions")))});
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
    const std::vector<Labeled> replays = LabelResults(grouped.replay);
    out += "Replays:\n" + TraceLines(grouped.replay.front());
    out += RenderTextTable(ReplayCompareTextTable(replays));
    const Table waits = WithoutSecondsUnit(QueueWaitTable(replays, {"mean", "p99"}));
    const std::string waits_text = RenderTextTable(waits);
    if (waits.rows.size() > kMaxTextQueueRows || MaxLineWidth(waits_text) > kTextWidth) {
      out += "Queue time per queue: too large for the terminal (see -o json or --report)\n";
    } else if (!waits.rows.empty()) {
      out += "Queue time per queue:\n" + waits_text;
    }
    out += "GPU-hours by result:\n" + RenderTextTable(GpuHoursTable(replays));
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

// ---------------------------------------------------------------------------------------------
// The renderers behind report.h's entry points: dispatch on "experiment".

std::string HtmlReport(const json& result) {
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

std::string TextReport(const json& result) {
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

}  // namespace
}  // namespace report_internal

std::string RenderHtmlReport(const nlohmann::json& result) {
  return report_internal::HtmlReport(result);
}

std::string RenderTextReport(const nlohmann::json& result) {
  return report_internal::TextReport(result);
}

}  // namespace drover::sim
