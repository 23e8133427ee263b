#pragma once

// Long-running subcommands: `drover server`, `drover agent` and `drover run` (the embedded
// default: a private control plane for one spec file).

#include <string>

#include "drover/server/local_nodes.h"

namespace drover::cli {

struct ServerFlags {
  std::string data_dir = ".drover";
  std::string listen = "127.0.0.1:8420";
  server::LocalNodeFlags nodes;
  std::string ready_file;  // written with the base URL once listening (for scripts and tests)
};
int ServerCommand(const ServerFlags& flags);

struct AgentFlags {
  std::string server;
  std::string data_dir = ".drover-agent";
  server::LocalNodeFlags nodes;
};
int AgentCommand(const AgentFlags& flags);

struct RunFlags {
  std::string file;
  std::string data_dir;  // default: a new directory under $TMPDIR
  server::LocalNodeFlags nodes;
};
int RunCommand(const RunFlags& flags);

}  // namespace drover::cli
