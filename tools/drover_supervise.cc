// drover-supervise: the per-worker supervisor as a lean executable of its own.
//
// `drover supervise DIR` does the same, but the drover binaries load HTTP, TLS and YAML libraries
// it does not need here. Agents run it once per runtime, as `drover-supervise spawn-supervisors`,
// the spawner that forks each worker's supervisor (agent/supervisor_spawner.h), when it sits
// beside the drover binary (server::SupervisorExecutable): fewer mappings make each fork cheaper.

#include <optional>

#include "drover/agent/supervisor.h"
#include "drover/agent/supervisor_spawner.h"

int main(int argc, char** argv) {
  // Invoked as `drover-supervise spawn-supervisors` (by LocalRuntime's spawner) or
  // `drover-supervise supervise DIR`, the same arguments as `drover spawn-supervisors` and
  // `drover supervise DIR`; anything else gets the supervisor's usage message.
  if (std::optional<int> status = drover::agent::RunSupervisorVerb(argc, argv)) return *status;
  return drover::agent::SupervisorMain(argc - 1, argv + 1);
}
