#pragma once

// The PostgreSQL plumbing the PostgreSQL store runs on (postgres_store.cc): a Session (one
// libpqxx connection that reconnects after a break and prepares the store's statements on each
// new connection), the mapping of libpqxx exceptions to Drover errors, and the redaction of
// connection strings for messages and logs. Internal to drover/store.

#include <exception>
#include <memory>
#include <pqxx/pqxx>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "drover/common/result.h"

namespace drover::store::postgres {

// A named SQL statement, prepared on every connection of a store.
struct Statement {
  std::string name;
  std::string sql;
};

// The error for an exception thrown by libpqxx while doing `what`: kUnavailable for a broken
// connection, a commit whose outcome is unknown, a server shutting down or out of resources, or
// a serialization failure (retrying may succeed); kInvalidArgument for text the database cannot
// hold (invalid UTF-8); kInternal otherwise. The message names `what` and PostgreSQL's reason.
Error ErrorFromException(const std::exception& e, std::string_view what);

// One connection to the database. Not thread-safe: one thread at a time (the store's writer
// mutex, or a pool lease).
class Session {
 public:
  // Connects nothing yet; `statements` (owned by the caller, outliving the session) are prepared
  // on each connection.
  Session(std::string connection, const std::vector<Statement>* statements)
      : connection_(std::move(connection)), statements_(statements) {}

  // The open connection, connecting (and preparing the statements) first if there is none or
  // the last one broke. Throws pqxx::broken_connection if the database cannot be reached.
  pqxx::connection& Get();

  // Forgets the connection (after a pqxx::broken_connection): the next Get() reconnects.
  void Reset() { db_.reset(); }

  // Runs `body(pqxx::connection&)`, which returns Status, mapping any exception to an error
  // naming `what` (ErrorFromException). A broken connection is dropped so that the next call
  // reconnects; this call is not retried (the caller cannot know whether a commit landed). Any
  // exception but an SQL error that leaves no open connection behind (one that broke while
  // connecting, such as "Could not obtain client encoding" from a server shutting down) is
  // kUnavailable.
  template <typename Body>
  Status Run(std::string_view what, Body&& body) {
    try {
      return body(Get());
    } catch (const pqxx::broken_connection& e) {
      Reset();
      return tl::unexpected(ErrorFromException(e, what));
    } catch (const pqxx::in_doubt_error& e) {
      Reset();
      return tl::unexpected(ErrorFromException(e, what));
    } catch (const std::exception& e) {
      Error error = ErrorFromException(e, what);
      if (db_ == nullptr || !db_->is_open()) {
        Reset();
        // A statement the server refused reached the server: its error stands.
        if (dynamic_cast<const pqxx::sql_error*>(&e) == nullptr) {
          error.code = ErrorCode::kUnavailable;
        }
      }
      return tl::unexpected(std::move(error));
    }
  }

 private:
  std::string connection_;
  const std::vector<Statement>* statements_;
  std::unique_ptr<pqxx::connection> db_;  // null until connected, and after a break
};

// The text of field `i` of `row`, bytes as stored.
inline std::string Text(const pqxx::row& row, int i) {
  return std::string(row[i].c_str(), row[i].size());
}

}  // namespace drover::store::postgres
