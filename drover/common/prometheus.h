#pragma once

// Prometheus' text exposition format (version 0.0.4), written by hand: Debian ships no client
// library for C++. Two parts:
//   - ExpositionWriter renders metric families (HELP and TYPE once each, then their samples),
//     escaping label values and writing values as Prometheus parses them;
//   - CounterFamily and HistogramFamily keep values that events add to between scrapes, one
//     series per label-value tuple, each family behind its own mutex.
// Gauges are not kept: a scrape computes them from the state they describe and writes them with
// ExpositionWriter::Gauge.
//
// Label sets must be bounded by the caller (queues, teams, nodes, route patterns; never job
// ids): every distinct tuple ever added to a family is kept and written until the process ends.

#include <cstddef>
#include <cstdint>
#include <map>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "drover/common/thread_annotations.h"

namespace drover::prometheus {

// Label names and values of one sample, in the order written.
using Labels = std::vector<std::pair<std::string, std::string>>;

// The longest metric name Drover accepts from a user (a service's saturation metric): a bound,
// not Prometheus' rule, which sets none.
inline constexpr std::size_t kMaxMetricNameLength = 200;
// True if `name` is a Prometheus metric name ([a-zA-Z_:][a-zA-Z0-9_:]*) of at most
// kMaxMetricNameLength bytes.
bool IsMetricName(std::string_view name);
// How IsMetricName's rule reads in an error message.
inline constexpr std::string_view kMetricNameRule =
    "[a-zA-Z_:][a-zA-Z0-9_:]*, at most 200 characters";

// `value` escaped for a label value in double quotes: backslash, double quote and line feed
// become \\, \" and \n; every other byte is kept (the format is UTF-8).
std::string EscapeLabelValue(std::string_view value);

// `value` as the exposition writes it: integers without exponent or fraction ("3", "-2"), others
// in the shortest form that reads back exactly ("0.1", "1e+300"), and "+Inf", "-Inf", "NaN".
std::string FormatValue(double value);

// Kueue's histogram buckets (pkg/metrics: generateExponentialBuckets): 1, then `count` - 1
// buckets from 2.5 doubling (2.5, 5, 10, ...).
std::vector<double> KueueExponentialBuckets(int count);
// client_golang's DefBuckets: 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10.
std::vector<double> DefaultBuckets();

// A histogram's state: counts[i] observations fell in (bounds[i-1], bounds[i]] and counts.back()
// above the last bound (so counts has one more entry than bounds).
struct HistogramData {
  std::vector<double> bounds;  // ascending upper bounds, +Inf excluded
  std::vector<std::uint64_t> counts;
  double sum = 0;
  std::uint64_t count = 0;

  explicit HistogramData(std::vector<double> upper_bounds);
  void Observe(double value);
};

// Renders families into one exposition. Not thread-safe (one per scrape).
class ExpositionWriter {
 public:
  // Each call starts family `name` (HELP `help`, TYPE counter, gauge or histogram) once; the
  // samples follow it. A family with no samples still writes HELP and TYPE (promtool accepts
  // it), which tells a reader the metric exists. Call each family once.
  void Counter(std::string_view name, std::string_view help,
               std::span<const std::pair<Labels, double>> samples);
  void Gauge(std::string_view name, std::string_view help,
             std::span<const std::pair<Labels, double>> samples);
  void Histogram(std::string_view name, std::string_view help,
                 std::span<const std::pair<Labels, HistogramData>> series);

  const std::string& text() const { return text_; }
  std::string Take() { return std::move(text_); }

 private:
  void Header(std::string_view name, std::string_view type, std::string_view help);
  void Sample(std::string_view name, const Labels& labels, double value,
              const std::pair<std::string, std::string>* extra = nullptr);

  std::string text_;
};

// A counter with fixed label names whose series are created on first use. Thread-safe.
class CounterFamily {
 public:
  CounterFamily(std::string name, std::string help, std::vector<std::string> label_names);
  // Adds `delta` (>= 0; a negative one is ignored: counters only grow) to the series of
  // `values`, one per label name in order.
  void Add(const std::vector<std::string>& values, double delta = 1) EXCLUDES(mu_);
  // The series' value; 0 for one never added to.
  double Value(const std::vector<std::string>& values) const EXCLUDES(mu_);
  void WriteTo(ExpositionWriter& writer) const EXCLUDES(mu_);

 private:
  const std::string name_;
  const std::string help_;
  const std::vector<std::string> label_names_;
  mutable Mutex mu_;
  std::map<std::vector<std::string>, double> values_ GUARDED_BY(mu_);
};

// A histogram with fixed label names and buckets whose series are created on first use.
// Thread-safe.
class HistogramFamily {
 public:
  HistogramFamily(std::string name, std::string help, std::vector<std::string> label_names,
                  std::vector<double> bounds);
  void Observe(const std::vector<std::string>& values, double value) EXCLUDES(mu_);
  // The series' state (empty counts for one never observed).
  HistogramData Data(const std::vector<std::string>& values) const EXCLUDES(mu_);
  void WriteTo(ExpositionWriter& writer) const EXCLUDES(mu_);

 private:
  const std::string name_;
  const std::string help_;
  const std::vector<std::string> label_names_;
  const std::vector<double> bounds_;
  mutable Mutex mu_;
  std::map<std::vector<std::string>, HistogramData> series_ GUARDED_BY(mu_);
};

}  // namespace drover::prometheus
