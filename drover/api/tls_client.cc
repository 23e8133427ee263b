#include "drover/api/tls_client.h"

#include <arpa/inet.h>
#include <fmt/format.h>
#include <openssl/err.h>
#include <openssl/ssl.h>
#include <openssl/x509v3.h>
#include <poll.h>
#include <signal.h>
#include <unistd.h>

namespace drover::api {
namespace {

// OpenSSL writes to the socket with write(2), which raises SIGPIPE when the peer has left: while
// one lives, SIGPIPE is blocked in this thread, and one raised meanwhile is taken off again, so
// that the write fails with EPIPE instead of ending the process, and nothing outside changes.
class SigpipeBlocked {
 public:
  SigpipeBlocked() {
    sigemptyset(&sigpipe_);
    sigaddset(&sigpipe_, SIGPIPE);
    pthread_sigmask(SIG_BLOCK, &sigpipe_, &previous_);
    sigset_t pending;
    sigpending(&pending);
    was_pending_ = sigismember(&pending, SIGPIPE) == 1;
  }
  ~SigpipeBlocked() {
    sigset_t pending;
    sigpending(&pending);
    if (!was_pending_ && sigismember(&pending, SIGPIPE) == 1) {
      const timespec now{};
      sigtimedwait(&sigpipe_, nullptr, &now);
    }
    pthread_sigmask(SIG_SETMASK, &previous_, nullptr);
  }
  SigpipeBlocked(const SigpipeBlocked&) = delete;
  SigpipeBlocked& operator=(const SigpipeBlocked&) = delete;

 private:
  sigset_t sigpipe_;
  sigset_t previous_;
  bool was_pending_ = false;
};

// The first queued OpenSSL error, or `fallback`; the queue is cleared.
std::string OpenSslError(const char* fallback) {
  const unsigned long code = ERR_get_error();
  ERR_clear_error();
  if (code == 0) return fallback;
  char text[256];
  ERR_error_string_n(code, text, sizeof(text));
  return text;
}

class TlsStream final : public ByteStream {
 public:
  TlsStream(int fd, SSL_CTX* context, SSL* session)
      : fd_(fd), context_(context), session_(session) {}
  ~TlsStream() override {
    if (session_ != nullptr) {
      SigpipeBlocked blocked;
      SSL_shutdown(session_);  // close_notify, without waiting for the server's
      SSL_free(session_);
    }
    SSL_CTX_free(context_);
    ::close(fd_);
  }
  TlsStream(const TlsStream&) = delete;
  TlsStream& operator=(const TlsStream&) = delete;

  // Runs the handshake to its end within `limit`: kTls with the user's sentence when it fails.
  HttpResult<void> Handshake(const ServerAddress& address, const std::string& trust,
                             const WaitLimit& limit) {
    for (;;) {
      ERR_clear_error();
      const int rc = [&] {
        SigpipeBlocked blocked;
        return SSL_connect(session_);
      }();
      if (rc == 1) return {};
      const int error = SSL_get_error(session_, rc);
      if (error == SSL_ERROR_WANT_READ || error == SSL_ERROR_WANT_WRITE) {
        HttpResult<void> ready = WaitForSocket(fd_, error == SSL_ERROR_WANT_WRITE, limit);
        if (ready) continue;
        return Refused(
            fmt::format("TLS: no TLS handshake with {} ({})", address.url, ready.error().message));
      }
      const long verify = SSL_get_verify_result(session_);
      if (verify == X509_V_ERR_HOSTNAME_MISMATCH || verify == X509_V_ERR_IP_ADDRESS_MISMATCH) {
        return Refused(
            fmt::format("TLS: the certificate of {} does not name its host", address.url));
      }
      if (verify != X509_V_OK) {
        return Refused(fmt::format(
            "TLS: certificate verify failed for {} ({}, checked against {}); pass --ca or "
            "DROVER_CA",
            address.url, X509_verify_cert_error_string(verify), trust));
      }
      return Refused(fmt::format(
          "TLS: no TLS handshake with {} ({}); is it a server started with --tls-cert? (http:// "
          "if not)",
          address.url, OpenSslError("the connection ended")));
    }
  }

  HttpResult<void> WriteAll(std::string_view data, const WaitLimit& limit) override {
    while (!data.empty()) {
      ERR_clear_error();
      const int rc = [&] {
        SigpipeBlocked blocked;
        return SSL_write(session_, data.data(),
                         static_cast<int>(std::min<std::size_t>(data.size(), 1 << 30)));
      }();
      if (rc > 0) {
        data.remove_prefix(static_cast<std::size_t>(rc));
        continue;
      }
      DROVER_RETURN_IF_ERROR(WaitOrFail(SSL_get_error(session_, rc), "sending", limit));
    }
    return {};
  }

  HttpResult<std::size_t> ReadSome(char* buffer, std::size_t size,
                                   const WaitLimit& limit) override {
    for (;;) {
      ERR_clear_error();
      const int rc = [&] {
        SigpipeBlocked blocked;
        return SSL_read(session_, buffer, static_cast<int>(std::min<std::size_t>(size, 1 << 30)));
      }();
      if (rc > 0) return static_cast<std::size_t>(rc);
      const int error = SSL_get_error(session_, rc);
      if (error == SSL_ERROR_ZERO_RETURN) return 0;
      DROVER_RETURN_IF_ERROR(WaitOrFail(error, "reading", limit));
    }
  }

  bool Stale() override {
    if (SSL_pending(session_) > 0) return true;
    pollfd readable{fd_, POLLIN, 0};
    if (::poll(&readable, 1, 0) == 0) return false;
    // Readable between exchanges: a TLS 1.3 session ticket (harmless, taken here), or the end
    // of the stream or bytes unasked for (stale). The socket does not block.
    char byte;
    ERR_clear_error();
    SigpipeBlocked blocked;
    const int rc = SSL_read(session_, &byte, 1);
    return rc > 0 || SSL_get_error(session_, rc) != SSL_ERROR_WANT_READ;
  }

 private:
  static tl::unexpected<HttpError> Refused(std::string message) {
    return tl::unexpected(HttpError{HttpFailure::kTls, std::move(message)});
  }

  // After a read or write that moved nothing: waits for the socket (within `limit`) when
  // OpenSSL asks to, else the kTransfer error.
  HttpResult<void> WaitOrFail(int error, const char* doing, const WaitLimit& limit) {
    if (error == SSL_ERROR_WANT_READ || error == SSL_ERROR_WANT_WRITE) {
      return WaitForSocket(fd_, error == SSL_ERROR_WANT_WRITE, limit);
    }
    return tl::unexpected(
        HttpError{HttpFailure::kTransfer,
                  fmt::format("TLS {} failed: {}", doing, OpenSslError("the connection ended"))});
  }

  int fd_;
  SSL_CTX* context_;
  SSL* session_;
};

bool IsIpAddress(const std::string& host) {
  unsigned char address[16];
  return inet_pton(AF_INET, host.c_str(), address) == 1 ||
         inet_pton(AF_INET6, host.c_str(), address) == 1;
}

}  // namespace

HttpResult<std::unique_ptr<ByteStream>> ConnectTls(int fd, const ServerAddress& address,
                                                   const ConnectOptions& options) {
  const std::string trust = options.ca_file.empty()
                                ? std::string("the system's CA store")
                                : fmt::format("the CA bundle {}", options.ca_file);
  const auto refused = [&](std::string message) {
    return tl::unexpected(HttpError{HttpFailure::kTls, std::move(message)});
  };
  SSL_CTX* context = SSL_CTX_new(TLS_client_method());
  if (context == nullptr) {
    ::close(fd);
    return refused(fmt::format("TLS: cannot set up a session ({})", OpenSslError("no memory")));
  }
  SSL_CTX_set_min_proto_version(context, TLS1_2_VERSION);
  SSL_CTX_set_options(context, SSL_OP_IGNORE_UNEXPECTED_EOF);
  SSL_CTX_set_mode(context, SSL_MODE_ENABLE_PARTIAL_WRITE | SSL_MODE_AUTO_RETRY);
  SSL_CTX_set_verify(context, SSL_VERIFY_PEER, nullptr);
  const int loaded = options.ca_file.empty()
                         ? SSL_CTX_set_default_verify_paths(context)
                         : SSL_CTX_load_verify_locations(context, options.ca_file.c_str(), nullptr);
  SSL* session = loaded == 1 ? SSL_new(context) : nullptr;
  // From here the stream owns the socket, the context and the session.
  auto stream = std::make_unique<TlsStream>(fd, context, session);
  if (loaded != 1) {
    ERR_clear_error();
    return refused(
        fmt::format("TLS: cannot load {} (--ca or DROVER_CA) to check {}", trust, address.url));
  }
  if (session == nullptr) {
    return refused(fmt::format("TLS: cannot set up a session ({})", OpenSslError("no memory")));
  }
  SSL_set_fd(session, fd);
  if (IsIpAddress(address.host)) {
    X509_VERIFY_PARAM_set1_ip_asc(SSL_get0_param(session), address.host.c_str());
  } else {
    SSL_set_tlsext_host_name(session, address.host.c_str());
    SSL_set1_host(session, address.host.c_str());
  }
  DROVER_RETURN_IF_ERROR(stream->Handshake(address, trust, WaitLimit(options.io_timeout_ms)));
  return std::unique_ptr<ByteStream>(std::move(stream));
}

}  // namespace drover::api
