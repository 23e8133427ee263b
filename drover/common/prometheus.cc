#include "drover/common/prometheus.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

namespace drover::prometheus {

bool IsMetricName(std::string_view name) {
  return !name.empty() && name.size() <= kMaxMetricNameLength &&
         !(name.front() >= '0' && name.front() <= '9') &&
         name.find_first_not_of(
             "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
             "0123456789_:") == std::string_view::npos;
}

std::string EscapeLabelValue(std::string_view value) {
  std::string out;
  out.reserve(value.size());
  for (char c : value) {
    switch (c) {
      case '\\':
        out += "\\\\";
        break;
      case '"':
        out += "\\\"";
        break;
      case '\n':
        out += "\\n";
        break;
      default:
        out += c;
    }
  }
  return out;
}

std::string FormatValue(double value) {
  if (std::isnan(value)) return "NaN";
  if (std::isinf(value)) return value > 0 ? "+Inf" : "-Inf";
  // Integers up to 2^53 are exact in a double: no fraction, no exponent.
  if (value == std::trunc(value) && std::fabs(value) < 9007199254740992.0) {
    return fmt::format("{}", static_cast<std::int64_t>(value));
  }
  return fmt::format("{}", value);  // the shortest text that reads back as `value`
}

std::vector<double> KueueExponentialBuckets(int count) {
  std::vector<double> bounds = {1};
  double bound = 2.5;
  for (int i = 1; i < count; ++i, bound *= 2) bounds.push_back(bound);
  return bounds;
}

std::vector<double> DefaultBuckets() {
  return {0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10};
}

HistogramData::HistogramData(std::vector<double> upper_bounds)
    : bounds(std::move(upper_bounds)), counts(bounds.size() + 1, 0) {}

void HistogramData::Observe(double value) {
  // The first bucket whose upper bound is >= value (le is inclusive).
  const auto bucket = std::lower_bound(bounds.begin(), bounds.end(), value) - bounds.begin();
  ++counts[static_cast<std::size_t>(bucket)];
  sum += value;
  ++count;
}

void ExpositionWriter::Header(std::string_view name, std::string_view type, std::string_view help) {
  // HELP escapes backslash and line feed (not quotes).
  std::string escaped;
  for (char c : help) {
    if (c == '\\') {
      escaped += "\\\\";
    } else if (c == '\n') {
      escaped += "\\n";
    } else {
      escaped += c;
    }
  }
  fmt::format_to(std::back_inserter(text_), "# HELP {} {}\n# TYPE {} {}\n", name, escaped, name,
                 type);
}

void ExpositionWriter::Sample(std::string_view name, const Labels& labels, double value,
                              const std::pair<std::string, std::string>* extra) {
  text_ += name;
  if (!labels.empty() || extra) {
    text_ += '{';
    bool first = true;
    auto add = [&](const std::pair<std::string, std::string>& label) {
      fmt::format_to(std::back_inserter(text_), "{}{}=\"{}\"", first ? "" : ",", label.first,
                     EscapeLabelValue(label.second));
      first = false;
    };
    for (const auto& label : labels) add(label);
    if (extra) add(*extra);
    text_ += '}';
  }
  text_ += ' ';
  text_ += FormatValue(value);
  text_ += '\n';
}

void ExpositionWriter::Counter(std::string_view name, std::string_view help,
                               std::span<const std::pair<Labels, double>> samples) {
  Header(name, "counter", help);
  for (const auto& [labels, value] : samples) Sample(name, labels, value);
}

void ExpositionWriter::Gauge(std::string_view name, std::string_view help,
                             std::span<const std::pair<Labels, double>> samples) {
  Header(name, "gauge", help);
  for (const auto& [labels, value] : samples) Sample(name, labels, value);
}

void ExpositionWriter::Histogram(std::string_view name, std::string_view help,
                                 std::span<const std::pair<Labels, HistogramData>> series) {
  Header(name, "histogram", help);
  const std::string bucket = fmt::format("{}_bucket", name);
  for (const auto& [labels, data] : series) {
    std::uint64_t cumulative = 0;
    for (std::size_t i = 0; i < data.bounds.size(); ++i) {
      cumulative += data.counts[i];
      const std::pair<std::string, std::string> le{"le", FormatValue(data.bounds[i])};
      Sample(bucket, labels, static_cast<double>(cumulative), &le);
    }
    const std::pair<std::string, std::string> inf{"le", "+Inf"};
    Sample(bucket, labels, static_cast<double>(data.count), &inf);
    Sample(fmt::format("{}_sum", name), labels, data.sum);
    Sample(fmt::format("{}_count", name), labels, static_cast<double>(data.count));
  }
}

namespace {

Labels Zip(const std::vector<std::string>& names, const std::vector<std::string>& values) {
  Labels labels;
  for (std::size_t i = 0; i < names.size() && i < values.size(); ++i) {
    labels.emplace_back(names[i], values[i]);
  }
  return labels;
}

}  // namespace

CounterFamily::CounterFamily(std::string name, std::string help,
                             std::vector<std::string> label_names)
    : name_(std::move(name)), help_(std::move(help)), label_names_(std::move(label_names)) {}

void CounterFamily::Add(const std::vector<std::string>& values, double delta) {
  if (!(delta >= 0)) return;
  MutexLock lock(mu_);
  values_[values] += delta;
}

double CounterFamily::Value(const std::vector<std::string>& values) const {
  MutexLock lock(mu_);
  auto it = values_.find(values);
  return it == values_.end() ? 0 : it->second;
}

void CounterFamily::WriteTo(ExpositionWriter& writer) const {
  std::vector<std::pair<Labels, double>> samples;
  {
    MutexLock lock(mu_);
    samples.reserve(values_.size());
    for (const auto& [values, value] : values_)
      samples.emplace_back(Zip(label_names_, values), value);
  }
  writer.Counter(name_, help_, samples);
}

HistogramFamily::HistogramFamily(std::string name, std::string help,
                                 std::vector<std::string> label_names, std::vector<double> bounds)
    : name_(std::move(name)),
      help_(std::move(help)),
      label_names_(std::move(label_names)),
      bounds_(std::move(bounds)) {}

void HistogramFamily::Observe(const std::vector<std::string>& values, double value) {
  MutexLock lock(mu_);
  auto it = series_.find(values);
  if (it == series_.end()) it = series_.emplace(values, HistogramData(bounds_)).first;
  it->second.Observe(value);
}

HistogramData HistogramFamily::Data(const std::vector<std::string>& values) const {
  MutexLock lock(mu_);
  auto it = series_.find(values);
  return it == series_.end() ? HistogramData(bounds_) : it->second;
}

void HistogramFamily::WriteTo(ExpositionWriter& writer) const {
  std::vector<std::pair<Labels, HistogramData>> series;
  {
    MutexLock lock(mu_);
    series.reserve(series_.size());
    for (const auto& [values, data] : series_) series.emplace_back(Zip(label_names_, values), data);
  }
  writer.Histogram(name_, help_, series);
}

}  // namespace drover::prometheus
