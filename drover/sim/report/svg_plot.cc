#include "drover/sim/report/svg_plot.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstddef>
#include <utility>

namespace drover::sim::plot {
namespace {

// Colorblind-friendly enough, distinct on white; series beyond ten reuse the colors.
constexpr std::array<std::string_view, 10> kPalette = {"#1f77b4", "#d62728", "#2ca02c", "#ff7f0e",
                                                       "#9467bd", "#8c564b", "#e377c2", "#17becf",
                                                       "#7f7f7f", "#bcbd22"};

constexpr int kMarginLeft = 72;
constexpr int kMarginTop = 36;
constexpr int kMarginBottom = 52;
constexpr int kLegendWidth = 200;
constexpr int kLegendRow = 18;
constexpr std::size_t kLegendChars = 28;
constexpr int kMaxTicks = 7;
// Markers drawn on each line (fewer when it has fewer distinct points) and their half-size.
constexpr std::size_t kMarkersPerSeries = 6;
constexpr double kMarkerRadius = 3.5;
// The dash patterns of a line drawn over an identical earlier one, in turn: the earlier shows
// through the gaps. A series asked to be dashed (Series::dashed) and not such a repeat: kDashed.
constexpr std::array<std::string_view, 4> kRepeatDashes = {"9 6", "2 4", "12 4 2 4", "4 3"};
constexpr std::string_view kDashed = "6 4";

enum class Shape { kCircle, kSquare, kTriangle, kDiamond, kPlus, kCross };
constexpr std::array<Shape, 6> kShapes = {Shape::kCircle,  Shape::kSquare, Shape::kTriangle,
                                          Shape::kDiamond, Shape::kPlus,   Shape::kCross};

// 1, 2, 2.5 or 5 times a power of ten, the smallest such value >= raw (raw > 0).
double NiceStep(double raw) {
  if (!(raw > 0) || !std::isfinite(raw)) return 1;
  const double power = std::pow(10.0, std::floor(std::log10(raw)));
  const double m = raw / power;
  if (m <= 1 + 1e-9) return power;
  if (m <= 2 + 1e-9) return 2 * power;
  if (m <= 2.5 + 1e-9) return 2.5 * power;
  if (m <= 5 + 1e-9) return 5 * power;
  return 10 * power;
}

// One axis: its range in data units and the transformation to [0, 1].
struct Axis {
  double lo = 0;
  double hi = 1;
  bool log = false;
  std::vector<double> ticks;

  double Fraction(double v) const {
    if (log) {
      if (!(v > lo)) return 0;
      return (std::log10(v) - std::log10(lo)) / (std::log10(hi) - std::log10(lo));
    }
    return (v - lo) / (hi - lo);
  }
};

Axis LinearAxis(std::optional<double> want_lo, std::optional<double> want_hi, double data_lo,
                double data_hi) {
  double lo = want_lo.value_or(data_lo);
  double hi = want_hi.value_or(data_hi);
  if (!std::isfinite(lo)) lo = 0;
  if (!std::isfinite(hi)) hi = lo + 1;
  if (!(hi > lo)) {
    const double widen = std::max(1.0, std::abs(lo) * 0.1);
    if (!want_hi) {
      hi = lo + widen;
    } else {
      lo = hi - widen;
    }
  }
  const double step = NiceStep((hi - lo) / (kMaxTicks - 1));
  if (!want_lo) lo = std::floor(lo / step + 1e-9) * step;
  if (!want_hi) hi = std::ceil(hi / step - 1e-9) * step;
  Axis axis;
  axis.lo = lo;
  axis.hi = hi;
  axis.ticks = LinearTicks(lo, hi, kMaxTicks);
  return axis;
}

// The largest 1, 2 or 5 times a power of ten <= v (v > 0).
double RoundDownOneTwoFive(double v) {
  const double power = std::pow(10.0, std::floor(std::log10(v) + 1e-12));
  for (double m : {5.0, 2.0, 1.0}) {
    if (m * power <= v * (1 + 1e-12)) return m * power;
  }
  return power;
}

// The smallest 1, 2 or 5 times a power of ten >= v (v > 0).
double RoundUpOneTwoFive(double v) {
  const double power = std::pow(10.0, std::floor(std::log10(v) + 1e-12));
  for (double m : {1.0, 2.0, 5.0}) {
    if (m * power >= v * (1 - 1e-12)) return m * power;
  }
  return 10 * power;
}

Axis LogAxis(std::optional<double> want_lo, std::optional<double> want_hi, double positive_lo,
             double data_hi) {
  double lo = want_lo && *want_lo > 0 ? *want_lo : RoundDownOneTwoFive(positive_lo);
  double hi = want_hi && *want_hi > lo ? *want_hi : RoundUpOneTwoFive(std::max(data_hi, lo));
  if (!(hi > lo)) hi = lo * 10;
  Axis axis;
  axis.lo = lo;
  axis.hi = hi;
  axis.log = true;
  axis.ticks = LogTicks(lo, hi);
  return axis;
}

// A coordinate with one decimal; -0 printed as 0.
std::string Coord(double v) {
  std::string s = fmt::format("{:.1f}", v);
  return s == "-0.0" ? "0.0" : s;
}

// The first `max_chars` bytes of `text`, cut before a UTF-8 continuation byte, with "..." when
// shortened.
std::string Truncate(const std::string& text, std::size_t max_chars) {
  if (text.size() <= max_chars) return text;
  std::size_t cut = max_chars - 3;
  while (cut > 0 && (static_cast<unsigned char>(text[cut]) & 0xC0) == 0x80) --cut;
  return text.substr(0, cut) + "...";
}

// A marker of `shape` centred on (x, y) in `color`: filled shapes, or stroked for + and x.
std::string Marker(Shape shape, double x, double y, std::string_view color) {
  const double r = kMarkerRadius;
  auto at = [&](double dx, double dy) { return Coord(x + dx) + " " + Coord(y + dy); };
  std::string d;
  switch (shape) {
    case Shape::kCircle:
      return fmt::format("<circle class=\"marker\" cx=\"{}\" cy=\"{}\" r=\"{}\" fill=\"{}\"/>",
                         Coord(x), Coord(y), Coord(r), color);
    case Shape::kSquare:
      d = fmt::format("M{} L{} L{} L{} Z", at(-r, -r), at(r, -r), at(r, r), at(-r, r));
      break;
    case Shape::kTriangle:
      d = fmt::format("M{} L{} L{} Z", at(0, -r * 1.2), at(r * 1.1, r * 0.8),
                      at(-r * 1.1, r * 0.8));
      break;
    case Shape::kDiamond:
      d = fmt::format("M{} L{} L{} L{} Z", at(0, -r * 1.3), at(r, 0), at(0, r * 1.3), at(-r, 0));
      break;
    case Shape::kPlus:
      return fmt::format(
          "<path class=\"marker\" d=\"M{} L{} M{} L{}\" stroke=\"{}\" stroke-width=\"2\"/>",
          at(-r, 0), at(r, 0), at(0, -r), at(0, r), color);
    case Shape::kCross:
      return fmt::format(
          "<path class=\"marker\" d=\"M{} L{} M{} L{}\" stroke=\"{}\" stroke-width=\"2\"/>",
          at(-r, -r), at(r, r), at(-r, r), at(r, -r), color);
  }
  return fmt::format("<path class=\"marker\" d=\"{}\" fill=\"{}\"/>", d, color);
}

// One series as drawn: its SVG path and the distinct pixel points on it.
struct Drawn {
  std::string d;
  std::vector<std::pair<double, double>> pixels;
};

// Series whose drawn paths are identical, in series order: `repeat_of[i]` is the first series
// with the same path (i itself for the first or a series with nothing drawn), `rank[i]` how
// many before i share it.
struct Coincidence {
  std::vector<std::size_t> repeat_of;
  std::vector<std::size_t> rank;
};

Coincidence FindCoincidences(const std::vector<Drawn>& drawn) {
  Coincidence c{std::vector<std::size_t>(drawn.size()), std::vector<std::size_t>(drawn.size(), 0)};
  for (std::size_t i = 0; i < drawn.size(); ++i) {
    c.repeat_of[i] = i;
    if (drawn[i].pixels.empty()) continue;
    for (std::size_t j = 0; j < i; ++j) {
      if (c.repeat_of[j] == j && drawn[j].d == drawn[i].d) {
        c.repeat_of[i] = j;
        break;
      }
    }
    for (std::size_t j = 0; j < i; ++j) c.rank[i] += c.repeat_of[j] == c.repeat_of[i] ? 1 : 0;
  }
  return c;
}

bool SamePoints(const std::vector<Point>& a, const std::vector<Point>& b) {
  return std::equal(a.begin(), a.end(), b.begin(), b.end(),
                    [](const Point& p, const Point& q) { return p.x == q.x && p.y == q.y; });
}

// The legend's notes on coinciding series: "fifo = las" (the same points) or "fifo ~ las
// (same line)" (different points drawn on the same pixels), one per group.
std::vector<std::string> CoincidenceNotes(const std::vector<Series>& series, const Coincidence& c) {
  std::vector<std::string> notes;
  for (std::size_t first = 0; first < series.size(); ++first) {
    if (c.repeat_of[first] != first) continue;
    std::vector<std::string> names = {series[first].label};
    bool exact = true;
    for (std::size_t i = first + 1; i < series.size(); ++i) {
      if (c.repeat_of[i] != first) continue;
      names.push_back(series[i].label);
      exact = exact && SamePoints(series[first].points, series[i].points);
    }
    if (names.size() == 1) continue;
    std::string note = fmt::format("{}", fmt::join(names, exact ? " = " : " ~ "));
    notes.push_back(exact ? note : note + " (same line)");
  }
  return notes;
}

}  // namespace

std::string_view PaletteColor(int i) {
  const int n = static_cast<int>(kPalette.size());
  return kPalette[static_cast<std::size_t>(((i % n) + n) % n)];
}

std::string EscapeXml(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  for (char c : text) {
    switch (c) {
      case '&':
        out += "&amp;";
        break;
      case '<':
        out += "&lt;";
        break;
      case '>':
        out += "&gt;";
        break;
      case '"':
        out += "&quot;";
        break;
      case '\'':
        out += "&#39;";
        break;
      default:
        out += c;
    }
  }
  return out;
}

std::string FormatTick(double value) {
  if (value == 0) return "0";
  const double magnitude = std::abs(value);
  if (magnitude >= 1e6) return fmt::format("{:g}M", value / 1e6);
  if (magnitude >= 1e4) return fmt::format("{:g}k", value / 1e3);
  return fmt::format("{:g}", value);
}

std::vector<double> LinearTicks(double lo, double hi, int max_ticks) {
  std::vector<double> ticks;
  if (!std::isfinite(lo) || !std::isfinite(hi) || !(hi > lo)) return ticks;
  const double step = NiceStep((hi - lo) / std::max(1, max_ticks - 1));
  const auto first = static_cast<long long>(std::ceil(lo / step - 1e-9));
  const auto last = static_cast<long long>(std::floor(hi / step + 1e-9));
  for (long long k = first; k <= last; ++k) ticks.push_back(static_cast<double>(k) * step + 0.0);
  return ticks;
}

std::vector<double> LogTicks(double lo, double hi) {
  std::vector<double> ticks;
  if (!(lo > 0) || !(hi > lo) || !std::isfinite(hi)) return ticks;
  const int first = static_cast<int>(std::floor(std::log10(lo) + 1e-9));
  const int last = static_cast<int>(std::ceil(std::log10(hi) - 1e-9));
  const bool fine = last - first < 3;
  for (int e = first; e <= last; ++e) {
    const double power = std::pow(10.0, e);
    for (double m : {1.0, 2.0, 5.0}) {
      if (m != 1.0 && !fine) continue;
      const double v = m * power;
      if (v >= lo * (1 - 1e-9) && v <= hi * (1 + 1e-9)) ticks.push_back(v);
    }
  }
  return ticks;
}

std::vector<Point> EmpiricalCdf(std::vector<double> values) {
  constexpr std::size_t kMaxSteps = 1000;
  std::erase_if(values, [](double v) { return !std::isfinite(v); });
  std::vector<Point> points;
  if (values.empty()) return points;
  std::sort(values.begin(), values.end());
  const std::size_t n = values.size();
  if (n > kMaxSteps) {
    // Dense: the quantiles at kMaxSteps even steps, joined directly.
    points.push_back({values.front(), 0});
    for (std::size_t k = 1; k <= kMaxSteps; ++k) {
      const std::size_t rank = (k * n + kMaxSteps - 1) / kMaxSteps;  // ceil(k/kMaxSteps * n)
      points.push_back({values[rank - 1], 100.0 * static_cast<double>(rank) / n});
    }
    return points;
  }
  points.push_back({values.front(), 0});
  double previous = 0;
  for (std::size_t i = 0; i < n;) {
    std::size_t j = i;
    while (j < n && values[j] == values[i]) ++j;
    const double percent = 100.0 * static_cast<double>(j) / static_cast<double>(n);
    if (i > 0) points.push_back({values[i], previous});
    points.push_back({values[i], percent});
    previous = percent;
    i = j;
  }
  return points;
}

std::string RenderLineChart(const Chart& chart, const std::vector<Series>& series) {
  // Data bounds over finite points.
  bool any = false;
  double x_lo = 0, x_hi = 0, y_lo = 0, y_hi = 0, positive_x_lo = 0;
  bool any_positive_x = false;
  for (const Series& s : series) {
    for (const Point& p : s.points) {
      if (!std::isfinite(p.x) || !std::isfinite(p.y)) continue;
      if (!any) {
        x_lo = x_hi = p.x;
        y_lo = y_hi = p.y;
        any = true;
      }
      x_lo = std::min(x_lo, p.x);
      x_hi = std::max(x_hi, p.x);
      y_lo = std::min(y_lo, p.y);
      y_hi = std::max(y_hi, p.y);
      if (p.x > 0) {
        positive_x_lo = any_positive_x ? std::min(positive_x_lo, p.x) : p.x;
        any_positive_x = true;
      }
    }
  }
  const Axis x_axis = chart.log_x && any_positive_x
                          ? LogAxis(chart.x_min, chart.x_max, positive_x_lo, x_hi)
                          : LinearAxis(chart.x_min, chart.x_max, x_lo, x_hi);
  const Axis y_axis = LinearAxis(chart.y_min, chart.y_max, y_lo, y_hi);

  const int width = std::max(chart.width, kMarginLeft + kLegendWidth + 160);
  // The legend's rows: one per series, then one per group of coinciding series (known only
  // once drawn; at most half the series, so room for that much is kept).
  const int legend_rows = static_cast<int>(series.size() + series.size() / 2);
  const int legend_height = legend_rows * kLegendRow + 16;
  const int height =
      std::max({chart.height, kMarginTop + kMarginBottom + 120, kMarginTop + legend_height + 8});
  const double px0 = kMarginLeft;
  const double px1 = width - kLegendWidth - 12;
  const double py0 = kMarginTop;
  const double py1 = height - kMarginBottom;
  auto sx = [&](double x) { return px0 + std::clamp(x_axis.Fraction(x), 0.0, 1.0) * (px1 - px0); };
  auto sy = [&](double y) { return py1 - std::clamp(y_axis.Fraction(y), 0.0, 1.0) * (py1 - py0); };

  std::string out;
  out += fmt::format(
      "<svg class=\"chart\" width=\"{}\" height=\"{}\" viewBox=\"0 0 {} {}\" role=\"img\" "
      "font-family=\"sans-serif\" font-size=\"11\">\n",
      width, height, width, height);
  out += fmt::format("<title>{}</title>\n", EscapeXml(chart.title));
  out += fmt::format(
      "<text class=\"chart-title\" x=\"{}\" y=\"20\" font-size=\"14\" "
      "font-weight=\"bold\">{}</text>\n",
      Coord(px0), EscapeXml(chart.title));

  // Grid and ticks. The x label says "log scale" exactly when the axis maps log10(x).
  const std::string x_label = !x_axis.log             ? chart.x_label
                              : chart.x_label.empty() ? "log scale"
                                                      : chart.x_label + " (log scale)";
  out += "<g class=\"x-axis\">\n";
  for (double t : x_axis.ticks) {
    const std::string x = Coord(sx(t));
    out += fmt::format(
        "<line x1=\"{0}\" y1=\"{1}\" x2=\"{0}\" y2=\"{2}\" stroke=\"#e5e5e5\"/>"
        "<line x1=\"{0}\" y1=\"{2}\" x2=\"{0}\" y2=\"{3}\" stroke=\"#333\"/>"
        "<text class=\"tick\" x=\"{0}\" y=\"{4}\" text-anchor=\"middle\">{5}</text>\n",
        x, Coord(py0), Coord(py1), Coord(py1 + 5), Coord(py1 + 17), EscapeXml(FormatTick(t)));
  }
  out +=
      fmt::format("<text class=\"axis-label\" x=\"{}\" y=\"{}\" text-anchor=\"middle\">{}</text>\n",
                  Coord((px0 + px1) / 2), height - 12, EscapeXml(x_label));
  out += "</g>\n<g class=\"y-axis\">\n";
  for (double t : y_axis.ticks) {
    const std::string y = Coord(sy(t));
    out += fmt::format(
        "<line x1=\"{0}\" y1=\"{1}\" x2=\"{2}\" y2=\"{1}\" stroke=\"#e5e5e5\"/>"
        "<line x1=\"{3}\" y1=\"{1}\" x2=\"{0}\" y2=\"{1}\" stroke=\"#333\"/>"
        "<text class=\"tick\" x=\"{4}\" y=\"{1}\" dy=\"4\" text-anchor=\"end\">{5}</text>\n",
        Coord(px0), y, Coord(px1), Coord(px0 - 5), Coord(px0 - 8), EscapeXml(FormatTick(t)));
  }
  out += fmt::format(
      "<text class=\"axis-label\" transform=\"translate(16 {}) rotate(-90)\" "
      "text-anchor=\"middle\">{}</text>\n",
      Coord((py0 + py1) / 2), EscapeXml(chart.y_label));
  out += "</g>\n";
  out += fmt::format(
      "<rect x=\"{}\" y=\"{}\" width=\"{}\" height=\"{}\" fill=\"none\" stroke=\"#333\"/>\n",
      Coord(px0), Coord(py0), Coord(px1 - px0), Coord(py1 - py0));
  if (!any) {
    out += fmt::format(
        "<text class=\"no-data\" x=\"{}\" y=\"{}\" text-anchor=\"middle\" fill=\"#777\">no "
        "data</text>\n",
        Coord((px0 + px1) / 2), Coord((py0 + py1) / 2));
  }

  // Series: each path, then its markers (a shape per series, spread along its points and
  // staggered by its position, so that the markers of coinciding lines do not cover each other).
  std::vector<Drawn> drawn(series.size());
  for (std::size_t i = 0; i < series.size(); ++i) {
    std::string last_xy;
    bool pen_down = false;
    for (const Point& p : series[i].points) {
      if (!std::isfinite(p.x) || !std::isfinite(p.y)) {
        pen_down = false;
        continue;
      }
      const double x = sx(p.x), y = sy(p.y);
      const std::string xy = Coord(x) + " " + Coord(y);
      if (pen_down && xy == last_xy) continue;  // same pixel: adds nothing
      if (!drawn[i].d.empty()) drawn[i].d += ' ';
      drawn[i].d += (pen_down ? 'L' : 'M') + xy;
      drawn[i].pixels.push_back({x, y});
      pen_down = true;
      last_xy = xy;
    }
  }
  const Coincidence coincidence = FindCoincidences(drawn);
  auto color_of = [&](std::size_t i) {
    return PaletteColor(series[i].color >= 0 ? series[i].color : static_cast<int>(i));
  };
  auto dash_of = [&](std::size_t i) -> std::string_view {
    if (coincidence.rank[i] > 0)
      return kRepeatDashes[(coincidence.rank[i] - 1) % kRepeatDashes.size()];
    return series[i].dashed ? kDashed : "";
  };
  auto dash_attribute = [&](std::size_t i) {
    const std::string_view dash = dash_of(i);
    return dash.empty() ? std::string() : fmt::format(" stroke-dasharray=\"{}\"", dash);
  };
  for (std::size_t i = 0; i < series.size(); ++i) {
    const std::string_view color = color_of(i);
    out += fmt::format(
        "<path class=\"series\" d=\"{}\" fill=\"none\" stroke=\"{}\" stroke-width=\"{}\"{}>"
        "<title>{}</title></path>\n",
        drawn[i].d.empty() ? "M0 0" : drawn[i].d, color, dash_of(i).empty() ? "2" : "1.6",
        dash_attribute(i), EscapeXml(series[i].label));
    const auto& pixels = drawn[i].pixels;
    const std::size_t markers = std::min(kMarkersPerSeries, pixels.size());
    const double stagger = static_cast<double>(i + 1) / static_cast<double>(series.size() + 1);
    for (std::size_t k = 0; k < markers; ++k) {
      const auto at = static_cast<std::size_t>((static_cast<double>(k) + stagger) *
                                               static_cast<double>(pixels.size()) /
                                               static_cast<double>(markers));
      const auto& [x, y] = pixels[std::min(at, pixels.size() - 1)];
      out += Marker(kShapes[i % kShapes.size()], x, y, color) + "\n";
    }
  }

  // Legend: a sample of each line (its dash and marker), then which lines coincide.
  out += "<g class=\"legend\">\n";
  const double lx = px1 + 14;
  for (std::size_t i = 0; i < series.size(); ++i) {
    const Series& s = series[i];
    const std::string_view color = color_of(i);
    const double ly = py0 + 10 + static_cast<double>(i) * kLegendRow;
    out += fmt::format(
        "<g class=\"legend-entry\"><title>{}</title><line x1=\"{}\" y1=\"{}\" x2=\"{}\" "
        "y2=\"{}\" stroke=\"{}\" stroke-width=\"2\"{}/>{}<text x=\"{}\" y=\"{}\">{}</text></g>\n",
        EscapeXml(s.label), Coord(lx), Coord(ly), Coord(lx + 22), Coord(ly), color,
        dash_attribute(i), Marker(kShapes[i % kShapes.size()], lx + 11, ly, color), Coord(lx + 28),
        Coord(ly + 4), EscapeXml(Truncate(s.label, kLegendChars)));
  }
  const std::vector<std::string> notes = CoincidenceNotes(series, coincidence);
  for (std::size_t n = 0; n < notes.size(); ++n) {
    const double ly = py0 + 10 + static_cast<double>(series.size() + n) * kLegendRow;
    out += fmt::format(
        "<text class=\"legend-note\" x=\"{}\" y=\"{}\" fill=\"#555\"><title>{}</title>{}</text>\n",
        Coord(lx), Coord(ly + 4), EscapeXml(notes[n]),
        EscapeXml(Truncate(notes[n], kLegendChars + 4)));
  }
  out += "</g>\n</svg>\n";
  return out;
}

}  // namespace drover::sim::plot
