#include "drover/agent/outputs.h"

#include <fmt/format.h>

#include <cctype>

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
Result<std::string> ReadValue(FileSystem& fs, const model::StagedOutput& output) {
  auto text = fs.Read(output.staging, 0, kMaxOutputValueBytes + 1);
  if (!text && text.error().code == ErrorCode::kNotFound) return NotWritten(output);
  if (!text) {
    return FailedPrecondition(fmt::format("output '{}': {}", output.name, text.error().message));
  }
  std::string value = text->substr(0, text->find('\n'));
  if (value.size() > kMaxOutputValueBytes) {
    return FailedPrecondition(
        fmt::format("output '{}': the first line of {} is longer than {} bytes", output.name,
                    output.staging, kMaxOutputValueBytes));
  }
  while (!value.empty() && std::isspace(static_cast<unsigned char>(value.back()))) {
    value.pop_back();
  }
  return value;
}

Status CheckStaged(FileSystem& fs, const model::StagedOutput& output) {
  auto info = fs.LinkStat(output.staging);
  if (info) return OkStatus();
  if (info.error().code == ErrorCode::kNotFound) return NotWritten(output);
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

Result<std::map<std::string, std::string>> PublishOutputs(
    const std::vector<model::StagedOutput>& outputs, FileSystem& fs) {
  std::map<std::string, std::string> published;
  for (const model::StagedOutput& output : outputs) {
    if (output.destination.empty()) {
      DROVER_ASSIGN_OR_RETURN(published[output.name], ReadValue(fs, output));
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
