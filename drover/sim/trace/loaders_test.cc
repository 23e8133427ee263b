#include "drover/sim/trace/loaders.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <fstream>
#include <map>
#include <string>
#include <vector>

namespace drover::sim {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::StartsWith;

constexpr std::int64_t kMiB = 1LL << 20;
constexpr std::int64_t kGiB = 1LL << 30;

std::string TestData(const std::string& name) {
  return std::string(DROVER_SOURCE_DIR) + "/drover/sim/trace/testdata/" + name;
}

// Writes `text` to a fresh file `name` in the test's temporary directory; returns its path.
std::string WriteTemp(const std::string& name, const std::string& text) {
  const std::string path =
      ::testing::TempDir() + "drover_sim_trace_" + std::to_string(getpid()) + "_" + name;
  std::ofstream(path, std::ios::binary | std::ios::trunc) << text;
  return path;
}

// The error message of `result`, or "" if it succeeded.
template <typename T>
std::string ErrorOf(const Result<T>& result) {
  return result ? std::string() : result.error().message;
}

// ---------------------------------------------------------------------------------------------
// openb

TEST(LoadOpenbNodes, MapsColumnsAndGpuModels) {
  auto nodes = LoadOpenbNodes(TestData("openb_nodes.csv"));
  ASSERT_TRUE(nodes) << nodes.error().message;
  ASSERT_EQ(nodes->size(), 3u);
  const model::Node& cpu = (*nodes)[0];
  EXPECT_EQ(cpu.name.value(), "openb-node-0000");
  EXPECT_EQ(cpu.cpu_millis, 32000);
  EXPECT_EQ(cpu.memory_bytes, 262144 * kMiB);
  EXPECT_TRUE(cpu.gpus.empty());

  const model::Node& v100 = (*nodes)[1];
  ASSERT_EQ(v100.gpus.size(), 8u);
  EXPECT_EQ(v100.gpus[7].index, 7);
  EXPECT_EQ(v100.gpus[7].uuid, "GPU-openb-openb-node-0001-7");
  EXPECT_EQ(v100.gpus[7].model, "V100M32");
  EXPECT_EQ(v100.gpus[7].memory_bytes, 32510 * kMiB);
  EXPECT_EQ(v100.gpus[7].sharing, model::GpuSharing::kTimeslice);

  const model::Node& g2 = (*nodes)[2];
  ASSERT_EQ(g2.gpus.size(), 2u);
  EXPECT_EQ(g2.gpus[0].model, "G2");
  EXPECT_EQ(g2.gpus[0].memory_bytes, 0) << "a model outside the table has unknown memory";
}

TEST(OpenbGpuMemoryBytes, FollowsTheTable) {
  EXPECT_EQ(OpenbGpuMemoryBytes("P4"), 7611 * kMiB);
  EXPECT_EQ(OpenbGpuMemoryBytes("2080"), 11019 * kMiB);
  EXPECT_EQ(OpenbGpuMemoryBytes("T4"), 15109 * kMiB);
  EXPECT_EQ(OpenbGpuMemoryBytes("A100"), 81251 * kMiB);
  EXPECT_EQ(OpenbGpuMemoryBytes("G3"), 0);
  EXPECT_EQ(OpenbGpuMemoryBytes(""), 0);
}

TEST(LoadOpenbNodes, ReportsMalformedRowsWithFileLineAndColumn) {
  const std::string header = "sn,cpu_milli,memory_mib,gpu,model\n";
  std::string path = WriteTemp("n1.csv", header + "a,1000,1024,1,T4\nb,x,1024,1,T4\n");
  EXPECT_EQ(ErrorOf(LoadOpenbNodes(path)),
            path + ":3: column 'cpu_milli': expected a non-negative whole number, found 'x'");
  path = WriteTemp("n2.csv", header + "a,1000,1024,1,T4\na,1000,1024,1,T4\n");
  EXPECT_EQ(ErrorOf(LoadOpenbNodes(path)),
            path + ":3: column 'sn': duplicate node 'a' (first on line 2)");
  path = WriteTemp("n3.csv", "sn,cpu_milli,memory_mib,model\na,1,1,T4\n");
  EXPECT_EQ(ErrorOf(LoadOpenbNodes(path)),
            path +
                ":1: column 'gpu': missing from the header (its columns are sn, cpu_milli, "
                "memory_mib, model)");
  path = WriteTemp("n4.csv", header + "a,1000,1024,-1,T4\n");
  EXPECT_EQ(ErrorOf(LoadOpenbNodes(path)),
            path + ":2: column 'gpu': expected a non-negative whole number, found '-1'");
}

TEST(LoadOpenbNodes, MissingFileIsNotFound) {
  auto nodes = LoadOpenbNodes(TestData("no-such-file.csv"));
  ASSERT_FALSE(nodes);
  EXPECT_EQ(nodes.error().code, ErrorCode::kNotFound);
}

TEST(LoadOpenbPods, MapsWholeSharedAndCpuPods) {
  auto pods = LoadOpenbPods(TestData("openb_pods.csv"));
  ASSERT_TRUE(pods) << pods.error().message;
  ASSERT_EQ(pods->size(), 4u);

  const TraceJob& whole = (*pods)[0];
  EXPECT_EQ(whole.name, "pod-whole");
  EXPECT_EQ(whole.spec.name, "pod-whole");
  EXPECT_EQ(whole.user, "openb");
  EXPECT_EQ(whole.spec.queue, "default");
  EXPECT_EQ(whole.spec.workers, 1);
  EXPECT_EQ(whole.spec.requirements.per_worker.cpu_millis, 12000);
  EXPECT_EQ(whole.spec.requirements.per_worker.memory_bytes, 16384 * kMiB);
  EXPECT_EQ(whole.spec.requirements.per_worker.gpus, 2);
  EXPECT_EQ(whole.spec.requirements.gpu_share_millis, 0);
  EXPECT_TRUE(whole.spec.requirements.gpu_models.empty());
  EXPECT_EQ(whole.submit, 10'000);
  EXPECT_EQ(whole.duration, 90'000) << "deletion - scheduled";
  EXPECT_FALSE(whole.spec.interruptible);

  const TraceJob& share = (*pods)[1];
  EXPECT_EQ(share.spec.requirements.per_worker.gpus, 0);
  EXPECT_EQ(share.spec.requirements.gpu_share_millis, 460);
  EXPECT_THAT(share.spec.requirements.gpu_models, ElementsAre("T4", "V100M16"));
  EXPECT_EQ(share.submit, 5'000);
  EXPECT_EQ(share.duration, 60'000) << "no scheduled_time: deletion - creation";

  const TraceJob& cpu = (*pods)[2];
  EXPECT_EQ(cpu.spec.requirements.per_worker.gpus, 0);
  EXPECT_EQ(cpu.spec.requirements.gpu_share_millis, 0);
  EXPECT_EQ(cpu.submit, 30'000);
  EXPECT_EQ(cpu.duration, 0) << "no deletion_time";

  const TraceJob& late = (*pods)[3];
  EXPECT_EQ(late.submit, 0);
  EXPECT_EQ(late.duration, 0);
  EXPECT_THAT(late.spec.requirements.gpu_models, ElementsAre("P100"));
}

TEST(LoadOpenbPods, KeepsFileOrderAndReadsTheShortLayout) {
  const std::string path = WriteTemp("short.csv",
                                     "name,cpu_milli,memory_mib,num_gpu,gpu_milli\n"
                                     "p2,1000,1024,8,1000\n"
                                     "p1,1000,1024,1,250\n");
  auto pods = LoadOpenbPods(path);
  ASSERT_TRUE(pods) << pods.error().message;
  ASSERT_EQ(pods->size(), 2u);
  EXPECT_EQ((*pods)[0].name, "p2");
  EXPECT_EQ((*pods)[0].spec.requirements.per_worker.gpus, 8);
  EXPECT_EQ((*pods)[1].spec.requirements.gpu_share_millis, 250);
}

TEST(LoadOpenbPods, ReportsMalformedRowsWithFileLineAndColumn) {
  const std::string header =
      "name,cpu_milli,memory_mib,num_gpu,gpu_milli,gpu_spec,qos,pod_phase,creation_time,"
      "deletion_time,scheduled_time\n";
  const std::string ok = "ok,1000,1024,1,1000,,LS,Running,0,10,0\n";
  struct Case {
    std::string row;
    std::string error;
  };
  const std::vector<Case> cases = {
      {"p,1000,1024,2,500,,LS,Running,0,10,0\n",
       ":3: column 'gpu_milli': a pod with 2 GPUs must take them whole (1000), found 500; only a "
       "one-GPU pod may share its GPU"},
      {"p,1000,1024,1,0,,LS,Running,0,10,0\n",
       ":3: column 'gpu_milli': must be from 1 to 1000 for a pod with GPUs (num_gpu 1), found 0"},
      {"p,1000,1024,1,1500,,LS,Running,0,10,0\n",
       ":3: column 'gpu_milli': must be from 1 to 1000 for a pod with GPUs (num_gpu 1), found "
       "1500"},
      {"p,1000,1024,1,1000,,LS,Running,0,10,20\n",
       ":3: column 'deletion_time': is before scheduled_time (10 < 20)"},
      {"p,1000,1024,1,1000,,LS,Running,x,10,0\n",
       ":3: column 'creation_time': expected a non-negative whole number, found 'x'"},
      {"ok,1000,1024,1,1000,,LS,Running,0,10,0\n",
       ":3: column 'name': duplicate job name 'ok' (first on line 2)"},
      {"p,1000,1024,1,1000,,LS\n",
       ":3: column 'pod_phase': missing: the record has 7 fields, the header 11"},
  };
  int i = 0;
  for (const Case& c : cases) {
    const std::string path = WriteTemp("pods" + std::to_string(i++) + ".csv", header + ok + c.row);
    auto pods = LoadOpenbPods(path);
    ASSERT_FALSE(pods) << c.row;
    EXPECT_EQ(pods.error().code, ErrorCode::kInvalidArgument);
    EXPECT_EQ(pods.error().message, path + c.error);
  }
}

// ---------------------------------------------------------------------------------------------
// Tiresias

TEST(LoadTiresiasCluster, BuildsSwitchesOfNodes) {
  auto nodes = LoadTiresiasCluster(TestData("tiresias_cluster.csv"));
  ASSERT_TRUE(nodes) << nodes.error().message;
  ASSERT_EQ(nodes->size(), 6u);
  EXPECT_EQ((*nodes)[0].name.value(), "s0-n0");
  EXPECT_EQ((*nodes)[4].name.value(), "s1-n1");
  EXPECT_EQ((*nodes)[4].labels, (std::map<std::string, std::string>{{"switch", "s1"}}));
  EXPECT_EQ((*nodes)[4].cpu_millis, 40'000);
  EXPECT_EQ((*nodes)[4].memory_bytes, 256 * kGiB);
  ASSERT_EQ((*nodes)[4].gpus.size(), 4u);
  EXPECT_EQ((*nodes)[4].gpus[3].model, "GPU");
  EXPECT_EQ((*nodes)[4].gpus[3].uuid, "GPU-tiresias-s1-n1-3");
  EXPECT_EQ((*nodes)[4].gpus[3].sharing, model::GpuSharing::kExclusive);
}

TEST(LoadTiresiasCluster, RejectsMalformedSpecs) {
  const std::string header =
      "num_switch,num_node_p_switch,num_gpu_p_node,num_cpu_p_node,mem_p_node\n";
  std::string path = WriteTemp("c1.csv", header + "0,32,4,40,256\n");
  EXPECT_EQ(ErrorOf(LoadTiresiasCluster(path)),
            path + ":2: column 'num_switch': must be from 1 to 100000, found 0");
  path = WriteTemp("c2.csv", header + "1,32,4,40,256\n1,32,4,40,256\n");
  EXPECT_EQ(ErrorOf(LoadTiresiasCluster(path)),
            path + ":3: expected one row describing the cluster, found a second one");
  path = WriteTemp("c3.csv", header);
  EXPECT_EQ(ErrorOf(LoadTiresiasCluster(path)),
            path + ":2: expected one row describing the cluster, found none");
  path =
      WriteTemp("c4.csv", "num_switch,num_node_p_switch,num_gpu_p_node,num_cpu_p_node\n1,1,1,1\n");
  EXPECT_THAT(ErrorOf(LoadTiresiasCluster(path)),
              StartsWith(path + ":1: column 'mem_p_node': missing from the header"));
}

TEST(LoadTiresiasJobs, MakesGangsOfWholeNodesAndSortsBySubmit) {
  auto jobs = LoadTiresiasJobs(TestData("tiresias_jobs.csv"), 4);
  ASSERT_TRUE(jobs) << jobs.error().message;
  ASSERT_EQ(jobs->size(), 3u);
  // job 1 arrives first; 0 and 2 tie at 30 s and keep the file's order.
  EXPECT_EQ((*jobs)[0].name, "job-1");
  EXPECT_EQ((*jobs)[1].name, "job-0");
  EXPECT_EQ((*jobs)[2].name, "job-2");
  const TraceJob& gang = (*jobs)[0];
  EXPECT_EQ(gang.submit, 0);
  EXPECT_EQ(gang.duration, 147'000);
  EXPECT_EQ(gang.spec.workers, 2);
  EXPECT_EQ(gang.spec.requirements.per_worker.gpus, 4);
  EXPECT_EQ(gang.spec.requirements.topology_level, "");
  EXPECT_TRUE(gang.spec.interruptible);
  EXPECT_EQ(gang.user, "tiresias");
  const TraceJob& two = (*jobs)[2];
  EXPECT_EQ(two.submit, 30'000);
  EXPECT_EQ(two.duration, 127'000);
  EXPECT_EQ(two.spec.workers, 1);
  EXPECT_EQ(two.spec.requirements.per_worker.gpus, 2);
}

TEST(LoadTiresiasJobs, RejectsGangsThatDoNotSplitIntoNodes) {
  const std::string path = WriteTemp("j1.csv",
                                     "job_id,num_gpu,submit_time,duration\n"
                                     "0,4,0,10\n"
                                     "1,6,0,10\n");
  EXPECT_EQ(ErrorOf(LoadTiresiasJobs(path, 4)),
            path + ":3: column 'num_gpu': 6 GPUs do not split into whole nodes of 4 GPUs");
  EXPECT_EQ(ErrorOf(LoadTiresiasJobs(path, 0)),
            "gpus_per_node must be at least 1, found 0 (loading " + path + ")");
  const std::string zero = WriteTemp("j2.csv", "job_id,num_gpu,submit_time,duration\n0,0,0,10\n");
  EXPECT_EQ(ErrorOf(LoadTiresiasJobs(zero, 4)),
            zero +
                ":2: column 'num_gpu': must be from 1 to 1000000 (a Tiresias job uses GPUs), "
                "found 0");
  const std::string dup =
      WriteTemp("j3.csv", "job_id,num_gpu,submit_time,duration\n7,1,0,10\n7,1,0,10\n");
  EXPECT_EQ(ErrorOf(LoadTiresiasJobs(dup, 4)),
            dup + ":3: column 'job_id': duplicate job 'job-7' (first on line 2)");
}

// ---------------------------------------------------------------------------------------------
// Drover node file

TEST(LoadClusterFile, ParsesDroverNodeFiles) {
  auto nodes = LoadClusterFile(TestData("nodes.yaml"));
  ASSERT_TRUE(nodes) << nodes.error().message;
  ASSERT_EQ(nodes->size(), 2u);
  EXPECT_EQ((*nodes)[0].name.value(), "gpu-a");
  EXPECT_EQ((*nodes)[0].gpus.size(), 8u);
  EXPECT_EQ((*nodes)[0].labels.at("rack"), "r1");
  EXPECT_EQ((*nodes)[1].cpu_millis, 32'000);
}

TEST(LoadClusterFile, ReportsErrorsOfTheNodeFileParser) {
  EXPECT_EQ(LoadClusterFile(TestData("missing.yaml")).error().code, ErrorCode::kNotFound);
  const std::string path = WriteTemp("bad.yaml", "nodes:\n  - name: a\n    cpu: \"4\"\n");
  auto nodes = LoadClusterFile(path);
  ASSERT_FALSE(nodes);
  EXPECT_EQ(nodes.error().code, ErrorCode::kInvalidArgument);
  EXPECT_EQ(nodes.error().message, "1 error in " + path);
  ASSERT_EQ(nodes.error().details.size(), 1u);
  EXPECT_THAT(nodes.error().details[0], StartsWith(path + ":"));
}

// ---------------------------------------------------------------------------------------------
// Drover job traces

void ExpectSampleJobs(const std::vector<TraceJob>& jobs) {
  ASSERT_EQ(jobs.size(), 3u);
  // Sorted by submit: the unnamed job (0 s), notebook (1.5 s), train (10 s).
  const TraceJob& unnamed = jobs[0];
  EXPECT_EQ(unnamed.name, "job-4");
  EXPECT_EQ(unnamed.duration, 60'000);
  EXPECT_EQ(unnamed.user, "default");
  EXPECT_EQ(unnamed.spec.queue, "default");
  EXPECT_EQ(unnamed.spec.priority_class, "normal");
  EXPECT_EQ(unnamed.spec.requirements.per_worker.cpu_millis, 1000);
  EXPECT_EQ(unnamed.spec.requirements.per_worker.memory_bytes, kGiB);
  EXPECT_EQ(unnamed.spec.workers, 1);
  EXPECT_EQ(unnamed.spec.min_workers, 0);

  const TraceJob& notebook = jobs[1];
  EXPECT_EQ(notebook.name, "notebook");
  EXPECT_EQ(notebook.submit, 1'500);
  EXPECT_EQ(notebook.duration, 90'000);
  EXPECT_EQ(notebook.user, "bob");
  EXPECT_EQ(notebook.spec.owner, "bob");
  EXPECT_EQ(notebook.spec.requirements.per_worker.cpu_millis, 500);
  EXPECT_EQ(notebook.spec.requirements.per_worker.memory_bytes, 4 * kGiB);
  EXPECT_EQ(notebook.spec.requirements.per_worker.gpus, 0);
  EXPECT_EQ(notebook.spec.requirements.gpu_share_millis, 250);
  EXPECT_FALSE(notebook.spec.timeout.has_value());

  const TraceJob& train = jobs[2];
  EXPECT_EQ(train.name, "train");
  EXPECT_EQ(train.submit, 10'000);
  EXPECT_EQ(train.duration, 3'600'000);
  EXPECT_EQ(train.spec.requirements.per_worker.cpu_millis, 8000);
  EXPECT_EQ(train.spec.requirements.per_worker.memory_bytes, 64 * kGiB);
  EXPECT_EQ(train.spec.requirements.per_worker.gpus, 4);
  EXPECT_THAT(train.spec.requirements.gpu_models, ElementsAre("H100", "A100"));
  EXPECT_EQ(train.spec.workers, 2);
  EXPECT_EQ(train.spec.min_workers, 1);
  EXPECT_EQ(train.spec.queue, "research");
  EXPECT_EQ(train.user, "alice");
  EXPECT_EQ(train.spec.priority_class, "high");
  EXPECT_EQ(train.spec.requirements.topology_level, "rack");
  EXPECT_TRUE(train.spec.interruptible);
  EXPECT_EQ(train.checkpoint_interval, 600'000);
  EXPECT_EQ(train.spec.timeout, 7'200'000);
}

TEST(LoadDroverJobs, ReadsCsv) {
  auto jobs = LoadDroverJobs(TestData("jobs.csv"));
  ASSERT_TRUE(jobs) << jobs.error().message;
  ExpectSampleJobs(*jobs);
}

TEST(LoadDroverJobs, ReadsJsonLinesWithTheSameMeaning) {
  auto jobs = LoadDroverJobs(TestData("jobs.jsonl"));
  ASSERT_TRUE(jobs) << jobs.error().message;
  ExpectSampleJobs(*jobs);
  auto csv = LoadDroverJobs(TestData("jobs.csv"));
  ASSERT_TRUE(csv);
  ASSERT_EQ(csv->size(), jobs->size());
  for (std::size_t i = 0; i < jobs->size(); ++i) {
    EXPECT_EQ((*csv)[i].spec, (*jobs)[i].spec) << i;
  }
}

TEST(LoadDroverJobs, RequiresOnlySubmitAndDuration) {
  const std::string path = WriteTemp("min.csv", "duration_s,submit_s\n5,7\n");
  auto jobs = LoadDroverJobs(path);
  ASSERT_TRUE(jobs) << jobs.error().message;
  ASSERT_EQ(jobs->size(), 1u);
  EXPECT_EQ((*jobs)[0].name, "job-2");
  EXPECT_EQ((*jobs)[0].submit, 7'000);
  EXPECT_EQ((*jobs)[0].duration, 5'000);
  const std::string no_duration = WriteTemp("nodur.csv", "name,submit_s\na,1\n");
  EXPECT_EQ(ErrorOf(LoadDroverJobs(no_duration)),
            no_duration +
                ":1: column 'duration_s': missing from the header (its columns are name, "
                "submit_s)");
}

TEST(LoadDroverJobs, ReportsMalformedCsvRowsWithFileLineAndColumn) {
  const std::string header =
      "name,submit_s,duration_s,gpus,gpu_share,workers,min_workers,priority,topology,"
      "interruptible,timeout_s,memory\n";
  struct Case {
    std::string row;
    std::string error;
  };
  const std::vector<Case> cases = {
      {"b,-1,10,,,,,,,,,\n", ":3: column 'submit_s': must not be negative ('-1')"},
      {"b,1,,,,,,,,,,\n", ":3: column 'duration_s': required: the run time in seconds"},
      {"b,1,10,0.5,,,,,,,,\n",
       ":3: column 'gpus': GPU count must be a whole number, found '0.5'; for part of one GPU use "
       "gpu_share"},
      {"b,1,10,2,250m,,,,,,,\n",
       ":3: column 'gpu_share': cannot be combined with gpus (2): a worker gets whole GPUs or a "
       "part of one GPU, not both"},
      {"b,1,10,,1.5,,,,,,,\n",
       ":3: column 'gpu_share': must be from 1m to 999m (0.001 to 0.999) of one GPU, found '1.5'; "
       "ask for whole GPUs with gpus"},
      {"b,1,10,,,0,,,,,,\n", ":3: column 'workers': must be from 1 to 100000, found 0"},
      {"b,1,10,,,2,3,,,,,\n", ":3: column 'min_workers': must be from 1 to 2, found 3"},
      {"b,1,10,,,,,urgent,,,,\n",
       ":3: column 'priority': unknown priority class 'urgent'; valid classes are critical, high, "
       "normal, low"},
      {"b,1,10,,,,,hihg,,,,\n",
       ":3: column 'priority': unknown priority class 'hihg' (did you mean 'high'?); valid classes "
       "are critical, high, normal, low"},
      {"b,1,10,,,,,,rack=1,,,\n",
       ":3: column 'topology': invalid label name 'rack=1': write the label's name only (rack), "
       "without a value"},
      {"b,1,10,,,,,,,yes,,\n", ":3: column 'interruptible': expected true or false, found 'yes'"},
      {"b,1,10,,,,,,,,0,\n", ":3: column 'timeout_s': must be greater than zero"},
      {"b,1,10,,,,,,,,,lots\n", ":3: column 'memory': "},
      {"a,1,10,,,,,,,,,\n", ":3: column 'name': duplicate job name 'a' (first on line 2)"},
  };
  int i = 0;
  for (const Case& c : cases) {
    const std::string path =
        WriteTemp("jobs" + std::to_string(i++) + ".csv", header + "a,0,1,,,,,,,,,\n" + c.row);
    auto jobs = LoadDroverJobs(path);
    ASSERT_FALSE(jobs) << c.row;
    EXPECT_EQ(jobs.error().code, ErrorCode::kInvalidArgument);
    EXPECT_THAT(jobs.error().message, StartsWith(path + c.error)) << c.row;
  }
}

TEST(LoadDroverJobs, RejectsUnknownColumnsWithASuggestion) {
  const std::string path = WriteTemp("typo.csv", "submit_s,duration_s,gpu\n1,1,1\n");
  EXPECT_THAT(ErrorOf(LoadDroverJobs(path)),
              StartsWith(path + ":1: column 'gpu': unknown column (did you mean 'gpus'?); the "
                                "columns are name, submit_s,"));
}

TEST(LoadDroverJobs, ReportsMalformedJsonLinesWithFileLineAndField) {
  struct Case {
    std::string line;
    std::string error;
  };
  const std::vector<Case> cases = {
      {R"({"submit_s": 1})", ":3: field 'duration_s': required: the run time in seconds"},
      {R"({"submit_s": 1, "duration_s": 2, "gpus": [1]})",
       ":3: field 'gpus': expected a number or a string, found array"},
      {R"({"submit_s": 1, "duration_s": 2, "gpu": 1})",
       ":3: field 'gpu': unknown field (did you mean 'gpus'?)"},
      {R"({"submit_s": 1, "duration_s": 2, "interruptible": "maybe"})",
       ":3: field 'interruptible': expected true or false, found 'maybe'"},
      {R"({"submit_s": 1, "duration_s": 2, "gpu_share": 2})",
       ":3: field 'gpu_share': must be from 1m to 999m"},
      {R"([1, 2])", ":3: expected a JSON object, found array"},
      {R"({"submit_s": 1,)", ":3: invalid JSON: "},
      {R"({"name": "a", "submit_s": 1, "duration_s": 2})",
       ":3: field 'name': duplicate job name 'a' (first on line 1)"},
  };
  int i = 0;
  for (const Case& c : cases) {
    const std::string path =
        WriteTemp("jobs" + std::to_string(i++) + ".jsonl",
                  "{\"name\": \"a\", \"submit_s\": 0, \"duration_s\": 1}\n\n" + c.line + "\n");
    auto jobs = LoadDroverJobs(path);
    ASSERT_FALSE(jobs) << c.line;
    EXPECT_EQ(jobs.error().code, ErrorCode::kInvalidArgument);
    EXPECT_THAT(jobs.error().message, StartsWith(path + c.error)) << c.line;
  }
}

TEST(LoadDroverJobs, ChoosesTheFormatByExtension) {
  auto other = LoadDroverJobs(WriteTemp("jobs.txt", "submit_s,duration_s\n1,1\n"));
  ASSERT_FALSE(other);
  EXPECT_EQ(other.error().code, ErrorCode::kInvalidArgument);
  EXPECT_THAT(other.error().message, HasSubstr("expected a file ending in .csv or .jsonl"));
  EXPECT_EQ(LoadDroverJobs(TestData("missing.csv")).error().code, ErrorCode::kNotFound);
  EXPECT_EQ(LoadDroverJobs(TestData("missing.jsonl")).error().code, ErrorCode::kNotFound);
}

}  // namespace
}  // namespace drover::sim
