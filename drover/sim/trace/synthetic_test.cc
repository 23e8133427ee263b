#include "drover/sim/trace/synthetic.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <set>
#include <string>
#include <vector>

namespace drover::sim {
namespace {

// AcmeTrace's Seren and Kalos rows (summaries/acme_cluster_summary.csv), written out so that
// these tests do not need the public traces.
ClusterSummary Seren() {
  ClusterSummary s;
  s.id = "Seren";
  s.avg_run_seconds = 1414.335;
  s.median_run_seconds = 122;
  s.max_run_seconds = 1209604;
  s.avg_gpus = 5.68;
  s.median_gpus = 1;
  s.max_gpus = 1024;
  s.avg_queue_seconds = 445.984;
  s.median_queue_seconds = 1;
  return s;
}

ClusterSummary Kalos() {
  ClusterSummary s = Seren();
  s.id = "Kalos";
  s.avg_run_seconds = 1259.689;
  s.median_run_seconds = 124;
  s.max_run_seconds = 625740;
  s.avg_gpus = 26.77;
  return s;
}

double Median(std::vector<double> values) {
  std::sort(values.begin(), values.end());
  const std::size_t n = values.size();
  return n % 2 == 1 ? values[n / 2] : (values[n / 2 - 1] + values[n / 2]) / 2;
}

double Mean(const std::vector<double>& values) {
  double sum = 0;
  for (double v : values) sum += v;
  return sum / static_cast<double>(values.size());
}

double Phi(double x) { return 0.5 * std::erfc(-x / std::sqrt(2.0)); }

// E[min(X, cap)] for X lognormal with the given median and mean: what the capped sample mean
// converges to.
double CappedLognormalMean(double median, double mean, double cap) {
  const double mu = std::log(median);
  const double sigma = std::sqrt(2 * std::log(mean / median));
  const double z = (std::log(cap) - mu) / sigma;
  return mean * Phi(z - sigma) + cap * (1 - Phi(z));
}

struct Sample {
  std::vector<double> seconds;
  std::vector<double> gpus;
};

Sample SampleOf(const Trace& trace) {
  Sample s;
  for (const TraceJob& job : trace.jobs) {
    s.seconds.push_back(static_cast<double>(job.duration) / 1000);
    s.gpus.push_back(job.spec.workers * job.spec.requirements.per_worker.gpus);
  }
  return s;
}

TEST(MakeSyntheticTrace, RunTimesFollowTheLognormalOfMedianAndMean) {
  // A light tail first, where 100k draws pin the law down: sigma = sqrt(2 ln 1.5) = 0.90.
  ClusterSummary light = Seren();
  light.median_run_seconds = 100;
  light.avg_run_seconds = 150;
  SyntheticOptions options;
  options.jobs = 100'000;
  Sample s = SampleOf(MakeSyntheticTrace(light, options));
  EXPECT_NEAR(Median(s.seconds), 100, 100 * 0.01);
  EXPECT_NEAR(Mean(s.seconds), 150, 150 * 0.02);

  // Seren: sigma = 2.21; the cap of 1,209,604 s trims the mean from 1414 s to 1397 s (1.2%).
  const ClusterSummary seren = Seren();
  const double capped = CappedLognormalMean(122, 1414.335, 1209604);
  EXPECT_NEAR(capped, 1397, 1);
  s = SampleOf(MakeSyntheticTrace(seren, options));
  EXPECT_NEAR(Median(s.seconds), 122, 122 * 0.03);
  // The sample mean of so heavy a tail has a standard error of about 3.5% at 100k jobs.
  EXPECT_NEAR(Mean(s.seconds), capped, capped * 0.12);
  EXPECT_GE(*std::min_element(s.seconds.begin(), s.seconds.end()), 1.0);
  EXPECT_LE(*std::max_element(s.seconds.begin(), s.seconds.end()), 1209604.0);
}

TEST(MakeGpuSizeLaw, MatchesTheMedianAndTheMean) {
  SyntheticOptions options;  // 64 nodes x 8 GPUs: sizes 1..512
  GpuSizeLaw seren = MakeGpuSizeLaw(Seren(), options);
  EXPECT_THAT(seren.sizes, ::testing::ElementsAre(1, 2, 4, 8, 16, 32, 64, 128, 256, 512));
  // The single geometric law would put less than 55% on 1 GPU, so P(1) = 0.55 and the tail is
  // solved for alone; the achieved mean is the summary's 5.68.
  EXPECT_DOUBLE_EQ(seren.probabilities[0], 0.55);
  EXPECT_NEAR(seren.mean, 5.68, 1e-6);
  GpuSizeLaw kalos = MakeGpuSizeLaw(Kalos(), options);
  EXPECT_NEAR(kalos.mean, 26.77, 1e-6);

  // One 8-GPU node cannot reach Kalos's 26.77: the largest mean is about 0.55 + 0.45 x 8 = 4.15.
  options.nodes = 1;
  GpuSizeLaw small = MakeGpuSizeLaw(Kalos(), options);
  EXPECT_THAT(small.sizes, ::testing::ElementsAre(1, 2, 4, 8));
  EXPECT_NEAR(small.mean, 4.15, 0.01);

  // A mean close to the median: the single geometric law (P(1) >= 0.55).
  ClusterSummary narrow = Seren();
  narrow.avg_gpus = 1.5;
  GpuSizeLaw law = MakeGpuSizeLaw(narrow, SyntheticOptions{});
  EXPECT_GT(law.probabilities[0], 0.55);
  EXPECT_NEAR(law.mean, 1.5, 1e-6);
  for (std::size_t k = 1; k + 1 < law.probabilities.size(); ++k) {
    EXPECT_NEAR(law.probabilities[k + 1] / law.probabilities[k],
                law.probabilities[1] / law.probabilities[0], 1e-9);
  }

  // A mean below the median: every job takes the median.
  narrow.median_gpus = 4;
  narrow.avg_gpus = 3;
  law = MakeGpuSizeLaw(narrow, SyntheticOptions{});
  EXPECT_EQ(law.sizes.front(), 4);
  EXPECT_DOUBLE_EQ(law.mean, 4);
}

TEST(MakeSyntheticTrace, GpuCountsMatchTheLawAndWideJobsAreGangsOfWholeNodes) {
  SyntheticOptions options;
  options.jobs = 100'000;
  const Trace trace = MakeSyntheticTrace(Seren(), options);
  Sample s = SampleOf(trace);
  EXPECT_EQ(Median(s.gpus), 1);
  // P(1) = 0.55 and the law's mean is 5.68; the sample mean lands within 5%.
  EXPECT_NEAR(Mean(s.gpus), 5.68, 5.68 * 0.05);
  for (const TraceJob& job : trace.jobs) {
    const int per_worker = job.spec.requirements.per_worker.gpus;
    const int gpus = job.spec.workers * per_worker;
    ASSERT_EQ(gpus & (gpus - 1), 0) << gpus;
    ASSERT_LE(gpus, 512);
    if (gpus > 8) {
      ASSERT_EQ(per_worker, 8);
    } else {
      ASSERT_EQ(job.spec.workers, 1);
    }
    ASSERT_EQ(job.spec.requirements.per_worker.cpu_millis, 8000 * per_worker);
  }
}

TEST(MakeSyntheticTrace, ArrivalsOfferTheRequestedLoad) {
  SyntheticOptions options;
  options.jobs = 20'000;
  options.load = 0.7;
  const Trace trace = MakeSyntheticTrace(Kalos(), options);
  ASSERT_EQ(trace.nodes.size(), 64u);
  double gpu_ms = 0;
  for (std::size_t i = 0; i < trace.jobs.size(); ++i) {
    const TraceJob& job = trace.jobs[i];
    if (i > 0) {
      ASSERT_LE(trace.jobs[i - 1].submit, job.submit);
    }
    gpu_ms += static_cast<double>(job.spec.workers) * job.spec.requirements.per_worker.gpus *
              static_cast<double>(job.duration);
  }
  const double span = static_cast<double>(trace.jobs.back().submit);
  EXPECT_NEAR(gpu_ms / (512 * span), 0.7, 1e-6);
  EXPECT_GT(trace.jobs.front().submit, 0);
}

TEST(MakeSyntheticTrace, AssignsQueuesUsersAndInterruptibleJobs) {
  SyntheticOptions options;
  options.jobs = 4'000;
  options.queues = 3;
  const Trace trace = MakeSyntheticTrace(Seren(), options);
  std::set<std::string> queues, users;
  for (std::size_t i = 0; i < trace.jobs.size(); ++i) {
    const TraceJob& job = trace.jobs[i];
    queues.insert(job.spec.queue);
    users.insert(job.user);
    EXPECT_EQ(job.spec.owner, job.user);
    // u<k> submits to q<k mod 3>.
    const int k = std::stoi(job.user.substr(1));
    EXPECT_EQ(job.spec.queue, "q" + std::to_string(k % 3));
    EXPECT_EQ(job.spec.interruptible, i % 4 == 3) << i;
    EXPECT_EQ(job.checkpoint_interval, i % 4 == 3 ? 600'000 : 0) << i;
    EXPECT_EQ(job.spec.priority_class, "normal");
  }
  EXPECT_EQ(queues, (std::set<std::string>{"q0", "q1", "q2"}));
  EXPECT_EQ(users.size(), 12u);
  EXPECT_EQ(trace.jobs[12].name, "job-0000012");
  EXPECT_EQ(trace.nodes[17].name.value(), "node-00017");
  EXPECT_EQ(trace.nodes[17].labels.at("rack"), "r1");
}

TEST(MakeSyntheticTrace, SameOptionsGiveTheIdenticalTrace) {
  SyntheticOptions options;
  options.jobs = 5'000;
  options.seed = 42;
  const Trace a = MakeSyntheticTrace(Kalos(), options);
  const Trace b = MakeSyntheticTrace(Kalos(), options);
  ASSERT_EQ(a.jobs.size(), b.jobs.size());
  EXPECT_EQ(a.nodes, b.nodes);
  for (std::size_t i = 0; i < a.jobs.size(); ++i) {
    ASSERT_EQ(a.jobs[i].name, b.jobs[i].name);
    ASSERT_EQ(a.jobs[i].submit, b.jobs[i].submit);
    ASSERT_EQ(a.jobs[i].duration, b.jobs[i].duration);
    ASSERT_EQ(a.jobs[i].user, b.jobs[i].user);
    ASSERT_EQ(a.jobs[i].checkpoint_interval, b.jobs[i].checkpoint_interval);
    ASSERT_EQ(a.jobs[i].spec, b.jobs[i].spec);
  }
  // Golden values pin the draws down: a change here changes every trace and every result
  // recorded from one.
  EXPECT_EQ(a.jobs[0].submit, 159'909);
  EXPECT_EQ(a.jobs[0].duration, 129'245);
  EXPECT_EQ(a.jobs[0].spec.requirements.per_worker.gpus, 8);
  EXPECT_EQ(a.jobs[0].user, "u14");
  EXPECT_EQ(a.jobs[3].duration, 4'064);
  EXPECT_EQ(a.jobs[3].spec.workers, 16);
  options.seed = 43;
  const Trace c = MakeSyntheticTrace(Kalos(), options);
  int same = 0;
  for (std::size_t i = 0; i < a.jobs.size(); ++i) same += a.jobs[i].duration == c.jobs[i].duration;
  EXPECT_LT(same, 50) << "another seed draws another trace";
}

TEST(MakeSyntheticTrace, GeneratesAMillionJobsQuickly) {
  SyntheticOptions options;
  options.jobs = 1'000'000;
  const auto start = std::chrono::steady_clock::now();
  const Trace trace = MakeSyntheticTrace(Seren(), options);
  const double ms =
      std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
  ASSERT_EQ(trace.jobs.size(), 1'000'000u);
  std::printf("[ timing ] MakeSyntheticTrace(1M jobs): %.0f ms\n", ms);
  EXPECT_LT(ms, 60'000) << "generous for debug builds and busy machines";
}

TEST(MakeSyntheticTrace, HandlesDegenerateOptions) {
  SyntheticOptions options;
  options.jobs = 0;
  Trace empty = MakeSyntheticTrace(Seren(), options);
  EXPECT_TRUE(empty.jobs.empty());
  EXPECT_EQ(empty.nodes.size(), 64u);
  options.jobs = 1;
  options.nodes = 0;
  options.gpus_per_node = 0;
  options.queues = 0;
  options.load = 0;
  Trace one = MakeSyntheticTrace(Seren(), options);
  ASSERT_EQ(one.jobs.size(), 1u);
  EXPECT_EQ(one.nodes.size(), 1u);
  EXPECT_EQ(one.jobs[0].spec.requirements.per_worker.gpus, 1);
  EXPECT_EQ(one.jobs[0].spec.queue, "q0");
}

}  // namespace
}  // namespace drover::sim
