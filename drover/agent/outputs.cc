#include "drover/agent/outputs.h"

#include <fmt/format.h>

#include <cctype>

namespace drover::agent {
namespace {

std::string WithoutTrailingSlashes(std::string path) {
  while (path.size() > 1 && path.back() == '/') path.pop_back();
  return path;
}

tl::unexpected<Error> NotWritten(const std::string& name, const std::string& path) {
  return FailedPrecondition(
      fmt::format("output '{}' was not written: {} does not exist", name, path));
}

Status CheckStaged(FileSystem& fs, const model::StagedOutput& output) {
  auto info = fs.LinkStat(output.staging);
  if (info) return OkStatus();
  if (info.error().code == ErrorCode::kNotFound) return NotWritten(output.name, output.staging);
  return FailedPrecondition(fmt::format("output '{}': {}", output.name, info.error().message));
}

// Moves a checked path output onto its destination (see PublishOutputs).
Status Move(FileSystem& fs, const model::StagedOutput& output, const std::string& destination) {
  DROVER_RETURN_IF_ERROR(fs.CreateDirectories(model::DirectoryOf(destination)));
  auto existing = fs.LinkStat(destination);
  if (!existing && existing.error().code != ErrorCode::kNotFound) {
    return Internal(fmt::format("output '{}': {}", output.name, existing.error().message));
  }
  if (!existing) {
    Status moved = fs.Rename(output.staging, destination);
    if (!moved) return Internal(fmt::format("output '{}': {}", output.name, moved.error().message));
    return OkStatus();
  }
  Status swapped = fs.Exchange(output.staging, destination);
  if (!swapped) {
    return Internal(fmt::format("output '{}': {}", output.name, swapped.error().message));
  }
  // What cannot be removed stays in the staging directory.
  static_cast<void>(fs.RemoveAll(output.staging));
  return OkStatus();
}

}  // namespace

Result<std::string> ReadOutputValue(const std::string& name, const std::string& path,
                                    FileSystem& fs) {
  auto text = fs.Read(path, 0, model::kMaxOutputValueBytes + 1);
  if (!text && text.error().code == ErrorCode::kNotFound) return NotWritten(name, path);
  if (!text) return FailedPrecondition(fmt::format("output '{}': {}", name, text.error().message));
  std::string value = text->substr(0, text->find('\n'));
  if (value.size() > model::kMaxOutputValueBytes) {
    return FailedPrecondition(
        fmt::format("output '{}': the first line of {} is longer than {} bytes", name, path,
                    model::kMaxOutputValueBytes));
  }
  while (!value.empty() && std::isspace(static_cast<unsigned char>(value.back()))) {
    value.pop_back();
  }
  return value;
}

Result<std::map<std::string, std::string>> PublishOutputs(
    const std::vector<model::StagedOutput>& outputs,
    const std::map<std::string, std::string>& reported_values, FileSystem& fs) {
  std::map<std::string, std::string> published;
  for (const model::StagedOutput& output : outputs) {
    if (output.destination.empty()) {
      auto reported = reported_values.find(output.name);
      if (reported != reported_values.end()) {
        published[output.name] = reported->second;
      } else if (Result<std::string> read = ReadOutputValue(output.name, output.staging, fs)) {
        published[output.name] = *std::move(read);
      } else {
        return FailedPrecondition(
            fmt::format("{} (and no worker's node reported its value: see the workers' exits)",
                        read.error().message));
      }
    } else {
      DROVER_RETURN_IF_ERROR(CheckStaged(fs, output));
    }
  }
  for (const model::StagedOutput& output : outputs) {
    if (output.destination.empty()) continue;
    std::string destination = WithoutTrailingSlashes(output.destination);
    DROVER_RETURN_IF_ERROR(Move(fs, output, destination));
    published[output.name] = std::move(destination);
  }
  for (const model::StagedOutput& output : outputs) {
    // Fails, harmlessly, when not empty.
    if (!output.destination.empty()) {
      static_cast<void>(fs.RemoveEmptyDirectory(model::DirectoryOf(output.staging)));
    }
  }
  return published;
}

void DiscardStaging(const std::vector<model::StagedOutput>& outputs, FileSystem& fs) {
  // Best effort: what cannot be removed stays.
  for (const model::StagedOutput& output : outputs) static_cast<void>(fs.RemoveAll(output.staging));
  for (const model::StagedOutput& output : outputs) {
    // Fails, harmlessly, when not empty.
    static_cast<void>(fs.RemoveEmptyDirectory(model::DirectoryOf(output.staging)));
  }
}

}  // namespace drover::agent
