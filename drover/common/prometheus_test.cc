#include "drover/common/prometheus.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>

namespace drover::prometheus {
namespace {

TEST(EscapeLabelValue, EscapesBackslashQuoteAndNewlineOnly) {
  EXPECT_EQ(EscapeLabelValue(R"(a\b"c)"), R"(a\\b\"c)");
  EXPECT_EQ(EscapeLabelValue("line\nnext"), "line\\nnext");
  EXPECT_EQ(EscapeLabelValue("team-a/é {x}"), "team-a/é {x}");
}

TEST(FormatValue, WritesIntegersPlainlyAndSpecialsAsPrometheusParsesThem) {
  EXPECT_EQ(FormatValue(3), "3");
  EXPECT_EQ(FormatValue(-2), "-2");
  EXPECT_EQ(FormatValue(0.25), "0.25");
  EXPECT_EQ(FormatValue(std::numeric_limits<double>::infinity()), "+Inf");
  EXPECT_EQ(FormatValue(-std::numeric_limits<double>::infinity()), "-Inf");
  EXPECT_EQ(FormatValue(std::nan("")), "NaN");
  EXPECT_EQ(FormatValue(0.1), "0.1");
  EXPECT_EQ(FormatValue(1e300), "1e+300");
}

TEST(KueueExponentialBuckets, MatchKueuesAdmissionWaitBuckets) {
  // Kueue pkg/metrics: append([]float64{1}, prometheus.ExponentialBuckets(2.5, 2, count-1)...).
  std::vector<double> bounds = KueueExponentialBuckets(16);
  ASSERT_EQ(bounds.size(), 16u);
  EXPECT_EQ(bounds[0], 1);
  EXPECT_EQ(bounds[1], 2.5);
  EXPECT_EQ(bounds[2], 5);
  EXPECT_EQ(bounds[15], 40960);
}

TEST(HistogramData, CountsAValueOnABoundInThatBucket) {
  HistogramData data({1, 2});
  data.Observe(1);    // le="1" is inclusive
  data.Observe(1.5);  // (1, 2]
  data.Observe(7);    // above every bound
  EXPECT_EQ(data.counts, (std::vector<std::uint64_t>{1, 1, 1}));
  EXPECT_EQ(data.count, 3u);
  EXPECT_DOUBLE_EQ(data.sum, 9.5);
}

TEST(ExpositionWriter, WritesHelpAndTypeOnceThenEachSampleWithEscapedLabels) {
  ExpositionWriter writer;
  std::vector<std::pair<Labels, double>> samples = {
      {{{"cluster_queue", "a\"b"}, {"status", "active"}}, 2},
      {{}, 0.5},
  };
  writer.Gauge("drover_pending_workloads", "Pending jobs.\nPer queue.", samples);
  EXPECT_EQ(writer.text(),
            "# HELP drover_pending_workloads Pending jobs.\\nPer queue.\n"
            "# TYPE drover_pending_workloads gauge\n"
            "drover_pending_workloads{cluster_queue=\"a\\\"b\",status=\"active\"} 2\n"
            "drover_pending_workloads 0.5\n");
}

TEST(ExpositionWriter, WritesAFamilyWithoutSamplesAsHelpAndTypeAlone) {
  ExpositionWriter writer;
  writer.Counter("drover_x_total", "X.", {});
  EXPECT_EQ(writer.text(), "# HELP drover_x_total X.\n# TYPE drover_x_total counter\n");
}

TEST(ExpositionWriter, WritesHistogramBucketsCumulativelyWithInfSumAndCount) {
  HistogramData data({1, 2.5});
  data.Observe(0.5);
  data.Observe(2);
  data.Observe(3);
  std::vector<std::pair<Labels, HistogramData>> series = {{{{"q", "a"}}, data}};
  ExpositionWriter writer;
  writer.Histogram("h_seconds", "H.", series);
  EXPECT_EQ(writer.text(),
            "# HELP h_seconds H.\n# TYPE h_seconds histogram\n"
            "h_seconds_bucket{q=\"a\",le=\"1\"} 1\n"
            "h_seconds_bucket{q=\"a\",le=\"2.5\"} 2\n"
            "h_seconds_bucket{q=\"a\",le=\"+Inf\"} 3\n"
            "h_seconds_sum{q=\"a\"} 5.5\n"
            "h_seconds_count{q=\"a\"} 3\n");
}

TEST(CounterFamily, AddsPerLabelTupleAndIgnoresNegativeDeltas) {
  CounterFamily family("c_total", "C.", {"route", "code"});
  family.Add({"/v1/jobs", "200"});
  family.Add({"/v1/jobs", "200"}, 2);
  family.Add({"/v1/jobs", "404"});
  family.Add({"/v1/jobs", "404"}, -5);
  EXPECT_EQ(family.Value({"/v1/jobs", "200"}), 3);
  EXPECT_EQ(family.Value({"/v1/jobs", "404"}), 1);
  EXPECT_EQ(family.Value({"/v1/queues", "200"}), 0);
  ExpositionWriter writer;
  family.WriteTo(writer);
  EXPECT_EQ(writer.text(),
            "# HELP c_total C.\n# TYPE c_total counter\n"
            "c_total{route=\"/v1/jobs\",code=\"200\"} 3\n"
            "c_total{route=\"/v1/jobs\",code=\"404\"} 1\n");
}

TEST(HistogramFamily, KeepsOneSeriesPerLabelTuple) {
  HistogramFamily family("w_seconds", "W.", {"cluster_queue"}, {1, 10});
  family.Observe({"a"}, 0.5);
  family.Observe({"a"}, 5);
  family.Observe({"b"}, 50);
  EXPECT_EQ(family.Data({"a"}).count, 2u);
  EXPECT_EQ(family.Data({"b"}).counts, (std::vector<std::uint64_t>{0, 0, 1}));
  EXPECT_EQ(family.Data({"c"}).count, 0u);
}

}  // namespace
}  // namespace drover::prometheus
