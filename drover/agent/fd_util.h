#pragma once

// Descriptor helpers for code that runs between fork and exec.

namespace drover::agent {

// Closes every file descriptor >= `first` except `keep` (pass -1 to keep none). Only makes
// async-signal-safe calls (close_range, or close in a loop where close_range is missing), so it
// may run in the child of a multi-threaded process.
void CloseFdsFrom(int first, int keep);

}  // namespace drover::agent
