#pragma once

// The pieces every section of the simulation reports shares, internal to drover/sim/report
// (report.h is the public face): reading the result JSON without throwing, formatting numbers
// and durations, tables rendered as HTML or as aligned text, the HTML page, and results labeled
// for display. All of it is pure and deterministic (no clock, no locale); none of it throws on
// odd JSON.

#include <cstddef>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "drover/sim/report/svg_plot.h"

namespace drover::sim::report_internal {

// Short spellings for the report's own files (this namespace is internal).
using nlohmann::json;
using plot::Point;

// ---------------------------------------------------------------------------------------------
// Reading JSON without throwing: every accessor takes a possibly-null pointer and answers
// nullptr / nullopt / the fallback for anything missing or of the wrong type. Returned pointers
// point into `object` and live as long as it does.

const json* Field(const json* object, const std::string& key);
// A finite number; NaN and infinities read as missing.
std::optional<double> Number(const json* value);
std::optional<double> NumberAt(const json* object, const std::string& key);
std::string TextAt(const json* object, const std::string& key, std::string fallback = "");
bool IsObject(const json* value);

// A "*_at" map ({"0": 0.25, ..., "130": 95.4}) as points sorted by demand; keys that are not
// integers and values that are not numbers are skipped.
std::vector<Point> AtCurve(const json* map);
// The value of a "*_at" map at `demand`.
std::optional<double> AtValue(const json* map, int demand);

// [[t, v], ...] as points, thinned to at most 2,000 (every k-th and the last); pairs that are
// not two numbers are skipped.
std::vector<Point> PairSeries(const json* array);

// ---------------------------------------------------------------------------------------------
// Formatting. A missing value (nullopt) is written "n/a".

// `decimals` places; a negative zero ("-0.00") is written without its sign.
std::string Fixed(std::optional<double> v, int decimals);
// As Fixed, with "+" before a value that is not negative.
std::string SignedFixed(std::optional<double> v, int decimals);
// A count: no decimals when whole.
std::string Count(std::optional<double> v);
// Seconds for people: "45.2s", "3m12s", "2h05m", "1d03h".
std::string Human(std::optional<double> seconds);
// "42..51 (10 seeds)", "42", "1, 5, 9" for a JSON array of seeds.
std::string Seeds(const json* seeds);
// Display width of UTF-8 text: one per code point.
std::size_t Width(std::string_view text);

// ---------------------------------------------------------------------------------------------
// Tables, rendered either as HTML or as aligned text.

struct Cell {
  std::string text;   // what HTML shows (and text, unless `human` is set)
  std::string human;  // the people's form, shown by text; HTML adds it under `text` if `aside`
  bool aside = false;
  bool number = false;
};

Cell Plain(std::string text);
// Right-aligned.
Cell Num(std::string text);
Cell Percent(std::optional<double> v);
Cell SignedPoints(std::optional<double> v);
// Seconds with one decimal; from a minute on, HTML shows the people's form under it.
Cell Seconds(std::optional<double> v);

struct Table {
  std::vector<std::string> header;
  std::vector<std::vector<Cell>> rows;
};

std::string HtmlEscape(std::string_view text);

// With `header` false the header row is left out (a list of facts).
std::string RenderHtmlTable(const Table& table, bool header = true);
// Columns padded to their widest cell, two spaces apart, all but the first right-aligned; no
// trailing spaces. Cells beyond the header's columns are left out.
std::string RenderTextTable(const Table& table);

// ---------------------------------------------------------------------------------------------
// The HTML page: built up section by section, then finished into one document. Every text is
// escaped. Not thread-safe (a plain value).

class Page {
 public:
  void Heading(int level, std::string_view text);
  void Paragraph(std::string_view text, std::string_view css_class = "");
  void Note(std::string_view text);
  void AddTable(const Table& table);
  void Chart(const plot::Chart& chart, const std::vector<plot::Series>& series);
  // Two columns: name, value.
  void Facts(const std::vector<std::pair<std::string, Cell>>& facts);

  // The whole document. "://" is written as "&#58;//" so that no text taken from the result
  // reads as a URL: the page links to nothing.
  std::string Finish(std::string_view title) const;

 private:
  std::string body_;
};

// ---------------------------------------------------------------------------------------------
// Results with their display labels.

struct Labeled {
  std::string label;
  const json* result = nullptr;  // not owned
};

// Each result labeled by its policy (or "result N"); repeated labels get " #2", " #3".
std::vector<Labeled> LabelResults(const std::vector<const json*>& results);

}  // namespace drover::sim::report_internal
