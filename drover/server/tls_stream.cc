#include "drover/server/tls_stream.h"

#include <fmt/format.h>
#include <openssl/err.h>
#include <openssl/ssl.h>
#include <openssl/x509.h>
#include <pthread.h>
#include <signal.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <fstream>
#include <tuple>
#include <utility>

namespace drover::server {
namespace {

// OpenSSL's reason for the last failure on this thread ("no start line"), and clears the queue.
std::string TakeTlsError() {
  const unsigned long code = ERR_peek_last_error();
  const char* reason = code != 0 ? ERR_reason_error_string(code) : nullptr;
  ERR_clear_error();
  return reason != nullptr ? reason : "unknown OpenSSL error";
}

}  // namespace

Result<std::unique_ptr<TlsContext>> TlsContext::Load(const TlsFiles& files) {
  for (auto [file, flag, other] : {std::tuple{files.cert_file, "--tls-cert", "--tls-key"},
                                   std::tuple{files.key_file, "--tls-key", "--tls-cert"}}) {
    if (file.empty()) {
      return InvalidArgument(fmt::format("{}: required with {}", flag, other));
    }
    if (!std::ifstream(file)) {
      return InvalidArgument(
          fmt::format("{} {}: cannot read it ({})", flag, file, std::strerror(errno)));
    }
  }
  ERR_clear_error();
  SSL_CTX* ctx = SSL_CTX_new(TLS_server_method());
  if (ctx == nullptr) return Internal("cannot create a TLS context: " + TakeTlsError());
  std::unique_ptr<TlsContext> context(new TlsContext(ctx));
  SSL_CTX_set_min_proto_version(ctx, TLS1_2_VERSION);
  SSL_CTX_set_options(ctx, SSL_OP_NO_RENEGOTIATION);
  // Partial and moving writes: SSL_write then behaves as send(2) on the front's output buffer.
  // Released buffers: an idle or parked connection holds no TLS record buffers.
  SSL_CTX_set_mode(ctx, SSL_MODE_ENABLE_PARTIAL_WRITE | SSL_MODE_ACCEPT_MOVING_WRITE_BUFFER |
                            SSL_MODE_RELEASE_BUFFERS);
  // An encrypted key fails to load instead of prompting on the terminal.
  SSL_CTX_set_default_passwd_cb(ctx, [](char*, int, int, void*) { return 0; });
  if (SSL_CTX_use_certificate_chain_file(ctx, files.cert_file.c_str()) != 1) {
    return InvalidArgument(
        fmt::format("--tls-cert {}: not a PEM certificate ({})", files.cert_file, TakeTlsError()));
  }
  // Loading the key checks it against the certificate loaded before it.
  if (SSL_CTX_use_PrivateKey_file(ctx, files.key_file.c_str(), SSL_FILETYPE_PEM) != 1) {
    if (ERR_GET_REASON(ERR_peek_last_error()) == X509_R_KEY_VALUES_MISMATCH) {
      ERR_clear_error();
      return InvalidArgument(fmt::format("--tls-key {}: does not match the certificate in {}",
                                         files.key_file, files.cert_file));
    }
    return InvalidArgument(fmt::format("--tls-key {}: not an unencrypted PEM private key ({})",
                                       files.key_file, TakeTlsError()));
  }
  return context;
}

TlsContext::~TlsContext() { SSL_CTX_free(ctx_); }

Result<Stream> Stream::NewTls(int fd, const TlsContext& context) {
  ERR_clear_error();
  SSL* tls = SSL_new(context.get());
  if (tls == nullptr || SSL_set_fd(tls, fd) != 1) {
    SSL_free(tls);
    return Internal("cannot create a TLS session: " + TakeTlsError());
  }
  SSL_set_accept_state(tls);
  Stream stream(fd);
  stream.tls_ = tls;
  return stream;
}

Stream::~Stream() {
  SSL_free(tls_);
  if (fd_ >= 0) ::close(fd_);
}

Stream::Stream(Stream&& other) noexcept
    : fd_(std::exchange(other.fd_, -1)), tls_(std::exchange(other.tls_, nullptr)) {}

Stream& Stream::operator=(Stream&& other) noexcept {
  if (this != &other) {
    SSL_free(tls_);
    if (fd_ >= 0) ::close(fd_);
    fd_ = std::exchange(other.fd_, -1);
    tls_ = std::exchange(other.tls_, nullptr);
  }
  return *this;
}

HandshakeStep Stream::Accept() {
  if (tls_ == nullptr) return HandshakeStep::kDone;
  ERR_clear_error();
  const int result = SSL_accept(tls_);
  if (result == 1) return HandshakeStep::kDone;
  switch (SSL_get_error(tls_, result)) {
    case SSL_ERROR_WANT_READ:
      return HandshakeStep::kWantRead;
    case SSL_ERROR_WANT_WRITE:
      return HandshakeStep::kWantWrite;
    case SSL_ERROR_SSL:
      if (ERR_GET_REASON(ERR_peek_error()) == SSL_R_HTTP_REQUEST) {
        ERR_clear_error();
        return HandshakeStep::kPlainHttp;
      }
      break;
  }
  ERR_clear_error();
  return HandshakeStep::kFailed;
}

IoResult Stream::Read(char* buffer, std::size_t size) {
  if (tls_ == nullptr) {
    const ssize_t n = ::recv(fd_, buffer, size, 0);
    if (n > 0) return {static_cast<std::size_t>(n), false};
    const bool waits = n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR);
    return {0, !waits};
  }
  ERR_clear_error();
  std::size_t n = 0;
  if (SSL_read_ex(tls_, buffer, size, &n) == 1) return {n, false};
  const int error = SSL_get_error(tls_, 0);
  ERR_clear_error();
  // WANT_WRITE: the answer to a TLS 1.3 KeyUpdate did not fit in the socket's buffer; OpenSSL
  // sends it with the next read or write, as the peer's next bytes or our next answer come.
  return {0, error != SSL_ERROR_WANT_READ && error != SSL_ERROR_WANT_WRITE};
}

IoResult Stream::Write(const char* data, std::size_t size) {
  if (tls_ == nullptr) {
    const ssize_t n = ::send(fd_, data, size, MSG_NOSIGNAL);
    if (n >= 0) return {static_cast<std::size_t>(n), false};
    const bool waits = errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR;
    return {0, !waits};
  }
  ERR_clear_error();
  std::size_t n = 0;
  if (SSL_write_ex(tls_, data, size, &n) == 1) return {n, false};
  const int error = SSL_get_error(tls_, 0);
  ERR_clear_error();
  // WANT_READ (a handshake in the middle of the stream) cannot happen with renegotiation off;
  // were it to, waiting for a writable socket would spin, so the connection ends.
  return {0, error != SSL_ERROR_WANT_WRITE};
}

void Stream::Close() {
  if (tls_ != nullptr && SSL_is_init_finished(tls_)) {
    ERR_clear_error();
    SSL_shutdown(tls_);  // close_notify, if the socket takes it now
    ERR_clear_error();
  }
  if (fd_ >= 0) DrainAndClose(std::exchange(fd_, -1));
}

void DrainAndClose(int fd) {
  ::shutdown(fd, SHUT_WR);
  char buffer[4096];
  while (::recv(fd, buffer, sizeof(buffer), MSG_DONTWAIT) > 0) {
  }
  ::close(fd);
}

void BlockSigpipeInThisThread() {
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, SIGPIPE);
  pthread_sigmask(SIG_BLOCK, &set, nullptr);
}

}  // namespace drover::server
