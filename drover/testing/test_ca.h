#pragma once

// A throwaway certificate authority for TLS tests, made with the `openssl` command (Debian's
// openssl package; `make deps` installs it).

#include <string>

namespace drover::testing {

// Makes, in directory `dir`, a CA named `name` (NAME.pem, NAME.key: an EC P-256 key, valid two
// days) and, when `with_server` is set, a server certificate it signs for IP 127.0.0.1 and DNS
// localhost (server.pem, server.key). False when the openssl command is missing or fails.
bool MakeTestCa(const std::string& dir, const std::string& name, bool with_server);

}  // namespace drover::testing
