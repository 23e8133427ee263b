#pragma once

// Publishing an attempt's outputs (docs/workflows.md, "Inputs and outputs"): the driver's side
// of the controller's PublishOutputs and DiscardOutputs effects. The staging locations come from
// model::StagedOutputs. Every file operation goes through the FileSystem given (by default the
// machine's), so that tests can run them in memory and make one fail.

#include <map>
#include <string>
#include <vector>

#include "drover/common/filesystem.h"
#include "drover/common/result.h"
#include "drover/model/outputs.h"

namespace drover::agent {

// The longest value a value output may have, in bytes (its first line, without the newline).
inline constexpr std::size_t kMaxOutputValueBytes = 4096;

// Publishes `outputs`; returns name -> published path (path outputs) or value (value outputs).
//
// First every output is checked, so that a missing one publishes nothing: a path output's
// staging path must exist; a value output's staging file is read, its first line (at most
// kMaxOutputValueBytes, trailing whitespace removed) being the value. Errors, kFailedPrecondition:
// "output 'NAME' was not written: STAGING does not exist", or the value's file being unreadable
// or its first line too long. Then each path output is moved onto its destination: a rename(2)
// when the destination does not exist (its parent directories are created first); otherwise
// renameat2(RENAME_EXCHANGE) swaps the two atomically and the previous output, now at the
// staging path, is removed. A reader of the destination thus sees the old complete output or the
// new one. An emptied per-attempt staging directory (the staging path's parent) is removed.
// kInternal when a move fails (for example a file system without RENAME_EXCHANGE); the outputs
// moved before it stay published.
Result<std::map<std::string, std::string>> PublishOutputs(
    const std::vector<model::StagedOutput>& outputs, FileSystem& fs = RealFileSystem());

// Removes what an attempt that will not publish left at its staging locations, then each
// staging path's parent directory when that is empty (the per-attempt staging directory).
// Best effort: what cannot be removed stays.
void DiscardStaging(const std::vector<model::StagedOutput>& outputs,
                    FileSystem& fs = RealFileSystem());

}  // namespace drover::agent
