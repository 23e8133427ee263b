#include "drover/testing/tcp_proxy.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <fmt/format.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <deque>
#include <list>
#include <utility>
#include <vector>

#include "drover/agent/steady_clock.h"
#include "drover/testing/loopback.h"

namespace drover::testing {
namespace {

tl::unexpected<Error> SocketError(const std::string& call) {
  return Internal(fmt::format("tcp proxy: {}: {}", call, std::strerror(errno)));
}

void SetNonBlocking(int fd) { fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK); }

// Closes `fd` with a RST instead of a FIN (SO_LINGER with a zero timeout).
void Reset(int fd) {
  linger option{1, 0};
  setsockopt(fd, SOL_SOCKET, SO_LINGER, &option, sizeof(option));
  close(fd);
}

// Connects to 127.0.0.1:`port` and makes the socket non-blocking for the proxy's event loop; -1
// on failure.
int ConnectTarget(int port) {
  const int fd = ConnectLoopback(port);
  if (fd >= 0) SetNonBlocking(fd);
  return fd;
}

// Bytes read from one side, to be written to the other once due.
struct Chunk {
  std::int64_t due_ms = 0;
  std::string data;
  std::size_t sent = 0;
};

// One accepted connection. target is -1 for a connection accepted in a partition.
struct Connection {
  int client = -1;
  int target = -1;
  std::deque<Chunk> to_target, to_client;
  bool silent = false;           // partitioned: everything read is discarded, for good
  bool replies_dropped = false;  // a reply was swallowed: every later one is too
  // LoseReplyThenReset: the connection sent the arm (its marker not yet), or sent the marker
  // (its answer is to be swallowed and the connection reset).
  bool lose_armed = false;
  bool lose_next_reply = false;
  std::string lose_marker;
  bool target_closed = false;  // the target closed: close the client once to_client is written
};

void Close(Connection& connection, bool reset) {
  for (int fd : {connection.client, connection.target}) {
    if (fd < 0) continue;
    if (reset) {
      Reset(fd);
    } else {
      close(fd);
    }
  }
  connection.client = connection.target = -1;
}

// Writes the due chunks at the front of `queue` to `fd`; false if the peer is gone.
bool Flush(int fd, std::deque<Chunk>& queue, std::int64_t now) {
  while (!queue.empty() && queue.front().due_ms <= now) {
    Chunk& chunk = queue.front();
    ssize_t n =
        send(fd, chunk.data.data() + chunk.sent, chunk.data.size() - chunk.sent, MSG_NOSIGNAL);
    if (n < 0) return errno == EAGAIN || errno == EWOULDBLOCK;
    chunk.sent += static_cast<std::size_t>(n);
    if (chunk.sent < chunk.data.size()) return true;
    queue.pop_front();
  }
  return true;
}

// Reads what `fd` has into `data` (empty if nothing yet); false when the peer closed or failed.
bool ReadSome(int fd, std::string& data) {
  char buffer[64 * 1024];
  ssize_t n = recv(fd, buffer, sizeof(buffer), 0);
  if (n > 0) {
    data.assign(buffer, static_cast<std::size_t>(n));
    return true;
  }
  data.clear();
  return n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR);
}

}  // namespace

Result<std::unique_ptr<TcpProxy>> TcpProxy::Create(int target_port) {
  int listen_fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
  if (listen_fd < 0) return SocketError("socket");
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_port = 0;
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t length = sizeof(address);
  if (bind(listen_fd, reinterpret_cast<sockaddr*>(&address), sizeof(address)) != 0 ||
      listen(listen_fd, 128) != 0 ||
      getsockname(listen_fd, reinterpret_cast<sockaddr*>(&address), &length) != 0) {
    auto error = SocketError("listen");
    close(listen_fd);
    return error;
  }
  int wake_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
  if (wake_fd < 0) {
    auto error = SocketError("eventfd");
    close(listen_fd);
    return error;
  }
  return std::unique_ptr<TcpProxy>(
      new TcpProxy(listen_fd, wake_fd, ntohs(address.sin_port), target_port));
}

TcpProxy::TcpProxy(int listen_fd, int wake_fd, int port, int target_port)
    : listen_fd_(listen_fd), wake_fd_(wake_fd), port_(port), target_port_(target_port) {
  thread_ = std::thread([this] { Run(); });
}

TcpProxy::~TcpProxy() {
  {
    MutexLock lock(mu_);
    stopping_ = true;
  }
  std::uint64_t one = 1;
  (void)!write(wake_fd_, &one, sizeof(one));
  thread_.join();
  close(listen_fd_);
  close(wake_fd_);
}

std::string TcpProxy::url() const { return fmt::format("http://127.0.0.1:{}", port_); }

void TcpProxy::SetMode(Mode mode, std::int64_t delay_ms) {
  {
    MutexLock lock(mu_);
    mode_ = mode;
    delay_ms_ = delay_ms;
  }
  std::uint64_t one = 1;
  (void)!write(wake_fd_, &one, sizeof(one));
}

void TcpProxy::DropNextReplies(std::string marker, int count) {
  MutexLock lock(mu_);
  drop_marker_ = std::move(marker);
  drops_left_ = count;
}

void TcpProxy::DropReplyContaining(std::string content) {
  MutexLock lock(mu_);
  drop_content_ = std::move(content);
}

void TcpProxy::LoseReplyThenReset(std::string arm, std::string marker) {
  MutexLock lock(mu_);
  lose_arm_ = std::move(arm);
  lose_marker_ = std::move(marker);
}

int TcpProxy::accepted() const {
  MutexLock lock(mu_);
  return accepted_;
}

int TcpProxy::swallowed_replies() const {
  MutexLock lock(mu_);
  return swallowed_;
}

void TcpProxy::Run() {
  std::list<Connection> connections;
  for (;;) {
    // Poll every socket; wake for the first chunk that comes due.
    const std::int64_t now = agent::SteadyMs();
    std::int64_t timeout = 100;
    std::vector<pollfd> fds = {{listen_fd_, POLLIN, 0}, {wake_fd_, POLLIN, 0}};
    for (Connection& connection : connections) {
      short client_events = POLLIN, target_events = POLLIN;
      for (auto [queue, events] : {std::pair{&connection.to_client, &client_events},
                                   std::pair{&connection.to_target, &target_events}}) {
        if (queue->empty()) continue;
        if (queue->front().due_ms <= now) {
          *events |= POLLOUT;
        } else {
          timeout = std::min(timeout, queue->front().due_ms - now);
        }
      }
      fds.push_back({connection.client, client_events, 0});
      fds.push_back({connection.target, target_events, 0});  // fd -1 is ignored by poll
    }
    if (poll(fds.data(), fds.size(), static_cast<int>(timeout)) < 0 && errno != EINTR) break;

    if (fds[1].revents & POLLIN) {
      std::uint64_t value;
      (void)!read(wake_fd_, &value, sizeof(value));
    }
    // The mode as it is after the wait, so that a switch made during it applies at once.
    Mode mode;
    std::int64_t delay;
    {
      MutexLock lock(mu_);
      if (stopping_) break;
      mode = mode_;
      delay = mode_ == Mode::kDelay ? delay_ms_ : 0;
    }
    if (mode == Mode::kReset) {
      for (Connection& connection : connections) Close(connection, /*reset=*/true);
      connections.clear();
      fds.resize(2);
    }
    if (mode == Mode::kBlackhole) {
      for (Connection& connection : connections) connection.silent = true;
    }
    if (fds[0].revents & POLLIN) {
      for (int fd;
           (fd = accept4(listen_fd_, nullptr, nullptr, SOCK_NONBLOCK | SOCK_CLOEXEC)) >= 0;) {
        Mode now_mode;  // a switch made while this loop accepts applies to the next one
        {
          MutexLock lock(mu_);
          ++accepted_;
          now_mode = mode_;
        }
        if (now_mode == Mode::kReset) {
          Reset(fd);
          continue;
        }
        Connection connection;
        connection.client = fd;
        if (now_mode == Mode::kBlackhole) {
          connection.silent = true;
        } else {
          connection.target = ConnectTarget(target_port_);
          if (connection.target < 0) {
            Reset(fd);
            continue;
          }
        }
        connections.push_back(std::move(connection));
      }
    }

    // Only the connections that were polled (new ones wait for the next turn).
    const std::int64_t after = agent::SteadyMs();
    std::size_t index = 2;
    for (auto it = connections.begin(); it != connections.end() && index < fds.size(); index += 2) {
      Connection& connection = *it;
      const short client_events = fds[index].revents, target_events = fds[index + 1].revents;
      bool open = true;
      std::string data;
      if (client_events & (POLLIN | POLLHUP | POLLERR)) {
        open = ReadSome(connection.client, data);
        if (!data.empty() && !connection.silent) {
          {
            MutexLock lock(mu_);
            if (drops_left_ > 0 && data.find(drop_marker_) != std::string::npos) {
              --drops_left_;
              connection.replies_dropped = true;
            }
            if (connection.lose_armed && data.find(connection.lose_marker) != std::string::npos) {
              connection.lose_armed = false;
              connection.lose_next_reply = true;
            } else if (!lose_arm_.empty() && data.find(lose_arm_) != std::string::npos) {
              connection.lose_armed = true;
              connection.lose_marker = std::exchange(lose_marker_, "");
              lose_arm_.clear();
            }
          }
          connection.to_target.push_back({after + delay, std::move(data), 0});
        }
      }
      bool reset = false;  // LoseReplyThenReset: the answer it waited for came, swallowed
      if (open && connection.target >= 0 && (target_events & (POLLIN | POLLHUP | POLLERR))) {
        if (!ReadSome(connection.target, data)) {
          // The target hung up: what it said still reaches the client, then the client is
          // closed too (a partitioned client never learns of it).
          close(connection.target);
          connection.target = -1;
          connection.target_closed = true;
        }
        if (!data.empty() && connection.lose_next_reply) {
          reset = true;
          MutexLock lock(mu_);
          ++swallowed_;
        } else if (!data.empty()) {
          MutexLock lock(mu_);
          if (!connection.silent && !drop_content_.empty() &&
              data.find(drop_content_) != std::string::npos) {
            drop_content_.clear();
            connection.replies_dropped = true;
          }
          if (connection.silent || connection.replies_dropped || mode == Mode::kDropReplies) {
            connection.replies_dropped = !connection.silent;
            ++swallowed_;
          } else {
            connection.to_client.push_back({after + delay, std::move(data), 0});
          }
        }
      }
      if (reset) open = false;
      if (open && connection.target >= 0)
        open = Flush(connection.target, connection.to_target, after);
      if (open) open = Flush(connection.client, connection.to_client, after);
      if (open && connection.target_closed && !connection.silent && connection.to_client.empty()) {
        open = false;
      }
      if (open) {
        ++it;
      } else {
        Close(connection, reset);
        it = connections.erase(it);
      }
    }
  }
  for (Connection& connection : connections) Close(connection, /*reset=*/false);
}

}  // namespace drover::testing
