#pragma once

// The bounds a workload spec must keep (docs/spec.md, "Limits"), so that one careless or
// hostile submission cannot make the server hold, store or hand to exec more than it can:
// the size of the text after YAML aliases are expanded, the size of what exec receives
// (command, script, env), and the character set of the names other users see (owner, team).
// Pure; thread-safe.

#include <cstdint>
#include <string>
#include <string_view>

namespace drover::spec {

inline constexpr std::int64_t kBytesPerKiB = 1024;
inline constexpr std::int64_t kBytesPerMiB = 1024 * kBytesPerKiB;

// The longest string Linux passes to exec as one argv or envp entry, without its NUL:
// MAX_ARG_STRLEN (32 pages = 128 KiB) less one. Longer ones fail with E2BIG.
inline constexpr std::int64_t kMaxArgBytes = 128 * kBytesPerKiB - 1;

// The most a command reads of one spec or policy file (or of stdin) before it refuses it: four
// times the expanded bound below, room for comments and indentation, so that `drover validate
// /dev/zero` or a log file named by mistake ends with an error instead of filling memory.
inline constexpr std::int64_t kMaxSpecFileBytes = 16 * kBytesPerMiB;

// The server's flags set each bound (docs/api.md, "Limits").
struct SpecLimits {
  // The most a YAML (or JSON) stream may expand to: the bytes of every scalar plus one per node,
  // each alias counted as a full copy of the node its anchor names. 4 MiB: four times the
  // largest request body the server takes by default, room for a file that reuses a block (an
  // env, a resources mapping) across many jobs, while a file of anchors reused hundreds of
  // times (a 1 MB file that expanded to a 300 MB job) is refused. 0: no bound.
  std::int64_t max_expanded_bytes = 4 * kBytesPerMiB;
  // One string exec receives: each command[i], the script (sh -c's argument) and each env entry
  // NAME=value. At most kMaxArgBytes, which exec itself refuses beyond ("Argument list too
  // long").
  std::int64_t max_arg_bytes = kMaxArgBytes;
  // A job's command, script and env together, each string counted with its NUL and its 8-byte
  // pointer, as the kernel counts them against ARG_MAX (a quarter of the stack limit: 2 MiB
  // under the usual 8 MiB). 1 MiB leaves the other half to the environment the worker inherits
  // and to Drover's own variables (docs/spec.md, "Environment").
  std::int64_t max_launch_bytes = kBytesPerMiB;
};

// Owner and team names (the `owner` and `team` fields, and a token's user and team): 1 to 64
// characters of letters, digits, '.', '_', '-' and '@'. No
// control character or '/' can reach another user's terminal or a path.
bool IsValidPrincipal(std::string_view name);
// "invalid <what> 'X': use 1 to 64 letters, digits, ...". Non-printable bytes of X are written
// as \xNN.
std::string InvalidPrincipalMessage(std::string_view what, std::string_view name);

// Secret names (a team's secrets, `secret_env`'s values; docs/security.md, "Secrets"): 1 to 64
// letters, digits, '.', '_' and '-', not starting with '.'. A name is a file name on the server
// (DATA/secrets/TEAM/NAME): no '/', no "." or "..", no hidden file.
bool IsValidSecretName(std::string_view name);
// "invalid secret name 'X': use 1 to 64 letters, ...", X escaped as in InvalidPrincipalMessage.
std::string InvalidSecretNameMessage(std::string_view name);

// "unknown time zone \"X\" (an IANA name such as ...)", X escaped as in InvalidPrincipalMessage:
// a cron job's time_zone that a tz database does not know (the CLI's parser and the server alike).
std::string UnknownTimeZoneMessage(std::string_view name);

// `text` with every byte outside printable ASCII written as \xNN: for echoing refused input in
// messages without passing control characters on.
std::string EscapeForMessage(std::string_view text);

}  // namespace drover::spec
