#pragma once

namespace drover::agent {

// Entry point of `drover supervise WORKER_DIR`: the per-worker supervisor process (see
// docs/architecture.md). Returns the process exit status.
int SupervisorMain(int argc, char** argv);

}  // namespace drover::agent
