#pragma once

// Secrets the server issues and checks (docs/security.md): random credentials from the kernel's
// CSPRNG, and the SHA-256 digest under which they are stored, so that the store, its backups
// and the logs never hold a credential in clear. Thread-safe (no state).

#include <string>
#include <string_view>

#include "drover/common/result.h"

namespace drover::server {

// 32 bytes from getrandom(2) as 64 lowercase hex digits. kUnavailable if the kernel cannot
// supply them (never on Linux after boot).
Result<std::string> NewCredential();

// SHA-256 of `secret` as 64 lowercase hex digits (OpenSSL's EVP).
std::string HashSecret(std::string_view secret);

// HMAC-SHA256 of `data` under `key` as 64 lowercase hex digits (OpenSSL's HMAC); "" only if
// OpenSSL fails to allocate.
std::string HmacSecret(std::string_view key, std::string_view data);

// The secret kept in `path` (its first line): read when the file exists, else a NewCredential
// created there (mode 0600, O_EXCL: two processes racing to create it never disagree). For the
// key that signs jobs' tokens and the join token. kUnavailable on I/O errors, kInternal for a
// file whose first line is empty.
Result<std::string> LoadOrCreateSecretFile(const std::string& path);

// Whether `a` and `b` are equal, in time that depends only on their lengths (CRYPTO_memcmp), for
// comparing a presented secret's digest with a stored one.
bool SecretsEqual(std::string_view a, std::string_view b);

}  // namespace drover::server
