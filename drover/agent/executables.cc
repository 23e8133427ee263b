#include "drover/agent/executables.h"

#include <unistd.h>

#include <filesystem>
#include <system_error>

namespace drover::agent {

std::string SelfExecutable() {
  std::error_code error;
  const std::filesystem::path path = std::filesystem::read_symlink("/proc/self/exe", error);
  return error ? std::string("drover") : path.string();
}

std::string BesideSelf(std::string_view name) {
  const std::filesystem::path path = std::filesystem::path(SelfExecutable()).parent_path() / name;
  return access(path.c_str(), X_OK) == 0 ? path.string() : std::string();
}

std::string BesideSelfOrSelf(std::string_view name) {
  std::string beside = BesideSelf(name);
  return beside.empty() ? SelfExecutable() : beside;
}

}  // namespace drover::agent
