#include "drover/store/postgres_connection.h"

#include <fmt/format.h>

#include <regex>

#include "drover/store/postgres_store.h"

namespace drover::store {

std::string RedactConnectionString(std::string_view connection) {
  std::string out(connection);
  // URI: scheme://user:password@host...; the password ends at the last '@' of the authority.
  if (const auto scheme = out.find("://"); scheme != std::string::npos) {
    const std::size_t authority = scheme + 3;
    const std::size_t end = std::min(out.find_first_of("/?", authority), out.size());
    const std::size_t at = out.rfind('@', end);
    if (at != std::string::npos && at > authority) {
      const std::size_t colon = out.find(':', authority);
      if (colon != std::string::npos && colon < at) out.replace(colon + 1, at - colon - 1, "***");
    }
  }
  // password=... as a URI parameter or a key=value pair (quoted or not).
  static const std::regex kPassword(R"((password\s*=\s*)('(\\.|[^'])*'|[^&\s]*))",
                                    std::regex::icase);
  return std::regex_replace(out, kPassword, "$1***");
}

namespace postgres {

Error ErrorFromException(const std::exception& e, std::string_view what) {
  ErrorCode code = ErrorCode::kInternal;
  if (dynamic_cast<const pqxx::broken_connection*>(&e) != nullptr ||
      dynamic_cast<const pqxx::in_doubt_error*>(&e) != nullptr) {
    code = ErrorCode::kUnavailable;
  } else if (const auto* sql = dynamic_cast<const pqxx::sql_error*>(&e)) {
    const std::string& state = sql->sqlstate();
    // 08: connection exception; 40: transaction rollback (serialization, deadlock); 53:
    // insufficient resources; 57: operator intervention (shutdown, cancel).
    if (state.starts_with("08") || state.starts_with("40") || state.starts_with("53") ||
        state.starts_with("57")) {
      code = ErrorCode::kUnavailable;
    } else if (state == "22021" || state == "22P05") {  // bad UTF-8; untranslatable character
      code = ErrorCode::kInvalidArgument;
    }
  }
  std::string message = e.what();
  while (!message.empty() && (message.back() == '\n' || message.back() == ' ')) {
    message.pop_back();
  }
  return Error{code, fmt::format("postgres store: {}: {}", what, message), {}};
}

pqxx::connection& Session::Get() {
  if (db_ != nullptr && db_->is_open()) return *db_;
  db_.reset();
  auto db = std::make_unique<pqxx::connection>(connection_);
  for (const Statement& statement : *statements_) {
    db->prepare(statement.name, statement.sql);
  }
  db_ = std::move(db);
  return *db_;
}

}  // namespace postgres
}  // namespace drover::store
