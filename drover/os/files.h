#pragma once

// Whole-file writes that no reader sees half done: the one way Drover's drivers replace a file,
// be it a worker's status record, a secret, a node's credential, a ready file or a Slurm job's
// script in a folder the job's account may write.

#include <string>
#include <string_view>

#include "drover/common/result.h"

namespace drover::os {

// Whether a write survives a crash of the machine, or only of the processes.
enum class Durability {
  // fsync of the file before the rename and of the directory after (about 6.5 ms on this
  // project's VMs): the file outlives a power loss.
  kSynced,
  // The rename alone: every process sees the whole file or none, at once; a power loss may lose
  // it. For records of processes that do not survive a machine crash themselves.
  kVisible,
};

// Writes all of `text` to `fd`, retrying short writes and EINTR. kUnavailable naming `path` (the
// file's, for the message) and the errno text.
Status WriteAll(int fd, std::string_view text, std::string_view path);

// Replaces `path` with a file holding `text`, created with `mode` (less the umask). The text goes
// to a hidden file beside it, ".NAME.tmp.PID" (PID this process's: processes never share one),
// which is removed first when a crash left it and then created afresh (O_EXCL | O_NOFOLLOW: never
// through a link or a file someone else left there, as a job's account may in its own folder),
// written whole (with `durability`'s syncs) and renamed over `path`, which is replaced, never
// written through. kUnavailable naming the path and the errno text; the hidden file is gone then.
// One writer of a path at a time within a process (two at once would share the hidden file):
// every caller has one (a worker's files are written under its runtime's lock or by its
// supervisor, the secret store's under its own, the Slurm executor's by the thread of one attempt).
Status WriteFileAtomically(const std::string& path, std::string_view text,
                           Durability durability = Durability::kSynced, int mode = 0644);

// The hidden file beside `path` that WriteFileAtomically writes `path` through in this process:
// DIR/.NAME.tmp.PID.
std::string TemporaryFileOf(const std::string& path);

// Whether `file_name` (a name in a folder, no slash) is what WriteFileAtomically writes before its
// rename: a crash's leftover when no write is under way, which a store that lists its folder
// removes.
bool IsAtomicWriteLeftover(std::string_view file_name);

}  // namespace drover::os
