// Reading Slurm's job listing, as the Slurm executor does at every refresh (docs/benchmarks.md,
// "The listing read in place"): ParseListing of N records of `scontrol show job -o` (about 1 KB
// each, the shape of a real record of the bench's Slurm cluster), each time read by
// ParseLocalTime (one mktime each) or through a LocalTimeMemo (one mktime per distinct text, as
// SlurmExecutor::Refresh does). Run:
//   build/bench/slurm_listing_bench

#include <benchmark/benchmark.h>
#include <fmt/format.h>

#include <functional>
#include <string>
#include <string_view>

#include "drover/exec/slurm/state.h"

namespace drover::exec::slurm {
namespace {

// `jobs` finished jobs, submitted 16 a second (the rate of `sbatch` per job on the 2-core VM),
// each started and ended within its second.
std::string Listing(int jobs) {
  std::string out;
  for (int id = 1; id <= jobs; ++id) {
    const int second = id / 16;
    const std::string submit =
        fmt::format("2026-12-05T10:{:02}:{:02}", 55 + second / 60 % 5, second % 60);
    out += fmt::format(
        "JobId={0} JobName=bench-a1 UserId=root(0) GroupId=root(0) MCS_label=N/A "
        "Priority=4294901759 Nice=0 Account=(null) QOS=(null) JobState=COMPLETED Reason=None "
        "Dependency=(null) Requeue=1 Restarts=0 BatchFlag=1 Reboot=0 ExitCode=0:0 "
        "RunTime=00:00:00 TimeLimit=365-00:00:00 TimeMin=N/A SubmitTime={1} EligibleTime={1} "
        "AccrueTime={1} StartTime={1} EndTime={1} Deadline=N/A PreemptEligibleTime={1} "
        "PreemptTime=None SuspendTime=None SecsPreSuspend=0 LastSchedEval={1} "
        "Scheduler=Backfill Partition=debug AllocNode:Sid=localhost:27283 ReqNodeList=(null) "
        "ExcNodeList=(null) NodeList=n{2} BatchHost=n{2} NumNodes=1 NumCPUs=1 NumTasks=1 "
        "CPUs/Task=1 ReqB:S:C:T=0:0:*:* TRES=cpu=1,mem=100M,node=1,billing=1 Socks/Node=* "
        "NtasksPerN:B:S:C=0:0:*:* CoreSpec=* MinCPUsNode=1 MinMemoryNode=100M MinTmpDiskNode=0 "
        "Features=(null) DelayBoot=00:00:00 OverSubscribe=OK Contiguous=0 Licenses=(null) "
        "Network=(null) Command=/dev/shm/sbs-1k/A1/job.sh WorkDir=/work/main StdErr=/dev/null "
        "StdIn=/dev/null StdOut=/dev/null Power=\n",
        id, submit, id % 4 + 1);
  }
  return out;
}

void ReadListing(benchmark::State& state, bool memo) {
  const std::string listing = Listing(static_cast<int>(state.range(0)));
  for (auto _ : state) {
    LocalTimeMemo local_times;
    const TimeParser parse_time = memo ? TimeParser(std::ref(local_times)) : &ParseLocalTime;
    JobListing jobs = ParseListing(listing, parse_time);
    benchmark::DoNotOptimize(jobs.records.data());
  }
  state.SetItemsProcessed(state.iterations() * state.range(0));
}

void BM_SlurmListingEachTimeParsed(benchmark::State& state) { ReadListing(state, false); }
void BM_SlurmListingTimesMemoized(benchmark::State& state) { ReadListing(state, true); }
BENCHMARK(BM_SlurmListingEachTimeParsed)->Arg(1000)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_SlurmListingTimesMemoized)->Arg(1000)->Arg(10000)->Unit(benchmark::kMillisecond);

}  // namespace
}  // namespace drover::exec::slurm

BENCHMARK_MAIN();
