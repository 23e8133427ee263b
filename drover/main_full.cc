// `drover-full`: every verb of `drover`, the server, the agent, the gateway and the simulator
// included (drover/cli/cli.h).

#include "drover/api/tls_client.h"
#include "drover/cli/cli.h"
#include "drover/daemons/commands.h"

int main(int argc, char** argv) {
  return drover::cli::Main(argc, argv, drover::daemons::AddFullCommands, drover::api::ConnectTls);
}
