#include "drover/server/secret.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <sys/random.h>
#include <unistd.h>

#include <array>
#include <cerrno>
#include <cstring>
#include <fstream>

#include "drover/os/files.h"

namespace drover::server {
namespace {

constexpr std::size_t kCredentialBytes = 32;

std::string Hex(const unsigned char* bytes, std::size_t size) {
  static constexpr char kDigits[] = "0123456789abcdef";
  std::string out;
  out.reserve(size * 2);
  for (std::size_t i = 0; i < size; ++i) {
    out += kDigits[bytes[i] >> 4];
    out += kDigits[bytes[i] & 0xf];
  }
  return out;
}

}  // namespace

Result<std::string> NewCredential() {
  std::array<unsigned char, kCredentialBytes> bytes{};
  std::size_t filled = 0;
  while (filled < bytes.size()) {
    const ssize_t got = getrandom(bytes.data() + filled, bytes.size() - filled, 0);
    if (got < 0) {
      if (errno == EINTR) continue;
      return Unavailable(fmt::format("getrandom: {}", std::strerror(errno)));
    }
    filled += static_cast<std::size_t>(got);
  }
  return Hex(bytes.data(), bytes.size());
}

std::string HashSecret(std::string_view secret) {
  std::array<unsigned char, EVP_MAX_MD_SIZE> digest{};
  unsigned int size = 0;
  // EVP_Digest fails only on allocation failure; an empty digest then matches no stored one.
  if (EVP_Digest(secret.data(), secret.size(), digest.data(), &size, EVP_sha256(), nullptr) != 1) {
    return "";
  }
  return Hex(digest.data(), size);
}

std::string HmacSecret(std::string_view key, std::string_view data) {
  std::array<unsigned char, EVP_MAX_MD_SIZE> digest{};
  unsigned int size = 0;
  if (HMAC(EVP_sha256(), key.data(), static_cast<int>(key.size()),
           reinterpret_cast<const unsigned char*>(data.data()), data.size(), digest.data(),
           &size) == nullptr) {
    return "";
  }
  return Hex(digest.data(), size);
}

bool SecretsEqual(std::string_view a, std::string_view b) {
  return a.size() == b.size() && CRYPTO_memcmp(a.data(), b.data(), a.size()) == 0;
}

Result<std::string> LoadOrCreateSecretFile(const std::string& path) {
  DROVER_ASSIGN_OR_RETURN(std::string fresh, NewCredential());
  const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
  if (fd >= 0) {
    Status written = os::WriteAll(fd, fresh + "\n", path);
    if (written && ::fsync(fd) != 0) {
      written = Unavailable(fmt::format("cannot fsync {}: {}", path, std::strerror(errno)));
    }
    ::close(fd);
    if (written) return fresh;
    ::unlink(path.c_str());
    return tl::unexpected(written.error());
  }
  if (errno != EEXIST) {
    return Unavailable(fmt::format("{}: cannot create: {}", path, std::strerror(errno)));
  }
  std::ifstream in(path);
  if (!in) return Unavailable(fmt::format("{}: cannot read: {}", path, std::strerror(errno)));
  std::string kept;
  std::getline(in, kept);
  if (kept.empty()) return Internal(fmt::format("{}: its first line is empty", path));
  return kept;
}

}  // namespace drover::server
