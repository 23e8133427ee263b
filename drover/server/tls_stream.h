#pragma once

// The byte stream of one HttpFront connection: the socket itself, or a TLS session over it
// (OpenSSL), both driven without blocking from the front's event thread.
//
// - TlsContext is loaded once, at bind, from a PEM certificate chain and key; TLS 1.2 at least,
//   renegotiation off, OpenSSL's default ciphers. No client certificates are asked for.
// - A Stream is owned by its connection and used from the event thread only (not thread-safe).
//   A read or write moves some bytes, says it would block, or says the connection is done; a
//   TLS stream must finish Accept() (its handshake) first. The caller keeps polling the socket for
//   reading (EPOLLIN) or writing (EPOLLOUT) as a step asks.
// - OpenSSL writes to the socket with write(2): a peer that hung up raises SIGPIPE in the writing
//   thread, so the event thread blocks SIGPIPE (BlockSigpipeInThisThread).

#include <cstddef>
#include <memory>
#include <string>

#include "drover/common/result.h"

struct ssl_st;
struct ssl_ctx_st;

namespace drover::server {

// The files of a TLS listener; both empty: plain HTTP.
struct TlsFiles {
  std::string cert_file;  // PEM: the server's certificate, then any intermediates
  std::string key_file;   // PEM: its private key, unencrypted
  bool enabled() const { return !cert_file.empty() || !key_file.empty(); }
};

// The server side of TLS: certificate, key and settings shared by every connection.
class TlsContext {
 public:
  // kInvalidArgument naming the file (and its flag, --tls-cert or --tls-key) when one is
  // missing, unreadable, not PEM, or when the key does not match the certificate.
  static Result<std::unique_ptr<TlsContext>> Load(const TlsFiles& files);
  ~TlsContext();
  TlsContext(const TlsContext&) = delete;
  TlsContext& operator=(const TlsContext&) = delete;

  ssl_ctx_st* get() const { return ctx_; }

 private:
  explicit TlsContext(ssl_ctx_st* ctx) : ctx_(ctx) {}
  ssl_ctx_st* ctx_;
};

// One step of a non-blocking read or write: `bytes` moved (0: it would block now), or `closed`
// (the peer hung up or the stream failed; the connection is done).
struct IoResult {
  std::size_t bytes = 0;
  bool closed = false;
};

// Where a TLS handshake stands after one step.
enum class HandshakeStep {
  kDone,
  kWantRead,   // waits for the socket to be readable
  kWantWrite,  // waits for the socket to be writable
  kPlainHttp,  // the peer spoke plain HTTP to this TLS listener
  kFailed,     // anything else: a bad or foreign client; close the connection
};

class Stream {
 public:
  // A plain stream over `fd` (owned: Close() closes it).
  explicit Stream(int fd = -1) : fd_(fd) {}
  // A TLS stream over `fd` (owned once this succeeds) with `context`, its handshake to do.
  // kInternal when OpenSSL cannot create the session (out of memory).
  static Result<Stream> NewTls(int fd, const TlsContext& context);
  ~Stream();
  Stream(Stream&& other) noexcept;
  Stream& operator=(Stream&& other) noexcept;

  int fd() const { return fd_; }

  // Advances the server side of the TLS handshake (kDone at once for a plain stream).
  HandshakeStep Accept();
  IoResult Read(char* buffer, std::size_t size);
  IoResult Write(const char* data, std::size_t size);
  // Sends TLS's close_notify when the handshake is done (without waiting), then shuts the
  // socket down for writing, reads and drops what the peer has already sent (so that closing
  // does not reset the connection under a response it has not read yet) and closes it.
  void Close();

 private:
  int fd_;
  ssl_st* tls_ = nullptr;  // owned
};

// Closes `fd` as Stream::Close does for a plain stream.
void DrainAndClose(int fd);

// Blocks SIGPIPE for the calling thread, so that a write to a socket whose peer left fails with
// EPIPE instead of ending the process.
void BlockSigpipeInThisThread();

}  // namespace drover::server
