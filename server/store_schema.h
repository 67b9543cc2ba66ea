// Schema of the iosfarm SQLite database (latency database + job store) and
// its migrations.
//
// The schema version lives in PRAGMA user_version; PRAGMA application_id
// marks a file as an iosfarm database. Migrations are an ordered list of
// steps, step N taking a version N-1 file to version N. Each step runs in its
// own write transaction together with its schema_migrations note and the
// user_version bump, so a crash leaves the file at a whole version. Steps are
// append-only: a released step is never edited (docs/database.md).
//
// Thread safety: these functions use the SqliteDb they are given; the caller
// serialises access to it.
#ifndef IOSFARM_SERVER_STORE_SCHEMA_H_
#define IOSFARM_SERVER_STORE_SCHEMA_H_

#include <cstdint>
#include <span>
#include <string>

#include "common/status.h"
#include "server/sqlite_db.h"

namespace iosfarm::server {

// The version this binary creates and understands.
inline constexpr int64_t kSchemaVersion = 12;
// PRAGMA application_id of iosfarm databases ("IOSF").
inline constexpr int64_t kApplicationId = 0x494F5346;

struct Migration {
  int64_t version;          // the version the file has after this step
  const char* description;  // recorded in schema_migrations
  const char* sql;          // statements run inside the step's transaction
};

// The migration steps of this binary, versions 1..kSchemaVersion in order.
std::span<const Migration> Migrations();

// Checks, without changing anything, that the file at `path` can be used:
// a missing or empty file, an SQLite file with no tables and no version, or
// an iosfarm database of version <= the newest in `migrations`.
// InvalidArgument (naming the file) for something that is not an iosfarm
// database; FailedPrecondition for an iosfarm database newer than
// `migrations`; Unavailable when the file cannot be read.
Status InspectDatabaseFile(const std::string& path, std::span<const Migration> migrations);

// Brings the open database up to the newest version in `migrations`, one step
// per transaction, re-reading the version inside each transaction so that
// concurrent openers do not apply a step twice. Errors as InspectDatabaseFile
// plus Internal for a failing step (that step is rolled back).
Status MigrateSchema(SqliteDb& db, std::span<const Migration> migrations, int64_t now_unix_ms);

}  // namespace iosfarm::server

#endif  // IOSFARM_SERVER_STORE_SCHEMA_H_
