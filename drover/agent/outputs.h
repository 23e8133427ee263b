#pragma once

// Publishing an attempt's outputs (docs/workflows.md, "Inputs and outputs"): the driver's side
// of the controller's PublishOutputs and DiscardOutputs effects. The staging locations come from
// model::StagedOutputs. Every file operation goes through the FileSystem given (by default the
// machine's), so that tests can run them in memory and make one fail.

#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "drover/common/filesystem.h"
#include "drover/common/result.h"
#include "drover/model/outputs.h"

namespace drover::agent {

// The value of value output `name` staged at `path`: the file's first line (at most
// model::kMaxOutputValueBytes), trailing whitespace removed. kFailedPrecondition: "output 'NAME'
// was not written: PATH does not exist", or the file being unreadable (a FIFO or other file
// that is not regular: FileSystem::Read) or its first line too long.
Result<std::string> ReadOutputValue(const std::string& name, const std::string& path,
                                    FileSystem& fs = RealFileSystem());

// What a publication keeps of an attempt's staged path outputs before the first one moves: the
// identity (FileInfo::device, inode) of each, by output name. With it, a publication that a crash
// (or a leader's step-down) cut short is finished when it is carried out again, not redone: an
// output whose destination holds the staged file is already published, and what is left at its
// staging path is the previous output that a swap put there, to remove, not to swap back.
using PublicationRecord = std::map<std::string, std::pair<std::uint64_t, std::uint64_t>>;
// One line per output, "NAME DEVICE INODE" (names are a spec's: no blanks).
std::string FormatPublicationRecord(const PublicationRecord& record);
// kInvalidArgument naming the line that is not "NAME DEVICE INODE".
Result<PublicationRecord> ParsePublicationRecord(std::string_view text);

// How PublishOutputs keeps its record and touches the job's files.
struct Publication {
  // The file where the publication record is kept, through the FileSystem as the caller is
  // (a folder of the driver's own, not the job's: a job could otherwise forge it); empty: none is
  // kept, and a publication carried out again after a crash fails on the outputs it had moved.
  // The caller removes it once the attempt's outcome is persisted (control::ForgetPublication).
  // Written through a hidden file and a rename, without fsync: it outlives the process, not
  // necessarily a power loss (the database's own commit is what a machine crash is judged by).
  std::string record_path;
  // Runs a step that touches the job's files (staging paths, destinations) with the job's
  // account's file permissions (the server: os::WithFileIdentityOf); null: as the caller is. An
  // error means the step did not run, and is the publication's. Called only when some output
  // touches a file: a path output, or a value that no node reported.
  std::function<Status(const std::function<void()>&)> as_account;
};

// Publishes `outputs`; returns name -> published path (path outputs) or value (value outputs).
//
// First every output is checked, so that a missing one publishes nothing: a path output's
// staging path must exist; a value output's value is the one in `reported_values` (what the
// workers' nodes read and reported with their exits: PublishOutputs::reported_values), else its
// staging file is read (ReadOutputValue: an external executor's job, which writes it where the
// server reads it). Then, with `how.record_path`, the staged files' identities are recorded
// (PublicationRecord; a record already there, of an earlier try of this same publication, is
// resumed instead: outputs it shows published count as such). Then each path output is moved
// onto its destination: a rename(2) when the destination does not exist (its parent directories
// are created first); otherwise renameat2(RENAME_EXCHANGE) swaps the two atomically and the
// previous output, now at the staging path, is removed. A reader of the destination thus sees
// the old complete output or the new one. An emptied per-attempt staging directory (the staging
// path's parent) is removed. kInternal when a move fails (for example a file system without
// RENAME_EXCHANGE) or the record cannot be written; the outputs moved before it stay published.
// kFailedPrecondition when a resumed output is neither at its destination nor at its staging
// path (changed since).
Result<std::map<std::string, std::string>> PublishOutputs(
    const std::vector<model::StagedOutput>& outputs,
    const std::map<std::string, std::string>& reported_values, FileSystem& fs = RealFileSystem(),
    const Publication& how = {});

// Removes what an attempt that will not publish left at its staging locations, then each
// staging path's parent directory when that is empty (the per-attempt staging directory).
// Best effort: what cannot be removed stays.
void DiscardStaging(const std::vector<model::StagedOutput>& outputs,
                    FileSystem& fs = RealFileSystem());

}  // namespace drover::agent
