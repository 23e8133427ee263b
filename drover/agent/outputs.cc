#include "drover/agent/outputs.h"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <filesystem>
#include <optional>
#include <sstream>

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

// Whether `info`, what a look at `output`'s staging path found, is something staged.
Status CheckStaged(const model::StagedOutput& output, const Result<FileInfo>& info) {
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

std::string FormatPublicationRecord(const PublicationRecord& record) {
  std::string text;
  for (const auto& [name, identity] : record) {
    text += fmt::format("{} {} {}\n", name, identity.first, identity.second);
  }
  return text;
}

Result<PublicationRecord> ParsePublicationRecord(std::string_view text) {
  PublicationRecord record;
  int number = 0;
  while (!text.empty()) {
    const std::size_t end = std::min(text.find('\n'), text.size());
    const std::string line(text.substr(0, end));
    text.remove_prefix(std::min(end + 1, text.size()));
    ++number;
    std::istringstream in(line);
    std::string name;
    std::uint64_t device = 0;
    std::uint64_t inode = 0;
    std::string rest;
    if (!(in >> name >> device >> inode) || (in >> rest)) {
      return InvalidArgument(
          fmt::format("publication record, line {}: not \"NAME DEVICE INODE\"", number));
    }
    record[name] = {device, inode};
  }
  return record;
}

namespace {

using Identity = std::pair<std::uint64_t, std::uint64_t>;

Identity IdentityOf(const FileInfo& info) { return {info.device, info.inode}; }

// What the publication does with one path output.
struct PathStep {
  const model::StagedOutput* output = nullptr;
  std::string destination;  // without trailing slashes
  Identity staged;          // the staged file's identity (recorded, or read now)
  bool move = true;         // false: a resumed publication moved it already
  // With !move: what is at the staging path is the previous output a swap left, to remove.
  bool clear_staging = false;
};

// The first part of PublishOutputs: every value read or taken as reported into `published`,
// every path output checked into `steps` (against `resumed`, the record of an earlier try).
Status CheckOutputs(const std::vector<model::StagedOutput>& outputs,
                    const std::map<std::string, std::string>& reported_values, FileSystem& fs,
                    const PublicationRecord* resumed, std::map<std::string, std::string>& published,
                    std::vector<PathStep>& steps) {
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
      continue;
    }
    PathStep step;
    step.output = &output;
    step.destination = WithoutTrailingSlashes(output.destination);
    const Result<FileInfo> staged = fs.LinkStat(output.staging);
    const Identity* recorded = nullptr;
    if (resumed != nullptr) {
      if (auto it = resumed->find(output.name); it != resumed->end()) recorded = &it->second;
    }
    if (recorded != nullptr) {
      step.staged = *recorded;
      const Result<FileInfo> there = fs.LinkStat(step.destination);
      if (there && IdentityOf(*there) == step.staged) {
        step.move = false;
        step.clear_staging = staged.has_value();
      } else if (!staged || IdentityOf(*staged) != step.staged) {
        return FailedPrecondition(fmt::format(
            "output '{}': what was staged at {} is at neither that path nor {} any more (changed "
            "since its publication began)",
            output.name, output.staging, step.destination));
      }
    } else {
      DROVER_RETURN_IF_ERROR(CheckStaged(output, staged));
      step.staged = IdentityOf(*staged);
    }
    steps.push_back(std::move(step));
  }
  return OkStatus();
}

// The last part of PublishOutputs: moves what `steps` say onto their destinations.
Status MoveOutputs(const std::vector<PathStep>& steps, FileSystem& fs,
                   std::map<std::string, std::string>& published) {
  for (const PathStep& step : steps) {
    if (step.move) {
      DROVER_RETURN_IF_ERROR(Move(fs, *step.output, step.destination));
    } else if (step.clear_staging) {
      static_cast<void>(fs.RemoveAll(step.output->staging));  // what cannot be removed stays
    }
    published[step.output->name] = step.destination;
  }
  for (const PathStep& step : steps) {
    // Fails, harmlessly, when not empty.
    static_cast<void>(fs.RemoveEmptyDirectory(model::DirectoryOf(step.output->staging)));
  }
  return OkStatus();
}

// Runs `work` as `how` says: with the job's account's permissions, or as the caller is.
Status AsAccount(const Publication& how, const std::function<void()>& work) {
  if (!how.as_account) {
    work();
    return OkStatus();
  }
  return how.as_account(work);
}

// Replaces the publication record at `path` (a hidden file beside it first, then a rename).
Status KeepRecord(FileSystem& fs, const std::string& path, const PublicationRecord& record) {
  const std::string temporary =
      model::DirectoryOf(path) + "/.tmp." + std::filesystem::path(path).filename().string();
  DROVER_RETURN_IF_ERROR(fs.CreateDirectories(model::DirectoryOf(path)));
  DROVER_RETURN_IF_ERROR(fs.RemoveAll(temporary));
  DROVER_RETURN_IF_ERROR(fs.Append(temporary, FormatPublicationRecord(record)));
  return fs.Rename(temporary, path);
}

}  // namespace

Result<std::map<std::string, std::string>> PublishOutputs(
    const std::vector<model::StagedOutput>& outputs,
    const std::map<std::string, std::string>& reported_values, FileSystem& fs,
    const Publication& how) {
  std::optional<PublicationRecord> resumed;
  if (!how.record_path.empty()) {
    Result<std::string> text = fs.Read(how.record_path);
    if (text) {
      DROVER_ASSIGN_OR_RETURN(resumed, ParsePublicationRecord(*text));
    } else if (text.error().code != ErrorCode::kNotFound) {
      return Internal(fmt::format("publication record: {}", text.error().message));
    }
  }
  const bool touches_files =
      std::any_of(outputs.begin(), outputs.end(), [&](const model::StagedOutput& output) {
        return !output.destination.empty() || !reported_values.contains(output.name);
      });
  std::map<std::string, std::string> published;
  std::vector<PathStep> steps;
  Status checked = OkStatus();
  const auto check = [&] {
    checked =
        CheckOutputs(outputs, reported_values, fs, resumed ? &*resumed : nullptr, published, steps);
  };
  if (touches_files) {
    DROVER_RETURN_IF_ERROR(AsAccount(how, check));
  } else {
    check();
  }
  DROVER_RETURN_IF_ERROR(checked);
  if (steps.empty()) return published;
  if (!how.record_path.empty() && !resumed) {
    PublicationRecord record;
    for (const PathStep& step : steps) record[step.output->name] = step.staged;
    if (Status kept = KeepRecord(fs, how.record_path, record); !kept) {
      return Internal(fmt::format("cannot keep the publication record: {}", kept.error().message));
    }
  }
  Status moved = OkStatus();
  DROVER_RETURN_IF_ERROR(AsAccount(how, [&] { moved = MoveOutputs(steps, fs, published); }));
  DROVER_RETURN_IF_ERROR(moved);
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
