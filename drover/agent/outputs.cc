#include "drover/agent/outputs.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cctype>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>

#include "drover/agent/worker_files.h"

namespace drover::agent {
namespace {

std::string WithoutTrailingSlashes(std::string path) {
  while (path.size() > 1 && path.back() == '/') path.pop_back();
  return path;
}

tl::unexpected<Error> NotWritten(const model::StagedOutput& output) {
  return FailedPrecondition(
      fmt::format("output '{}' was not written: {} does not exist", output.name, output.staging));
}

// The first line of the value output's staging file, trailing whitespace removed.
Result<std::string> ReadValue(const model::StagedOutput& output) {
  int fd = open(output.staging.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0 && errno == ENOENT) return NotWritten(output);
  std::string text(kMaxOutputValueBytes + 1, '\0');
  std::size_t size = 0;
  int error = fd < 0 ? errno : 0;
  while (fd >= 0 && size < text.size()) {
    ssize_t n = read(fd, text.data() + size, text.size() - size);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) error = errno;
    if (n <= 0) break;
    size += static_cast<std::size_t>(n);
  }
  if (fd >= 0) close(fd);
  if (error != 0) {
    return FailedPrecondition(fmt::format("output '{}': cannot read {}: {}", output.name,
                                          output.staging, std::strerror(error)));
  }
  text.resize(size);
  text = text.substr(0, text.find('\n'));
  if (text.size() > kMaxOutputValueBytes) {
    return FailedPrecondition(
        fmt::format("output '{}': the first line of {} is longer than {} bytes", output.name,
                    output.staging, kMaxOutputValueBytes));
  }
  while (!text.empty() && std::isspace(static_cast<unsigned char>(text.back()))) text.pop_back();
  return text;
}

Status CheckStaged(const model::StagedOutput& output) {
  struct stat info {};
  if (lstat(output.staging.c_str(), &info) == 0) return OkStatus();
  if (errno == ENOENT) return NotWritten(output);
  return FailedPrecondition(fmt::format("output '{}': cannot look at {}: {}", output.name,
                                        output.staging, std::strerror(errno)));
}

// Moves a checked path output onto its destination (see PublishOutputs).
Status Move(const model::StagedOutput& output, const std::string& destination) {
  DROVER_RETURN_IF_ERROR(MakeDirectories(model::DirectoryOf(destination)));
  struct stat info {};
  if (lstat(destination.c_str(), &info) != 0) {
    if (errno != ENOENT || rename(output.staging.c_str(), destination.c_str()) != 0) {
      return Internal(fmt::format("output '{}': cannot move {} to {}: {}", output.name,
                                  output.staging, destination, std::strerror(errno)));
    }
    return OkStatus();
  }
  if (renameat2(AT_FDCWD, output.staging.c_str(), AT_FDCWD, destination.c_str(), RENAME_EXCHANGE) !=
      0) {
    return Internal(fmt::format("output '{}': cannot swap {} into {}: {}", output.name,
                                output.staging, destination, std::strerror(errno)));
  }
  std::error_code ignored;  // What cannot be removed stays in the staging directory.
  std::filesystem::remove_all(output.staging, ignored);
  return OkStatus();
}

}  // namespace

Result<std::map<std::string, std::string>> PublishOutputs(
    const std::vector<model::StagedOutput>& outputs) {
  std::map<std::string, std::string> published;
  for (const model::StagedOutput& output : outputs) {
    if (output.destination.empty()) {
      auto value = ReadValue(output);
      if (!value) return tl::unexpected(value.error());
      published[output.name] = *std::move(value);
    } else {
      DROVER_RETURN_IF_ERROR(CheckStaged(output));
    }
  }
  for (const model::StagedOutput& output : outputs) {
    if (output.destination.empty()) continue;
    std::string destination = WithoutTrailingSlashes(output.destination);
    DROVER_RETURN_IF_ERROR(Move(output, destination));
    published[output.name] = std::move(destination);
  }
  for (const model::StagedOutput& output : outputs) {
    if (!output.destination.empty()) rmdir(model::DirectoryOf(output.staging).c_str());
  }
  return published;
}

void DiscardStaging(const std::vector<model::StagedOutput>& outputs) {
  for (const model::StagedOutput& output : outputs) {
    std::error_code ignored;
    std::filesystem::remove_all(output.staging, ignored);
  }
  for (const model::StagedOutput& output : outputs) {
    rmdir(model::DirectoryOf(output.staging).c_str());  // Fails, harmlessly, when not empty.
  }
}

}  // namespace drover::agent
