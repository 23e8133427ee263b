// The shared pieces of the simulation reports (report_parts.h), internal to drover/sim/report.

#include "drover/sim/report/report_parts.h"

#include <fmt/format.h>

#include <algorithm>
#include <charconv>
#include <cmath>
#include <map>

namespace drover::sim::report_internal {
namespace {

constexpr std::size_t kMaxTimePoints = 2000;  // per over-time line

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

}  // namespace

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

std::string TextAt(const json* object, const std::string& key, std::string fallback) {
  const json* v = Field(object, key);
  if (v != nullptr && v->is_string()) return v->get<std::string>();
  return fallback;
}

bool IsObject(const json* value) { return value != nullptr && value->is_object(); }

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

std::string Count(std::optional<double> v) {
  if (!v) return "n/a";
  return *v == std::floor(*v) && std::abs(*v) < 1e15 ? fmt::format("{}", std::llround(*v))
                                                     : Fixed(v, 2);
}

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

std::size_t Width(std::string_view text) {
  std::size_t n = 0;
  for (char c : text) n += (static_cast<unsigned char>(c) & 0xC0) != 0x80;
  return n;
}

Cell Plain(std::string text) { return Cell{std::move(text), "", false, false}; }
Cell Num(std::string text) { return Cell{std::move(text), "", false, true}; }
Cell Percent(std::optional<double> v) { return Num(Fixed(v, 2)); }
Cell SignedPoints(std::optional<double> v) { return Num(SignedFixed(v, 2)); }
Cell Seconds(std::optional<double> v) {
  return Cell{Fixed(v, 1), Human(v), v && std::abs(*v) >= 60, true};
}

std::string HtmlEscape(std::string_view text) { return plot::EscapeXml(text); }

std::string RenderHtmlTable(const Table& table, bool header) {
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

void Page::Heading(int level, std::string_view text) {
  body_ += fmt::format("<h{0}>{1}</h{0}>\n", level, HtmlEscape(text));
}

void Page::Paragraph(std::string_view text, std::string_view css_class) {
  body_ += css_class.empty() ? "<p>" : fmt::format("<p class=\"{}\">", css_class);
  body_ += HtmlEscape(text) + "</p>\n";
}

void Page::Note(std::string_view text) { Paragraph(text, "note"); }

void Page::AddTable(const Table& table) { body_ += RenderHtmlTable(table); }

void Page::Chart(const plot::Chart& chart, const std::vector<plot::Series>& series) {
  body_ += plot::RenderLineChart(chart, series);
}

void Page::Facts(const std::vector<std::pair<std::string, Cell>>& facts) {
  Table table{{"", ""}, {}};
  for (const auto& [name, value] : facts) table.rows.push_back({Plain(name), value});
  body_ += RenderHtmlTable(table, /*header=*/false);
}

std::string Page::Finish(std::string_view title) const {
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

std::vector<Labeled> LabelResults(const std::vector<const json*>& results) {
  std::vector<Labeled> out;
  std::map<std::string, int> seen;
  for (std::size_t i = 0; i < results.size(); ++i) {
    std::string label = TextAt(results[i], "policy");
    if (label.empty()) label = TextAt(results[i], "policy_name");
    if (label.empty()) label = fmt::format("result {}", i + 1);
    const int n = ++seen[label];
    if (n > 1) label += fmt::format(" #{}", n);
    out.push_back({label, results[i]});
  }
  return out;
}

}  // namespace drover::sim::report_internal
