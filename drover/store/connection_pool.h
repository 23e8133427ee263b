#pragma once

// A fixed set of database connections lent to one thread at a time: the reader pools of the
// SQLite and PostgreSQL stores. Internal to drover/store. Thread-safe.

#include <condition_variable>
#include <memory>
#include <mutex>
#include <utility>
#include <vector>

namespace drover::store {

template <typename Connection>
class ConnectionPool {
 public:
  explicit ConnectionPool(std::vector<std::unique_ptr<Connection>> connections)
      : connections_(std::move(connections)) {
    for (auto& connection : connections_) free_.push_back(connection.get());
  }

  // Takes a free connection, waiting for one; give it back with Release.
  Connection* Acquire() {
    std::unique_lock lock(mutex_);
    available_.wait(lock, [this] { return !free_.empty(); });
    Connection* connection = free_.back();
    free_.pop_back();
    return connection;
  }

  void Release(Connection* connection) {
    {
      std::lock_guard lock(mutex_);
      free_.push_back(connection);
    }
    available_.notify_one();
  }

 private:
  std::vector<std::unique_ptr<Connection>> connections_;  // owned; never resized
  std::mutex mutex_;
  std::condition_variable available_;
  std::vector<Connection*> free_;  // guarded by mutex_
};

}  // namespace drover::store
