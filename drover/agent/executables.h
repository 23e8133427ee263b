#pragma once

// Drover's executables find each other beside themselves: `drover` (the client's verbs, linked
// without the server's libraries), `drover-full` (every verb: the server, the agent, `run`, the
// gateway, the simulator) and `drover-supervise` (a worker's supervisor) are built into one
// folder and installed into one (docs/architecture.md, "Binaries").

#include <string>
#include <string_view>

namespace drover::agent {

// The path of the running executable (/proc/self/exe); "drover" when it cannot be read.
std::string SelfExecutable();
// The path of the executable file `name` in the running executable's folder; empty when there is
// none there that this process may execute.
std::string BesideSelf(std::string_view name);
// BesideSelf(name), or the running executable itself when that is empty: for a helper whose work
// the running binary can do as well, only slower to start (drover-full does every verb).
std::string BesideSelfOrSelf(std::string_view name);

}  // namespace drover::agent
