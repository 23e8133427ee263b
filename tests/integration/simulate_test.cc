// `drover simulate`: the command line around the simulator, run as the real binary on small
// files: bad input exits 2 with one line on stderr and nothing on stdout; tiny traces give the
// result JSON, text and HTML reports.

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <fstream>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "tests/integration/harness.h"

namespace drover::integration {
namespace {

using nlohmann::json;
using ::testing::HasSubstr;
using ::testing::Not;

class Simulate : public IntegrationTest {
 protected:
  // A two-node cluster and three jobs in Drover's own formats.
  void WriteDroverTrace() {
    WriteFile(dir_.Sub("nodes.yaml"),
              "nodes:\n"
              "  - name: n1\n    cpu: \"64\"\n    memory: 512Gi\n    gpus: 4xH100-80GB\n"
              "  - name: n2\n    cpu: \"64\"\n    memory: 512Gi\n    gpus: 4xH100-80GB\n");
    WriteFile(dir_.Sub("jobs.csv"),
              "name,submit_s,duration_s,gpus,queue,user\n"
              "a,0,600,4,default,alice\n"
              "b,10,300,4,default,bob\n"
              "c,20,120,4,default,carol\n");
  }

  std::vector<std::string> DroverArgs() {
    return {"simulate", "--format",          "drover", "--cluster", dir_.Sub("nodes.yaml"),
            "--jobs",   dir_.Sub("jobs.csv")};
  }

  CommandResult Run(std::vector<std::string> args) {
    return RunDrover(args, dir_.path(), std::chrono::milliseconds(120'000));
  }

  // Expects the input-error contract: exit 2, nothing on stdout, a message naming `what`.
  void ExpectInputError(const CommandResult& run, const std::string& what) {
    EXPECT_EQ(run.exit_code, 2) << run.out << run.err;
    EXPECT_EQ(run.out, "");
    EXPECT_THAT(run.err, HasSubstr(what));
  }

  // Runs `base` plus each case's flags and expects the case's input error.
  using FlagCases = std::vector<std::pair<std::vector<std::string>, std::string>>;
  void ExpectEachInputError(const std::vector<std::string>& base, const FlagCases& cases) {
    for (const auto& [flags, message] : cases) {
      std::vector<std::string> args = base;
      args.insert(args.end(), flags.begin(), flags.end());
      ExpectInputError(Run(args), message);
    }
  }
};

TEST_F(Simulate, UnknownFlagExitsTwoWithTheMessage) {
  ExpectInputError(Run({"simulate", "--bogus-flag", "1"}), "--bogus-flag");
}

TEST_F(Simulate, WithoutATraceSaysWhatToGive) {
  ExpectInputError(Run({"simulate", "-o", "json"}), "drover simulate: no trace");
}

TEST_F(Simulate, SyntheticSizesAreBoundedAndNamed) {
  const std::string summary = dir_.Sub("summary.csv");
  std::ofstream(summary) << "cluster,x\n";  // never read: the sizes are checked first
  const std::vector<std::string> base = {"simulate", "--synthetic", summary, "--cluster-id", "c"};
  const FlagCases cases = {
      {{"--nodes-count", "100001"},
       "--nodes-count must be an integer from 1 to 100000, got 100001"},
      {{"--nodes-count", "0"}, "--nodes-count must be an integer from 1 to 100000, got 0"},
      {{"--gpus-per-node", "1025"}, "--gpus-per-node must be an integer from 1 to 1024"},
      {{"--jobs-count", "10000001"}, "--jobs-count must be an integer from 0 to 10000000"},
      {{"--jobs-count", "-1"}, "--jobs-count must be an integer from 0 to 10000000, got -1"},
      {{"--queues", "1001"}, "--queues must be an integer from 1 to 1000"},
  };
  ExpectEachInputError(base, cases);
}

TEST_F(Simulate, OutputFormatIsChecked) {
  WriteDroverTrace();
  std::vector<std::string> args = DroverArgs();
  args.insert(args.end(), {"-o", "yaml"});
  ExpectInputError(Run(args), "yaml");
}

TEST_F(Simulate, MissingFileNamesTheFlagAndTheFile) {
  WriteDroverTrace();
  const CommandResult run = Run({"simulate", "--format", "drover", "--cluster",
                                 dir_.Sub("missing.yaml"), "--jobs", dir_.Sub("jobs.csv")});
  ExpectInputError(run, "--cluster");
  EXPECT_THAT(run.err, HasSubstr("missing.yaml"));
  EXPECT_THAT(run.err, HasSubstr("drover simulate: "));
}

TEST_F(Simulate, UnknownPolicyNameExitsTwo) {
  WriteDroverTrace();
  std::vector<std::string> args = DroverArgs();
  args.insert(args.end(), {"--policy", "round-robin"});
  ExpectInputError(Run(args), "--policy round-robin");
}

TEST_F(Simulate, InvalidPolicyFilePrintsItsDiagnostics) {
  WriteDroverTrace();
  WriteFile(dir_.Sub("bad-policy.yaml"), "kind: Policy\norder: random\n");
  std::vector<std::string> args = DroverArgs();
  args.insert(args.end(), {"--policy", dir_.Sub("bad-policy.yaml")});
  const CommandResult run = Run(args);
  ExpectInputError(run, "drover simulate: --policy");
  EXPECT_THAT(run.err, HasSubstr(dir_.Sub("bad-policy.yaml")));
  EXPECT_THAT(run.err, HasSubstr("bad-policy.yaml:2:"));  // a diagnostic with its position
}

TEST_F(Simulate, APolicyWithASlurmQueueIsRefusedNamingTheQueue) {
  // It aborted with std::bad_variant_access (exit 134) before effects were dispatched by type.
  WriteDroverTrace();
  WriteFile(dir_.Sub("slurm-policy.yaml"),
            "kind: Policy\n"
            "queues:\n"
            "  - name: default\n"
            "    executor: slurm\n");
  std::vector<std::string> args = DroverArgs();
  args.insert(args.end(), {"--policy", dir_.Sub("slurm-policy.yaml")});
  ExpectInputError(Run(args), "queue 'default' hands its jobs to slurm (executor: slurm)");
}

TEST_F(Simulate, FromServerNeedsAWindowAndAnExistingDataDir) {
  WriteFile(dir_.Sub("new.yaml"), "kind: Policy\norder: fifo\n");
  ExpectInputError(
      Run({"simulate", "--from-server", dir_.Sub("data"), "--policy", dir_.Sub("new.yaml")}),
      "--since");
  ExpectInputError(Run({"simulate", "--from-server", dir_.Sub("data"), "--since", "yesterday",
                        "--policy", dir_.Sub("new.yaml")}),
                   "--since");
  const CommandResult missing = Run({"simulate", "--from-server", dir_.Sub("data"), "--window",
                                     "24h", "--policy", dir_.Sub("new.yaml")});
  ExpectInputError(missing, "--from-server");
  EXPECT_THAT(missing.err, HasSubstr(dir_.Sub("data")));
}

TEST_F(Simulate, TinyDroverTraceGivesTheReplayJson) {
  WriteDroverTrace();
  std::vector<std::string> args = DroverArgs();
  args.insert(args.end(), {"--policy", "fifo", "-o", "json", "--no-timing"});
  const CommandResult run = Run(args);
  ASSERT_EQ(run.exit_code, 0) << run.err;
  EXPECT_EQ(run.err, "");
  const json result = json::parse(run.out, nullptr, /*allow_exceptions=*/false);
  ASSERT_TRUE(result.is_object()) << run.out;
  EXPECT_EQ(result.value("experiment", ""), "replay");
  EXPECT_EQ(result.value("policy", ""), "fifo");
  EXPECT_EQ(result.value("jobs", -1), 3);
  EXPECT_EQ(result.value("finished", -1), 3);
  EXPECT_EQ(result.value("unfinished", -1), 0);
  EXPECT_EQ(result.value("total_gpus", -1), 8);
  for (const char* key :
       {"jct_seconds", "queue_seconds", "makespan_seconds", "preemptions", "lost_gpu_hours",
        "gpu_hours_allocated", "lifecycle_seconds", "gpu_allocation_over_time",
        "queue_share_over_time", "per_queue", "job_rows", "events"}) {
    EXPECT_TRUE(result.contains(key)) << key;
  }
  for (const char* stat : {"mean", "p50", "p95", "p99"}) {
    EXPECT_TRUE(result["jct_seconds"].contains(stat)) << stat;
  }
  EXPECT_EQ(result["job_rows"].size(), 3u);
  EXPECT_FALSE(result.contains("wall_seconds"));  // --no-timing

  // Same input, same bytes.
  const CommandResult again = Run(args);
  EXPECT_EQ(again.out, run.out);
}

TEST_F(Simulate, SeveralPoliciesGiveACompareResult) {
  WriteDroverTrace();
  std::vector<std::string> args = DroverArgs();
  args.insert(args.end(), {"--policy", "fifo", "--policy", "sjf", "-o", "json", "--no-timing"});
  const CommandResult run = Run(args);
  ASSERT_EQ(run.exit_code, 0) << run.err;
  const json result = json::parse(run.out, nullptr, false);
  ASSERT_TRUE(result.is_object()) << run.out;
  EXPECT_EQ(result.value("experiment", ""), "compare");
  ASSERT_EQ(result["results"].size(), 2u);
  EXPECT_EQ(result["results"][0].value("policy", ""), "fifo");
  EXPECT_EQ(result["results"][1].value("policy", ""), "sjf");
}

TEST_F(Simulate, TextAndHtmlReports) {
  WriteDroverTrace();
  std::vector<std::string> args = DroverArgs();
  args.insert(args.end(), {"-o", "text"});
  const CommandResult text = Run(args);
  ASSERT_EQ(text.exit_code, 0) << text.err;
  EXPECT_THAT(text.out, HasSubstr("Replay: policy fair-share, 3 jobs (3 finished, 0 unfinished)"));

  args = DroverArgs();
  args.insert(args.end(), {"-o", "html", "--report", dir_.Sub("report.html")});
  const CommandResult html = Run(args);
  ASSERT_EQ(html.exit_code, 0) << html.err;
  EXPECT_EQ(html.out, "");
  const std::string page = ReadFile(dir_.Sub("report.html"));
  EXPECT_THAT(page, HasSubstr("<svg"));
  EXPECT_THAT(page, HasSubstr("JCT CDF per queue"));
  EXPECT_THAT(page, Not(HasSubstr("<script")));

  args = DroverArgs();
  args.insert(args.end(), {"-o", "html"});
  const CommandResult to_stdout = Run(args);
  ASSERT_EQ(to_stdout.exit_code, 0) << to_stdout.err;
  EXPECT_EQ(to_stdout.out.rfind("<!DOCTYPE html>", 0), 0u);
}

TEST_F(Simulate, OpenbFgdExperimentGivesAllocationCurves) {
  const std::string data = SourceDir() + "/drover/sim/trace/testdata/";
  const CommandResult run =
      Run({"simulate", "--format", "openb", "--nodes", data + "openb_nodes.csv", "--pods",
           data + "openb_pods.csv", "--experiment", "fgd", "--inflate", "1.3", "-o", "json",
           "--no-timing"});
  ASSERT_EQ(run.exit_code, 0) << run.err;
  const json result = json::parse(run.out, nullptr, false);
  ASSERT_TRUE(result.is_object()) << run.out;
  EXPECT_EQ(result.value("experiment", ""), "fgd");
  EXPECT_TRUE(result.contains("allocation_ratio_at"));
  EXPECT_TRUE(result.contains("fragmentation_at"));
}

TEST_F(Simulate, FgdSeedsAndInflateAreBoundedAndNamed) {
  const std::string data = SourceDir() + "/drover/sim/trace/testdata/";
  const std::vector<std::string> base = {"simulate",
                                         "--format",
                                         "openb",
                                         "--nodes",
                                         data + "openb_nodes.csv",
                                         "--pods",
                                         data + "openb_pods.csv",
                                         "--experiment",
                                         "fgd"};
  const FlagCases cases = {
      {{"--seeds", "1001"}, "--seeds must be an integer from 1 to 1000, got 1001"},
      {{"--seeds", "0"}, "--seeds must be an integer from 1 to 1000, got 0"},
      {{"--inflate", "10.5"}, "--inflate must be greater than 0 and at most 10, got 10.5"},
      {{"--inflate", "0"}, "--inflate must be greater than 0 and at most 10, got 0"},
  };
  ExpectEachInputError(base, cases);
}

TEST_F(Simulate, FgdPolicyMustBeKnown) {
  const std::string data = SourceDir() + "/drover/sim/trace/testdata/";
  ExpectInputError(
      Run({"simulate", "--format", "openb", "--nodes", data + "openb_nodes.csv", "--pods",
           data + "openb_pods.csv", "--experiment", "fgd", "--policy", "fifo"}),
      "--policy fifo: not an FGD placement policy");
}

}  // namespace
}  // namespace drover::integration
