#pragma once

// The `drover` command line, built into two executables (docs/architecture.md, "Binaries"):
// `drover`, the client's verbs linked without the server's libraries so that it starts fast, and
// `drover-full`, which adds the verbs that run Drover itself (server, agent, run, gateway,
// render, simulate). `drover` hands those on to `drover-full` beside it.

#include <functional>
#include <string_view>

#include "drover/api/http_client.h"

namespace CLI {
class App;
}

namespace drover::cli {

struct ClientFlags;

// Adds the verbs of kFullVerbs to `app`, each with its help line: drover-full's own
// (daemons::AddFullCommands) or the lean binary's forwarders (ForwardToFull). `client` holds the
// global flags as parsed; the chosen verb sets `run`; `argv` is the process's whole command
// line. All of them outlive the parse and the run.
using AddFullVerbs = void (*)(CLI::App& app, const ClientFlags& client, std::function<int()>& run,
                              char** argv);

// Runs the command line: the client's verbs, `supervise` (a worker's supervisor, exec'd by
// agents) and the verbs `add_full_verbs` adds. Returns the exit status: 0 success, 1 failure, 2
// invalid input. `tls` makes the client's TLS sessions (api::ConnectTls); the lean binary has
// none, and hands a command line whose --server (or DROVER_SERVER) names an https:// URL to
// drover-full (RunFull), so that it never loads OpenSSL.
int Main(int argc, char** argv, AddFullVerbs add_full_verbs, api::TlsConnector tls);

// The options of the whole command line (--server, --ca, --token, -o), read into `client`, with
// DROVER_SERVER and DROVER_CA as their defaults.
void AddGlobalOptions(CLI::App& app, ClientFlags& client);
// The verb `argv` names: its first argument that is neither an option nor the value of one of
// `app`'s options that take one; "" when there is none, or when a help flag comes before it (a
// request for the whole command line's help). Main builds the parser of that verb only.
std::string_view VerbOf(const CLI::App& app, int argc, char** argv);

// A verb of drover-full and its help line, which both binaries show.
struct FullVerb {
  std::string_view name;
  std::string_view help;
};
inline constexpr FullVerb kFullVerbs[] = {
    {"server", "run the control plane with an embedded agent"},
    {"agent", "serve one more node to a server over HTTP"},
    {"run", "run a spec file to the end on a private control plane, with progress"},
    {"gateway", "serve the OpenAI-compatible inference gateway (docs/inference.md)"},
    {"render", "print the manifests an external executor would create for a spec file"},
    {"simulate", "run the simulator on a trace: FGD placement experiment, replays, what-if"},
};
// The help line of the kFullVerbs entry `name` (a name not there is a programming error: empty).
std::string_view FullVerbHelp(std::string_view name);

// The lean binary's AddFullVerbs: each verb of kFullVerbs takes the rest of the command line
// unparsed (its --help included) and, when chosen, replaces this process with `drover-full`
// from the same folder, given the same argv; when there is none there, it fails saying so.
void ForwardToFull(CLI::App& app, const ClientFlags& client, std::function<int()>& run,
                   char** argv);
// Replaces this process with `drover-full` from the same folder, given `argv`; when there is
// none there (or it cannot be run), says so after `why` it was needed (a clause: "'server' is a
// verb of drover-full") and returns 1.
int RunFull(char** argv, std::string_view why);

}  // namespace drover::cli
