// drover-supervise: the per-worker supervisor as a lean executable of its own.
//
// `drover supervise DIR` does the same, but the full binary loads TLS, HTTP and YAML libraries
// it does not need here; starting this one is what a worker's launch waits for, so agents use it
// when it sits beside the drover binary (server::SupervisorExecutable).

#include "drover/agent/supervisor.h"

int main(int argc, char** argv) {
  // Invoked as `drover-supervise supervise DIR`, the same arguments as `drover supervise DIR`.
  return drover::agent::SupervisorMain(argc - 1, argv + 1);
}
