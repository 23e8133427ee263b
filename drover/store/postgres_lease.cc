// PostgresLease (postgres_lease.h): each call is one statement in its own transaction, judged by
// the database's clock.

#include "drover/store/postgres_lease.h"

#include <fmt/format.h>

#include <utility>
#include <vector>

#include "drover/store/postgres_connection.h"
#include "drover/store/postgres_store.h"

namespace drover::store {

using postgres::Session;
using postgres::Text;

struct PostgresLease::Connection {
  explicit Connection(const std::string& uri) : session(uri, &kNoStatements) {}
  static inline const std::vector<postgres::Statement> kNoStatements;
  Session session;
};

PostgresLease::PostgresLease(std::unique_ptr<Connection> connection)
    : connection_(std::move(connection)) {}

PostgresLease::~PostgresLease() = default;

Result<std::unique_ptr<PostgresLease>> PostgresLease::Open(const std::string& connection) {
  auto opened = std::make_unique<Connection>(connection);
  Status connected =
      opened->session.Run(fmt::format("connect to {}", RedactConnectionString(connection)),
                          [](pqxx::connection&) -> Status { return OkStatus(); });
  if (!connected) return Unavailable(connected.error().message);
  return std::unique_ptr<PostgresLease>(new PostgresLease(std::move(opened)));
}

Result<std::optional<std::int64_t>> PostgresLease::TryAcquire(const std::string& holder,
                                                              const std::string& url,
                                                              DurationMs duration) {
  std::optional<std::int64_t> epoch;
  DROVER_RETURN_IF_ERROR(
      connection_->session.Run("take the leader lease", [&](pqxx::connection& db) -> Status {
        pqxx::work tx(db);
        const pqxx::result row = tx.exec_params(
            "INSERT INTO leader (id, holder, url, epoch, expires_at) "
            "VALUES (1, $1, $2, 1, now() + $3 * interval '1 millisecond') "
            "ON CONFLICT (id) DO UPDATE SET holder = EXCLUDED.holder, url = EXCLUDED.url, "
            "epoch = leader.epoch + 1, expires_at = EXCLUDED.expires_at "
            "WHERE leader.expires_at < now() RETURNING epoch",
            holder, url, duration);
        tx.commit();
        if (!row.empty()) epoch = row[0][0].as<std::int64_t>();
        return OkStatus();
      }));
  return epoch;
}

Result<bool> PostgresLease::Renew(std::int64_t epoch, DurationMs duration) {
  bool renewed = false;
  DROVER_RETURN_IF_ERROR(
      connection_->session.Run("renew the leader lease", [&](pqxx::connection& db) -> Status {
        pqxx::work tx(db);
        const pqxx::result row = tx.exec_params(
            "UPDATE leader SET expires_at = now() + $2 * interval '1 millisecond' "
            "WHERE id = 1 AND epoch = $1 RETURNING epoch",
            epoch, duration);
        tx.commit();
        renewed = !row.empty();
        return OkStatus();
      }));
  return renewed;
}

Status PostgresLease::Release(std::int64_t epoch) {
  return connection_->session.Run("release the leader lease", [&](pqxx::connection& db) -> Status {
    pqxx::work tx(db);
    tx.exec_params("UPDATE leader SET expires_at = now() WHERE id = 1 AND epoch = $1", epoch);
    tx.commit();
    return OkStatus();
  });
}

Result<std::optional<LeaseHolder>> PostgresLease::Current() {
  std::optional<LeaseHolder> current;
  DROVER_RETURN_IF_ERROR(
      connection_->session.Run("read the leader lease", [&](pqxx::connection& db) -> Status {
        pqxx::nontransaction tx(db);
        const pqxx::result row =
            tx.exec("SELECT holder, url, epoch, expires_at < now() FROM leader WHERE id = 1");
        if (!row.empty()) {
          current = LeaseHolder{.holder = Text(row[0], 0),
                                .url = Text(row[0], 1),
                                .epoch = row[0][2].as<std::int64_t>(),
                                .expired = row[0][3].as<bool>()};
        }
        return OkStatus();
      }));
  return current;
}

}  // namespace drover::store
