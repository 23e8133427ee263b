#pragma once

// Replacing this process's image in place (execv): how a server that stepped down comes back as
// a standby without a service manager, keeping its pid.

#include <string>
#include <vector>

namespace drover::os {

// Replaces this process's image by the program at `path`, run with `argv` (argv[0] included), in
// place: the same pid and environment. Every descriptor but 0, 1 and 2 is closed across the exec
// (close_range with CLOSE_RANGE_CLOEXEC; before Linux 5.11, each one listed in /proc/self/fd),
// and the signal mask is emptied, as a new process's is. Other threads run on until the exec
// ends them; from this call on, one that reaches std::terminate waits for that end instead of
// aborting the process, the exec with it (the kernel refuses to create threads while an exec
// takes the process over, and std::thread then throws std::system_error in whichever thread
// was starting one). Returns only if the exec failed, with its errno; the caller should exit
// then, as a thread that fails from now on waits forever.
int ReplaceProcessImage(const std::string& path, const std::vector<std::string>& argv);

}  // namespace drover::os
