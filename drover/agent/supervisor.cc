#include "drover/agent/supervisor.h"

namespace drover::agent {

int SupervisorMain(int, char**) { return 2; }

}  // namespace drover::agent
