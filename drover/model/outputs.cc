#include "drover/model/outputs.h"

#include <fmt/format.h>

#include <cctype>

namespace drover::model {

std::string DirectoryOf(const std::string& path) {
  const std::size_t slash = path.find_last_of('/');
  if (slash == std::string::npos) return ".";
  if (slash == 0) return "/";
  return path.substr(0, slash);
}

std::string StagingPathFor(const std::string& destination, JobId job, int attempt) {
  std::string trimmed = destination;
  while (trimmed.size() > 1 && trimmed.back() == '/') trimmed.pop_back();
  const std::size_t slash = trimmed.find_last_of('/');
  const std::string base = slash == std::string::npos ? trimmed : trimmed.substr(slash + 1);
  return fmt::format("{}/.drover-staging/job-{}.attempt-{}/{}", DirectoryOf(trimmed), job.value(),
                     attempt, base);
}

std::vector<StagedOutput> StagedOutputs(const JobSpec& spec, JobId job, int attempt,
                                        const std::string& value_root) {
  std::vector<StagedOutput> staged;
  for (const OutputSpec& output : spec.outputs) {
    StagedOutput one;
    one.name = output.name;
    one.destination = output.path;
    one.staging = output.path.empty() ? fmt::format("{}/job-{}/attempt-{}/{}", value_root,
                                                    job.value(), attempt, output.name)
                                      : StagingPathFor(output.path, job, attempt);
    staged.push_back(std::move(one));
  }
  return staged;
}

std::string NodeValueOutputDir(const std::string& worker_dir) { return worker_dir + "/outputs"; }

std::string NodeValueOutputPath(const std::string& worker_dir, const std::string& name) {
  return NodeValueOutputDir(worker_dir) + "/" + name;
}

std::string OutputVariable(const std::string& name) {
  std::string variable = "DROVER_OUTPUT_";
  for (char c : name) variable += static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  return variable;
}

}  // namespace drover::model
