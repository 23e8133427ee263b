#pragma once

// The PostgreSQL store's schema migrations and prepared statements (postgres_store.h has the
// layout). Internal to drover/store.

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "drover/store/postgres_connection.h"

namespace drover::store::postgres {

// The transaction-scoped advisory lock migrations hold ("DRVR" as the SQLite application_id),
// so that servers started together migrate one after the other.
inline constexpr std::int64_t kMigrationLock = 0x44525652;
// drover_schema.application of a Drover database.
inline constexpr std::string_view kApplication = "drover";

// The SQL of migration `from` -> `from` + 1 (0 <= from < kPostgresSchemaVersion).
std::string MigrationSql(std::int64_t from);

// The statements prepared on every connection of the store, by name.
const std::vector<Statement>& Statements();

}  // namespace drover::store::postgres
