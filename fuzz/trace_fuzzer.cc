// libFuzzer harness: arbitrary bytes as a trace file through the loaders of sim/trace/loaders.h
// (`drover simulate`; LoadClusterFile is spec::ParseNodeFile, node_file_fuzzer's). The first byte
// chooses the loader (and the file's extension, which LoadDroverJobs reads); the rest is written to
// a file in the system's temporary folder, since the loaders take paths. Errors are values; a
// crash, a sanitizer report or a leak is a finding.

#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>

#include "drover/sim/trace/loaders.h"

namespace {

enum class Loader {
  kOpenbNodes,
  kOpenbPods,
  kTiresiasCluster,
  kTiresiasJobs,
  kDroverJobsCsv,
  kDroverJobsJsonl,
  kCount,
};

// This process's file for `extension`, written whole with `bytes`.
std::string WriteTraceFile(const char* extension, const std::uint8_t* bytes, std::size_t size) {
  const std::string path = (std::filesystem::temp_directory_path() /
                            ("drover-trace-fuzz-" + std::to_string(::getpid()) + extension))
                               .string();
  std::ofstream(path, std::ios::binary | std::ios::trunc)
      .write(reinterpret_cast<const char*>(bytes), static_cast<std::streamsize>(size));
  return path;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  namespace sim = drover::sim;
  if (size == 0) return 0;
  const auto loader = static_cast<Loader>(data[0] % static_cast<int>(Loader::kCount));
  const char* extension = loader == Loader::kDroverJobsJsonl ? ".jsonl" : ".csv";
  const std::string path = WriteTraceFile(extension, data + 1, size - 1);
  switch (loader) {
    case Loader::kOpenbNodes:
      (void)sim::LoadOpenbNodes(path);
      break;
    case Loader::kOpenbPods:
      (void)sim::LoadOpenbPods(path);
      break;
    case Loader::kTiresiasCluster:
      (void)sim::LoadTiresiasCluster(path);
      break;
    case Loader::kTiresiasJobs:
      // The gpus_per_node of the repository's clusters, and a size the jobs may not divide.
      (void)sim::LoadTiresiasJobs(path, 4);
      (void)sim::LoadTiresiasJobs(path, 3);
      break;
    case Loader::kDroverJobsCsv:
    case Loader::kDroverJobsJsonl:
      (void)sim::LoadDroverJobs(path);
      break;
    case Loader::kCount:
      break;
  }
  std::remove(path.c_str());
  return 0;
}
