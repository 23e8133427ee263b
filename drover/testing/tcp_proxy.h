#pragma once

// TcpProxy: a TCP proxy on loopback that a test puts between a client (a remote agent) and a
// server, and switches while it runs to inject network faults: delay, lost replies, a
// partition (blackhole), reset connections. Loopback only; it stops with its destructor.

#include <cstdint>
#include <memory>
#include <string>
#include <thread>

#include "drover/common/result.h"
#include "drover/common/thread_annotations.h"

namespace drover::testing {

// Listens on 127.0.0.1 (an ephemeral port) and forwards each accepted connection to
// 127.0.0.1:`target_port`, byte for byte, from one thread (poll over non-blocking sockets).
// What happens to the bytes is the current mode, read for every chunk, so a switch applies to
// open connections at once:
//   kPass       forwards both ways.
//   kDelay      forwards both ways, each chunk delay_ms after it was read.
//   kDropReplies forwards what clients send and swallows what the target answers; a connection
//               that lost a reply stays that way (its HTTP stream is broken) until closed.
//   kBlackhole  a partition: forwards nothing either way, on open connections and on new ones
//               (accepted, never connected to the target); such a connection stays silent
//               until a side closes it, also after the mode changes.
//   kReset      resets every open connection (RST) and every new one as it is accepted.
// DropNextReplies targets one kind of request without a mode: the answers to the next `count`
// requests whose bytes, as one read from the client, contain `marker` (e.g. "POST
// /v1/agents/a/events") are swallowed as in kDropReplies, on their connections only.
// DropReplyContaining targets one answer by what it says: the first chunk from the target that
// contains `content` (e.g. a launch's script) is swallowed, and its connection's later ones too,
// whichever request it answers and whenever that was sent.
// LoseReplyThenReset loses one answer and then its connection: on the first connection that
// sends `arm` (in one read), the answer to the next request there that contains `marker` is
// swallowed, and the connection is reset (RST both ways) as that answer arrives. Before a
// database, with `arm` a value one transaction writes and `marker` "COMMIT": the transaction
// commits and its client never learns it (libpq's in-doubt commit).
// Thread-safe.
class TcpProxy {
 public:
  enum class Mode { kPass, kDelay, kDropReplies, kBlackhole, kReset };

  // Listens and starts the forwarding thread. kInternal if a socket call fails.
  static Result<std::unique_ptr<TcpProxy>> Create(int target_port);
  // Stops the thread and closes every connection.
  ~TcpProxy();
  TcpProxy(const TcpProxy&) = delete;
  TcpProxy& operator=(const TcpProxy&) = delete;

  int port() const { return port_; }
  // "http://127.0.0.1:PORT".
  std::string url() const;

  // Switches the mode; `delay_ms` is used by kDelay.
  void SetMode(Mode mode, std::int64_t delay_ms = 0) EXCLUDES(mu_);
  void DropNextReplies(std::string marker, int count) EXCLUDES(mu_);
  void DropReplyContaining(std::string content) EXCLUDES(mu_);
  void LoseReplyThenReset(std::string arm, std::string marker) EXCLUDES(mu_);
  // Connections accepted so far, and replies (chunks from the target) swallowed so far.
  int accepted() const EXCLUDES(mu_);
  int swallowed_replies() const EXCLUDES(mu_);

 private:
  TcpProxy(int listen_fd, int wake_fd, int port, int target_port);

  int listen_fd_;
  int wake_fd_;  // an eventfd: written to wake the thread for a mode switch or the stop
  int port_;
  int target_port_;
  mutable Mutex mu_;
  Mode mode_ GUARDED_BY(mu_) = Mode::kPass;
  std::int64_t delay_ms_ GUARDED_BY(mu_) = 0;
  std::string drop_marker_ GUARDED_BY(mu_);
  int drops_left_ GUARDED_BY(mu_) = 0;
  std::string drop_content_ GUARDED_BY(mu_);  // empty: no DropReplyContaining waiting
  std::string lose_arm_ GUARDED_BY(mu_);      // empty: no LoseReplyThenReset waiting for its arm
  std::string lose_marker_ GUARDED_BY(mu_);
  int accepted_ GUARDED_BY(mu_) = 0;
  int swallowed_ GUARDED_BY(mu_) = 0;
  bool stopping_ GUARDED_BY(mu_) = false;
  std::thread thread_;

  // The forwarding thread's body (tcp_proxy.cc): owns every connection's sockets and buffers.
  void Run() EXCLUDES(mu_);
};

}  // namespace drover::testing
