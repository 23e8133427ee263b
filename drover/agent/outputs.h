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

// The value of value output `name` staged at `path`: the file's first line (at most
// model::kMaxOutputValueBytes), trailing whitespace removed. kFailedPrecondition: "output 'NAME'
// was not written: PATH does not exist", or the file being unreadable (a FIFO or other file
// that is not regular: FileSystem::Read) or its first line too long.
Result<std::string> ReadOutputValue(const std::string& name, const std::string& path,
                                    FileSystem& fs = RealFileSystem());

// Publishes `outputs`; returns name -> published path (path outputs) or value (value outputs).
//
// First every output is checked, so that a missing one publishes nothing: a path output's
// staging path must exist; a value output's value is the one in `reported_values` (what the
// workers' nodes read and reported with their exits: PublishOutputs::reported_values), else its
// staging file is read (ReadOutputValue: an external executor's job, which writes it where the
// server reads it). Then each path output is moved onto its destination: a rename(2) when the
// destination does not exist (its parent directories are created first); otherwise
// renameat2(RENAME_EXCHANGE) swaps the two atomically and the previous output, now at the
// staging path, is removed. A reader of the destination thus sees the old complete output or the
// new one. An emptied per-attempt staging directory (the staging path's parent) is removed.
// kInternal when a move fails (for example a file system without RENAME_EXCHANGE); the outputs
// moved before it stay published.
Result<std::map<std::string, std::string>> PublishOutputs(
    const std::vector<model::StagedOutput>& outputs,
    const std::map<std::string, std::string>& reported_values, FileSystem& fs = RealFileSystem());

// Removes what an attempt that will not publish left at its staging locations, then each
// staging path's parent directory when that is empty (the per-attempt staging directory).
// Best effort: what cannot be removed stays.
void DiscardStaging(const std::vector<model::StagedOutput>& outputs,
                    FileSystem& fs = RealFileSystem());

}  // namespace drover::agent
