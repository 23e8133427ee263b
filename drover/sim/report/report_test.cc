#include "drover/sim/report/report.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cctype>
#include <sstream>
#include <string>
#include <string_view>
#include <vector>

namespace drover::sim {
namespace {

using nlohmann::json;
using ::testing::HasSubstr;
using ::testing::Not;

// ---------------------------------------------------------------------------------------------
// A tiny XML well-formedness checker: tags balanced and properly nested, attribute values
// quoted, '&' only as an entity, no '<' in attribute values. Returns "" when well-formed, else
// the first problem.
std::string CheckWellFormed(std::string_view xml) {
  auto is_name = [](char c) {
    return std::isalnum(static_cast<unsigned char>(c)) || c == '-' || c == '_' || c == ':';
  };
  auto entity_ok = [&](std::size_t at) {  // xml[at] == '&'
    const std::size_t semi = xml.find(';', at);
    if (semi == std::string_view::npos || semi - at > 8) return false;
    const std::string_view name = xml.substr(at + 1, semi - at - 1);
    if (name == "amp" || name == "lt" || name == "gt" || name == "quot" || name == "apos") {
      return true;
    }
    if (name.size() < 2 || name[0] != '#') return false;
    for (char c : name.substr(1)) {
      if (!std::isdigit(static_cast<unsigned char>(c))) return false;
    }
    return true;
  };
  std::vector<std::string> open;
  std::size_t i = 0;
  while (i < xml.size()) {
    if (xml[i] == '&') {
      if (!entity_ok(i)) return "bad entity at " + std::to_string(i);
      ++i;
      continue;
    }
    if (xml[i] != '<') {
      ++i;
      continue;
    }
    if (xml.substr(i, 4) == "<!--") {
      const std::size_t end = xml.find("-->", i);
      if (end == std::string_view::npos) return "unterminated comment";
      i = end + 3;
      continue;
    }
    std::size_t j = i + 1;
    const bool closing = j < xml.size() && xml[j] == '/';
    if (closing) ++j;
    const std::size_t name_start = j;
    while (j < xml.size() && is_name(xml[j])) ++j;
    const std::string name(xml.substr(name_start, j - name_start));
    if (name.empty()) return "tag without a name at " + std::to_string(i);
    bool self_closing = false;
    while (true) {
      while (j < xml.size() && std::isspace(static_cast<unsigned char>(xml[j]))) ++j;
      if (j >= xml.size()) return "unterminated tag <" + name;
      if (xml[j] == '>') {
        ++j;
        break;
      }
      if (xml.substr(j, 2) == "/>") {
        if (closing) return "closing tag ends with />: " + name;
        self_closing = true;
        j += 2;
        break;
      }
      if (closing) return "attribute in closing tag </" + name;
      const std::size_t attr = j;
      while (j < xml.size() && is_name(xml[j])) ++j;
      if (j == attr) return "bad attribute in <" + name + " at " + std::to_string(j);
      if (j >= xml.size() || xml[j] != '=') return "attribute without value in <" + name;
      ++j;
      if (j >= xml.size() || xml[j] != '"') return "unquoted attribute in <" + name;
      const std::size_t end = xml.find('"', j + 1);
      if (end == std::string_view::npos) return "unterminated attribute in <" + name;
      for (std::size_t k = j + 1; k < end; ++k) {
        if (xml[k] == '<') return "'<' in an attribute of <" + name;
        if (xml[k] == '&' && !entity_ok(k)) return "bad entity in an attribute of <" + name;
      }
      j = end + 1;
    }
    if (closing) {
      if (open.empty() || open.back() != name) {
        return "</" + name + "> closes " + (open.empty() ? "nothing" : "<" + open.back() + ">");
      }
      open.pop_back();
    } else if (!self_closing) {
      open.push_back(name);
    }
    i = j;
  }
  if (!open.empty()) return "unclosed <" + open.back() + ">";
  return "";
}

// Every <svg>...</svg> element of a page.
std::vector<std::string> Svgs(const std::string& html) {
  std::vector<std::string> out;
  for (auto at = html.find("<svg"); at != std::string::npos; at = html.find("<svg", at + 1)) {
    const auto end = html.find("</svg>", at);
    if (end == std::string::npos) break;
    out.push_back(html.substr(at, end + 6 - at));
  }
  return out;
}

int Occurrences(const std::string& text, const std::string& what) {
  int n = 0;
  for (auto at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++n;
  return n;
}

int SeriesCount(const std::string& svg) { return Occurrences(svg, "class=\"series\""); }
int LegendCount(const std::string& svg) { return Occurrences(svg, "class=\"legend-entry\""); }

// The chart whose title is `title` (fails the test and returns "" if there is none).
std::string ChartTitled(const std::string& html, const std::string& title) {
  for (const std::string& svg : Svgs(html)) {
    if (svg.find("<title>" + title + "</title>") != std::string::npos) return svg;
  }
  ADD_FAILURE() << "no chart titled " << title;
  return "";
}

// Checks what every page must satisfy: self-contained, well-formed charts.
void ExpectSelfContained(const std::string& html) {
  EXPECT_EQ(html.rfind("<!DOCTYPE html>", 0), 0u);
  EXPECT_THAT(html, HasSubstr("</html>"));
  EXPECT_THAT(html, Not(HasSubstr("<script")));
  EXPECT_THAT(html, Not(HasSubstr("http://")));
  EXPECT_THAT(html, Not(HasSubstr("https://")));
  EXPECT_THAT(html, Not(HasSubstr("<link")));
  EXPECT_THAT(html, Not(HasSubstr("<img")));
  EXPECT_THAT(html, Not(HasSubstr("url(")));
  EXPECT_EQ(Occurrences(html, "<svg"), Occurrences(html, "</svg>"));
  for (const std::string& svg : Svgs(html)) EXPECT_EQ(CheckWellFormed(svg), "") << svg;
}

// ---------------------------------------------------------------------------------------------
// Fixtures.

json FgdResult() {
  return json::parse(R"({
    "experiment": "fgd", "workload": "openb_pod_list_default", "nodes": 1523,
    "total_gpus": 6212, "policy": "fgd", "seeds": [42, 43], "inflate": 1.3,
    "pods_arrived": 9000, "pods_placed": 8800, "pods_failed": 200,
    "allocation_ratio_at": {"0": 0.25, "50": 50.1, "100": 92.5, "110": 93.75, "120": 94.5,
                            "130": 95.4},
    "fragmentation_at": {"0": 5.6, "50": 7.0, "100": 4.0, "110": 3.5, "120": 3.25, "130": 3.0},
    "fragmentation_ratio_at": {"0": 5.6, "100": 40.0, "130": 60.0},
    "published": {"policy": "06-FGD", "seeds": 10,
                  "allocation_ratio_at": {"0": 0.2, "100": 92.0, "110": 93.0, "120": 94.0,
                                          "130": 94.9},
                  "fragmentation_at": {"0": 5.5, "100": 4.5, "130": 3.5}},
    "wall_seconds": 12.5,
    "runs": [
      {"experiment": "fgd", "policy": "fgd", "seeds": [42], "pods_placed": 8801,
       "pods_failed": 199, "allocation_ratio_at": {"100": 92.4, "130": 95.3}},
      {"experiment": "fgd", "policy": "fgd", "seeds": [43], "pods_placed": 8799,
       "pods_failed": 201, "allocation_ratio_at": {"100": 92.6, "130": 95.5}}
    ]
  })");
}

json ReplayResult(const std::string& policy, double scale) {
  json r = json::parse(R"({
    "experiment": "replay", "jobs": 4, "finished": 3, "unfinished": 1, "nodes": 2,
    "total_gpus": 16,
    "jct_seconds": {"mean": 3725.5, "p50": 1800, "p95": 7000, "p99": 7400},
    "queue_seconds": {"mean": 120.25, "p50": 0, "p95": 400, "p99": 480},
    "makespan_seconds": 90000, "preemptions": 3, "lost_gpu_hours": 1.75,
    "gpu_hours_allocated": 420.5,
    "lifecycle_seconds": {"queue": 400, "placement": 0, "startup": 100, "run": 9500},
    "gpu_allocation_over_time": [[0, 0], [600, 50], [1200, 100], [90000, 0]],
    "queue_share_over_time": {"research": [[0, 0], [600, 25]], "prod": [[0, 0], [600, 25]]},
    "per_queue": {
      "prod": {"jobs": 2, "queue_seconds": {"mean": 10, "p50": 0, "p95": 20, "p99": 20},
               "jct_seconds": {"mean": 2000, "p50": 1800, "p95": 2200, "p99": 2200}},
      "research": {"jobs": 2, "queue_seconds": {"mean": 230.5, "p50": 100, "p95": 400,
                                                "p99": 480},
                   "jct_seconds": {"mean": 5451, "p50": 5000, "p95": 7000, "p99": 7400}}
    },
    "job_rows": [
      {"name": "a", "queue": "prod", "team": "t1", "user": "u", "gpus": 8, "submit_s": 0,
       "start_s": 0, "end_s": 1800, "queue_s": 0, "jct_s": 1800, "preemptions": 0},
      {"name": "b", "queue": "prod", "team": "t1", "user": "u", "gpus": 8, "submit_s": 0,
       "start_s": 20, "end_s": 2220, "queue_s": 20, "jct_s": 2220, "preemptions": 1},
      {"name": "c", "queue": "research", "team": "t2", "user": "v", "gpus": 4, "submit_s": 10,
       "start_s": 110, "end_s": 7410, "queue_s": 100, "jct_s": 7400, "preemptions": 2},
      {"name": "d", "queue": "research", "team": "t2", "user": "v", "gpus": 4, "submit_s": 10,
       "start_s": 410, "end_s": null, "queue_s": 400, "jct_s": null, "preemptions": 0}
    ],
    "events": 1234, "wall_seconds": 0.5
  })");
  r["policy"] = policy;
  r["jct_seconds"]["mean"] = 3725.5 * scale;
  return r;
}

// ---------------------------------------------------------------------------------------------
// FGD.

TEST(FgdReport, DrawsAllocationAndFragmentationWithPublishedCurvesDashed) {
  const std::string html = RenderHtmlReport(FgdResult());
  ExpectSelfContained(html);
  EXPECT_EQ(Svgs(html).size(), 3u);  // allocation, fragmentation, fragmentation ratio

  const std::string allocation = ChartTitled(html, "GPU allocation ratio vs arrived GPU demand");
  EXPECT_EQ(SeriesCount(allocation), 2);
  EXPECT_EQ(LegendCount(allocation), 2);
  EXPECT_THAT(allocation, HasSubstr(">fgd</text>"));
  EXPECT_THAT(allocation, HasSubstr(">06-FGD (published)</text>"));
  EXPECT_THAT(allocation, HasSubstr("stroke-dasharray"));
  EXPECT_THAT(allocation, HasSubstr(">arrived GPU demand (% of capacity)</text>"));
  EXPECT_THAT(allocation, HasSubstr(">GPU allocation ratio (%)</text>"));
  EXPECT_THAT(allocation, HasSubstr(">125</text>"));  // x ticks run to 130

  const std::string fragmentation = ChartTitled(html, "GPU fragmentation vs arrived GPU demand");
  EXPECT_EQ(SeriesCount(fragmentation), 2);
  EXPECT_THAT(fragmentation, HasSubstr(">fragmented GPUs (% of capacity)</text>"));

  const std::string ratio = ChartTitled(html, "GPU fragmentation ratio vs arrived GPU demand");
  EXPECT_EQ(SeriesCount(ratio), 1);  // nothing published for it
}

TEST(FgdReport, TableHoldsAllocationAgainstPublishedWithTheDifference) {
  const std::string html = RenderHtmlReport(FgdResult());
  // 130 %: 95.40 ours, 94.90 published, +0.50; fragmentation 3.00 vs 3.50, -0.50.
  EXPECT_THAT(html, HasSubstr("<td class=\"num\">130</td><td class=\"num\">95.40</td>"
                              "<td class=\"num\">94.90</td><td class=\"num\">+0.50</td>"
                              "<td class=\"num\">3.00</td><td class=\"num\">3.50</td>"
                              "<td class=\"num\">-0.50</td>"));
  // 110 %: nothing published for fragmentation.
  EXPECT_THAT(html, HasSubstr("<td class=\"num\">110</td><td class=\"num\">93.75</td>"
                              "<td class=\"num\">93.00</td><td class=\"num\">+0.75</td>"
                              "<td class=\"num\">3.50</td><td class=\"num\">n/a</td>"));
  // Facts and the per-seed table.
  EXPECT_THAT(html, HasSubstr("42..43 (2 seeds)"));
  EXPECT_THAT(html, HasSubstr("9000 arrived, 8800 placed, 200 failed"));
  EXPECT_THAT(html, HasSubstr("<td class=\"num\">8801</td>"));
  EXPECT_THAT(html, HasSubstr("<td class=\"num\">95.50</td>"));
}

TEST(FgdReport, WithoutPublishedCurvesSaysSoAndDrawsOnlyOurs) {
  json result = FgdResult();
  result.erase("published");
  result.erase("fragmentation_ratio_at");
  const std::string html = RenderHtmlReport(result);
  ExpectSelfContained(html);
  EXPECT_EQ(Svgs(html).size(), 2u);
  EXPECT_EQ(SeriesCount(ChartTitled(html, "GPU allocation ratio vs arrived GPU demand")), 1);
  EXPECT_THAT(html, HasSubstr("No published curves"));
}

TEST(FgdReport, TextSummaryListsTheLevels) {
  const std::string text = RenderTextReport(FgdResult());
  EXPECT_THAT(text, HasSubstr("FGD experiment: policy fgd on openb_pod_list_default (1523 nodes, "
                              "6212 GPUs), seeds 42..43 (2 seeds), inflate 1.30"));
  EXPECT_THAT(text, HasSubstr("published: 06-FGD (published) over 10 seeds"));
  // The 130 % row: demand, ours, published, difference, fragmentation, published, difference.
  EXPECT_THAT(text, testing::ContainsRegex("\n130 +95\\.40 +94\\.90 +\\+0\\.50 +3\\.00 +3\\.50 "
                                           "+-0\\.50\n"));
}

// ---------------------------------------------------------------------------------------------
// Replay.

TEST(ReplayReport, DrawsCdfsPerQueueAndAllocationOverTime) {
  const std::string html = RenderHtmlReport(ReplayResult("fair-share", 1));
  ExpectSelfContained(html);
  EXPECT_EQ(Svgs(html).size(), 4u);

  const std::string jct = ChartTitled(html, "JCT CDF per queue");
  EXPECT_EQ(SeriesCount(jct), 3);  // all jobs, prod, research
  EXPECT_EQ(LegendCount(jct), 3);
  EXPECT_THAT(jct, HasSubstr(">all jobs</text>"));
  EXPECT_THAT(jct, HasSubstr(">prod</text>"));
  EXPECT_THAT(jct, HasSubstr(">research</text>"));
  EXPECT_THAT(jct, HasSubstr(">JCT (seconds) (log scale)</text>"));
  EXPECT_THAT(jct, HasSubstr(">jobs (%)</text>"));

  const std::string wait = ChartTitled(html, "Queue-time CDF per queue");
  EXPECT_EQ(SeriesCount(wait), 3);
  EXPECT_THAT(wait, HasSubstr(">queue time (seconds) (log scale)</text>"));

  const std::string allocation = ChartTitled(html, "GPU allocation over time");
  EXPECT_EQ(SeriesCount(allocation), 1);
  EXPECT_THAT(allocation, HasSubstr(">simulated time (hours)</text>"));  // 90000 s
  EXPECT_THAT(allocation, HasSubstr(">GPUs allocated (% of capacity)</text>"));

  const std::string shares = ChartTitled(html, "Share of the GPUs per queue over time");
  EXPECT_EQ(SeriesCount(shares), 2);
  EXPECT_EQ(LegendCount(shares), 2);
}

TEST(ReplayReport, TablesHoldTheStatisticsAndTheLifecycleSplit) {
  const std::string html = RenderHtmlReport(ReplayResult("fair-share", 1));
  // All jobs: 4 jobs, JCT mean 3725.5 s (1h02m), p95 7000.
  EXPECT_THAT(html, HasSubstr("<td>all</td><td class=\"num\">4</td><td class=\"num\">3725.5"
                              "<span class=\"human\">1h02m</span></td>"));
  EXPECT_THAT(html, HasSubstr("<td>research</td><td class=\"num\">2</td><td class=\"num\">5451.0"));
  EXPECT_THAT(html, HasSubstr("<td class=\"num\">230.5<span class=\"human\">3m51s</span></td>"));
  for (const char* header : {"JCT mean (s)", "JCT p50", "JCT p95", "JCT p99", "queue mean (s)",
                             "queue p50", "queue p95", "queue p99"}) {
    EXPECT_THAT(html, HasSubstr(std::string("<th>") + header + "</th>"));
  }
  EXPECT_THAT(html, HasSubstr("90000.0<span class=\"human\">1d01h</span>"));  // makespan
  EXPECT_THAT(html, HasSubstr("<td>preemptions</td><td class=\"num\">3</td>"));
  EXPECT_THAT(html, HasSubstr("<td>lost GPU-hours</td><td class=\"num\">1.75</td>"));
  EXPECT_THAT(html, HasSubstr("<td>GPU-hours allocated</td><td class=\"num\">420.50</td>"));
  // Lifecycle: 400 + 0 + 100 + 9500 = 10000 s -> 4 %, 0 %, 1 %, 95 %.
  EXPECT_THAT(html, HasSubstr("<td class=\"num\">400.0<span class=\"human\">6m40s</span></td>"
                              "<td class=\"num\">4.00</td>"));
  EXPECT_THAT(html, HasSubstr("<td class=\"num\">95.00</td>"));
}

TEST(ReplayReport, WithoutJobRowsTheCdfsBecomeANote) {
  json result = ReplayResult("fifo", 1);
  result.erase("job_rows");
  const std::string html = RenderHtmlReport(result);
  ExpectSelfContained(html);
  EXPECT_THAT(html, HasSubstr("No &quot;job_rows&quot; in the result"));
  EXPECT_EQ(Svgs(html).size(), 2u);  // the over-time charts remain
}

TEST(ReplayReport, OneQueueIsDrawnOnceUnderAllJobs) {
  json result = ReplayResult("fifo", 1);
  for (json& row : result["job_rows"]) row["queue"] = "default";
  const std::string jct = ChartTitled(RenderHtmlReport(result), "JCT CDF per queue");
  EXPECT_EQ(SeriesCount(jct), 1);
  EXPECT_THAT(jct, HasSubstr(">all jobs (queue default)</text>"));
}

TEST(ReplayReport, TextSummaryFitsOneScreen) {
  const std::string text = RenderTextReport(ReplayResult("fair-share", 1));
  EXPECT_THAT(text, HasSubstr("Replay: policy fair-share, 4 jobs (3 finished, 1 unfinished)\n"
                              "trace: unnamed\ncluster: 2 nodes, 16 GPUs, 4 jobs\n"));
  EXPECT_THAT(text, HasSubstr("makespan 1d01h, preemptions 3, 1234 events"));
  EXPECT_THAT(text, HasSubstr("GPU-hours: 420.50 allocated, 1.75 lost to preemption"));
  EXPECT_THAT(text, HasSubstr("lifecycle: queue 4.0% placement 0.0% startup 1.0% run 95.0%"));
  EXPECT_THAT(text, testing::ContainsRegex("\nall +4 +1h02m +30m00s +1h57m +2h03m +2m00s +0\\.0s "
                                           "+6m40s +8m00s\n"));
  EXPECT_THAT(text, HasSubstr("research"));
  std::istringstream lines(text);
  int n = 0;
  for (std::string line; std::getline(lines, line);) {
    ++n;
    EXPECT_LE(line.size(), 100u) << line;
  }
  EXPECT_LE(n, 30);
}

// Issue 17, finding 7: a report must say what it replayed.
TEST(ReplayReport, NamesTheTraceAndTheClusterInTitleHeadingAndText) {
  json result = ReplayResult("fifo", 1);
  result["trace"] = "synthetic Philly from acme_cluster_summary.csv, load 2, seed 42, 4 queues";
  result["gpus_per_node"] = 8;
  const std::string named =
      "synthetic Philly from acme_cluster_summary.csv, load 2, seed 42, 4 queues: 2 nodes x 8 "
      "GPUs (16 GPUs), 4 jobs";
  const std::string html = RenderHtmlReport(result);
  EXPECT_THAT(html, HasSubstr("<title>Drover simulation: replay (fifo) on " + named + "</title>"));
  EXPECT_THAT(html, HasSubstr("<h1>Replay: fifo on " + named + "</h1>"));
  const std::string text = RenderTextReport(result);
  EXPECT_THAT(text, HasSubstr("trace: synthetic Philly from acme_cluster_summary.csv, load 2, "
                              "seed 42, 4 queues\ncluster: 2 nodes x 8 GPUs (16 GPUs), 4 jobs\n"));

  const json compare = {{"experiment", "compare"}, {"results", {result, result}}};
  EXPECT_THAT(RenderHtmlReport(compare),
              HasSubstr("<title>Drover simulation: compare on " + named + "</title>"));
  EXPECT_THAT(RenderHtmlReport(compare), HasSubstr("Trace: " + named));
  EXPECT_THAT(RenderTextReport(compare), HasSubstr("cluster: 2 nodes x 8 GPUs (16 GPUs), 4 jobs"));
}

TEST(ReplayReport, QueueTimeCdfOfAReplayWhereNothingWaitedDoesNotClaimALogAxis) {
  json result = ReplayResult("fifo", 1);
  for (json& row : result["job_rows"]) row["queue_s"] = 0;
  const std::string wait = ChartTitled(RenderHtmlReport(result), "Queue-time CDF per queue");
  EXPECT_THAT(wait, HasSubstr(">queue time (seconds)</text>"));
  EXPECT_THAT(wait, Not(HasSubstr("log scale")));
}

TEST(ReplayReport, GpuHoursByResultInHtmlAndText) {
  json result = ReplayResult("fifo", 1);
  result["gpu_hours_by_result"] = {
      {"succeeded", 400.25}, {"failed", 12.5},         {"timed_out", 0},     {"cancelled", 7.75},
      {"unfinished", 0},     {"preemption_lost", 1.5}, {"retry_lost", 20.25}};
  result["gpu_hours_per_result"] = 140.17;
  const std::string html = RenderHtmlReport(result);
  EXPECT_THAT(html,
              HasSubstr("<td>fifo</td><td class=\"num\">400.25</td><td class=\"num\">12.50</td>"
                        "<td class=\"num\">0.00</td><td class=\"num\">7.75</td>"));
  EXPECT_THAT(html, HasSubstr("<td>GPU-hours per result</td><td class=\"num\">140.17</td>"));
  const json compare = {{"experiment", "compare"}, {"results", {result, ReplayResult("las", 1)}}};
  const std::string text = RenderTextReport(compare);
  EXPECT_THAT(text, HasSubstr("GPU-hours by result:"));
  EXPECT_THAT(text, testing::ContainsRegex("\nfifo +400.25 +12.50 +0.00 +7.75 +0.00 +1.50 +20.25 "
                                           "+140.17\n"));
  // Per-queue queueing side by side, and p99s.
  EXPECT_THAT(text, HasSubstr("Queue time per queue:"));
  EXPECT_THAT(text, testing::ContainsRegex("\nresearch +3m51s +8m00s +3m51s +8m00s\n"));
  EXPECT_THAT(text, HasSubstr("JCT p99"));
  EXPECT_THAT(text, HasSubstr("queue p99"));
  std::istringstream lines(text);
  for (std::string line; std::getline(lines, line);) EXPECT_LE(line.size(), 100u) << line;
}

// ---------------------------------------------------------------------------------------------
// Compare and what-if.

// Issue 17, finding 7: fifo and las came out identical and their lines hid each other.
TEST(CompareReport, PoliciesWithIdenticalResultsAreDrawnApartAndNamedEqual) {
  const json compare = {{"experiment", "compare"},
                        {"results", {ReplayResult("fifo", 1), ReplayResult("las", 1)}}};
  const std::string html = RenderHtmlReport(compare);
  for (const char* title :
       {"JCT CDF per policy", "Queue-time CDF per policy", "GPU allocation over time per policy"}) {
    const std::string chart = ChartTitled(html, title);
    EXPECT_THAT(chart, HasSubstr(">fifo = las</text>")) << title;
    EXPECT_THAT(chart, HasSubstr("stroke-dasharray")) << title;
    EXPECT_THAT(chart, HasSubstr("class=\"marker\"")) << title;
  }
}

TEST(CompareReport, PutsEveryPolicyOnTheSameCharts) {
  json fgd_random = FgdResult();
  fgd_random["policy"] = "random";
  fgd_random["published"]["policy"] = "01-Random";
  const json compare = {{"experiment", "compare"},
                        {"results",
                         {ReplayResult("fifo", 1), ReplayResult("sjf", 0.5),
                          ReplayResult("las", 0.75), FgdResult(), fgd_random}}};
  const std::string html = RenderHtmlReport(compare);
  ExpectSelfContained(html);

  const std::string jct = ChartTitled(html, "JCT CDF per policy");
  EXPECT_EQ(SeriesCount(jct), 3);
  EXPECT_EQ(LegendCount(jct), 3);
  for (const char* policy : {"fifo", "sjf", "las"}) {
    EXPECT_THAT(jct, HasSubstr(std::string(">") + policy + "</text>"));
  }
  EXPECT_EQ(SeriesCount(ChartTitled(html, "Queue-time CDF per policy")), 3);
  EXPECT_EQ(SeriesCount(ChartTitled(html, "GPU allocation over time per policy")), 3);
  // Two policies and their two published curves.
  const std::string allocation = ChartTitled(html, "GPU allocation ratio vs arrived GPU demand");
  EXPECT_EQ(SeriesCount(allocation), 4);
  EXPECT_EQ(LegendCount(allocation), 4);
  // 2 published lines + 2 legend samples, and random's line (equal to fgd's) with its sample.
  EXPECT_EQ(Occurrences(allocation, "stroke-dasharray"), 6);
  EXPECT_THAT(allocation, HasSubstr(">fgd = random</text>"));
  // The summary row of sjf holds its mean JCT.
  EXPECT_THAT(html, HasSubstr("<td>sjf</td><td class=\"num\">4</td><td class=\"num\">3</td>"
                              "<td class=\"num\">1</td><td class=\"num\">1862.8"));
  EXPECT_THAT(html, HasSubstr("<th>fifo mean (s)</th>"));

  const std::string text = RenderTextReport(compare);
  EXPECT_THAT(text, testing::ContainsRegex("\nsjf +1 +31m03s"));
  EXPECT_THAT(text, testing::ContainsRegex("\nrandom +92\\.50 +93\\.75 +94\\.50 +95\\.40 +94\\.90 "
                                           "+\\+0\\.50 +4\\.00\n"));
}

TEST(CompareReport, SamePoliciesAreNumberedApart) {
  const json compare = {{"experiment", "compare"},
                        {"results", {ReplayResult("fifo", 1), ReplayResult("fifo", 2)}}};
  const std::string jct = ChartTitled(RenderHtmlReport(compare), "JCT CDF per policy");
  EXPECT_THAT(jct, HasSubstr(">fifo</text>"));
  EXPECT_THAT(jct, HasSubstr(">fifo #2</text>"));
}

json WhatIfResult() {
  json result = {{"experiment", "what-if"},
                 {"before", ReplayResult("fair-share", 1)},
                 {"after", ReplayResult("new.yaml", 0.5)}};
  result["per_team"] = json::parse(R"({
    "t1": {"before": {"mean": 100, "p50": 50, "p95": 300},
           "after": {"mean": 130, "p50": 50, "p95": 290},
           "difference": {"mean": 30, "p50": 0, "p95": -10}},
    "t2": {"before": {"mean": 400, "p50": 200, "p95": 900},
           "after": {"mean": 388, "p50": 150, "p95": 800}}
  })");
  return result;
}

TEST(WhatIfReport, ShowsPerTeamDifferencesAndBeforeAgainstAfter) {
  const std::string html = RenderHtmlReport(WhatIfResult());
  ExpectSelfContained(html);
  EXPECT_THAT(html,
              HasSubstr("<td>t1</td><td class=\"num\">100.0<span class=\"human\">1m40s</span></td>"
                        "<td class=\"num\">50.0</td><td class=\"num\">300.0"));
  EXPECT_THAT(html, HasSubstr("<td class=\"num\">+30.0</td><td class=\"num\">0.0</td>"
                              "<td class=\"num\">-10.0</td>"));
  // t2 has no "difference": computed as after - before.
  EXPECT_THAT(html, HasSubstr("<td class=\"num\">-12.0</td><td class=\"num\">-50.0</td>"
                              "<td class=\"num\">-100.0<span class=\"human\">-1m40s</span></td>"));
  const std::string jct = ChartTitled(html, "JCT CDF per policy");
  EXPECT_EQ(SeriesCount(jct), 2);
  EXPECT_THAT(jct, HasSubstr(">before: fair-share</text>"));
  EXPECT_THAT(jct, HasSubstr(">after: new.yaml</text>"));

  const std::string text = RenderTextReport(WhatIfResult());
  EXPECT_THAT(text, HasSubstr("before: fair-share"));
  // t1 changed most (|+30| > |-12|): listed first.
  EXPECT_LT(text.find("\nt1 "), text.find("\nt2 "));
  EXPECT_THAT(text, testing::ContainsRegex("\nt2 +6m40s +6m28s +-12\\.0s +15m00s +13m20s "
                                           "+-1m40s\n"));
}

// ---------------------------------------------------------------------------------------------
// Malformed input.

TEST(MalformedInput, WrongTypesDegradeToNotesAndNA) {
  const json replay = json::parse(R"({
    "experiment": "replay", "policy": 7, "jobs": "many", "jct_seconds": [1, 2],
    "queue_seconds": {"mean": "x"}, "job_rows": "x", "per_queue": 5,
    "gpu_allocation_over_time": [[1], [2, "a"], "z", [3, 40]],
    "queue_share_over_time": [], "lifecycle_seconds": {"queue": -1}
  })");
  const std::string html = RenderHtmlReport(replay);
  ExpectSelfContained(html);
  EXPECT_THAT(html, HasSubstr("n/a"));
  EXPECT_THAT(html, HasSubstr("class=\"note\""));
  EXPECT_THAT(html, HasSubstr("No &quot;queue_share_over_time&quot;"));
  EXPECT_THAT(RenderTextReport(replay), HasSubstr("Replay: policy ?, n/a jobs"));

  const json fgd = json::parse(R"({
    "experiment": "fgd", "allocation_ratio_at": {"abc": 5, "10": "x", "20": 3, "-5x": 1},
    "fragmentation_at": null, "seeds": "all", "published": [1], "runs": {"a": 1}
  })");
  const std::string fgd_html = RenderHtmlReport(fgd);
  ExpectSelfContained(fgd_html);
  const std::string allocation =
      ChartTitled(fgd_html, "GPU allocation ratio vs arrived GPU demand");
  EXPECT_EQ(SeriesCount(allocation), 1);
  EXPECT_THAT(allocation, HasSubstr("<circle"));  // the one valid point
  EXPECT_THAT(fgd_html, HasSubstr("no &quot;fragmentation_at&quot;"));
  EXPECT_THAT(RenderTextReport(fgd), HasSubstr("published: none"));

  for (const json& odd :
       {json(nullptr), json::array({1, 2}), json("text"), json::object(),
        json{{"experiment", "bogus"}, {"x", 1}}, json{{"experiment", "compare"}},
        json{{"experiment", "compare"}, {"results", {1, json{{"experiment", "nope"}}}}},
        json{{"experiment", "what-if"}, {"before", 3}}}) {
    const std::string page = RenderHtmlReport(odd);
    ExpectSelfContained(page);
    EXPECT_THAT(page, HasSubstr("class=\"note\"")) << odd.dump();
    EXPECT_FALSE(RenderTextReport(odd).empty());
  }
  EXPECT_THAT(RenderHtmlReport(json{{"experiment", "bogus"}, {"x", 1}}),
              HasSubstr("Unknown experiment &quot;bogus&quot;"));
}

TEST(MalformedInput, TextFromTheResultNeverBecomesMarkupOrALink) {
  json result = ReplayResult("<script>alert(1)</script>", 1);
  result["job_rows"][0]["queue"] = "https://example.com/q";
  result["per_queue"]["http://x"] = result["per_queue"]["prod"];
  const std::string html = RenderHtmlReport(result);
  ExpectSelfContained(html);
  EXPECT_THAT(html, HasSubstr("&lt;script&gt;"));
  EXPECT_THAT(html, HasSubstr("https&#58;//example.com/q"));
}

TEST(Determinism, SameResultSameBytes) {
  const json compare = {{"experiment", "compare"},
                        {"results", {ReplayResult("fifo", 1), FgdResult()}}};
  const json copy = json::parse(compare.dump());
  EXPECT_EQ(RenderHtmlReport(compare), RenderHtmlReport(copy));
  EXPECT_EQ(RenderTextReport(compare), RenderTextReport(copy));
}

// The checker itself.
TEST(WellFormedChecker, AcceptsBalancedAndRejectsBrokenMarkup) {
  EXPECT_EQ(CheckWellFormed("<svg a=\"1\"><g><line x=\"2\"/></g><text>a &amp; b</text></svg>"), "");
  EXPECT_NE(CheckWellFormed("<svg><g></svg>"), "");
  EXPECT_NE(CheckWellFormed("<svg><g>"), "");
  EXPECT_NE(CheckWellFormed("<svg a=1></svg>"), "");
  EXPECT_NE(CheckWellFormed("<svg>a & b</svg>"), "");
  EXPECT_NE(CheckWellFormed("<svg a=\"<\"></svg>"), "");
}

}  // namespace
}  // namespace drover::sim
