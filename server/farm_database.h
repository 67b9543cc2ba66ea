// OpenFarmDatabase: the server's persistent state in one SQLite file, opened
// as its two stores — the LatencyDb (devices, measured stage latencies) and
// the JobStore (models, jobs, results, phase log). Schema and migrations:
// store_schema.h; tables and operations: docs/database.md.
//
// Both stores share one StoreConnection (one SQLite connection behind one
// mutex, with one statement cache): a call on either store holds it for the
// call, exactly as one store did before the split, so the latency database
// and the job store never contend for SQLite's file lock within a process.
// Either store may outlive the other; the connection closes with the last.
//
// Thread safety: the stores may be used from any thread (their headers).
#ifndef IOSFARM_SERVER_FARM_DATABASE_H_
#define IOSFARM_SERVER_FARM_DATABASE_H_

#include <memory>
#include <span>
#include <string>

#include "common/status.h"
#include "server/job_store.h"
#include "server/latency_db.h"
#include "server/store_connection.h"
#include "server/store_schema.h"

namespace iosfarm::server {

struct FarmDatabase {
  std::shared_ptr<StoreConnection> connection;  // for CheckUsable and path
  std::unique_ptr<LatencyDb> latencies;
  std::unique_ptr<JobStore> jobs;
};

// Opens or creates the file; creates the schema or migrates an older one
// step by step inside transactions (`migrations`: this binary's by default;
// tests pass future steps). Errors as StoreConnection::Open. Logs a warning
// when the file holds results an upgrade could not read
// (JobStore::CountUnreadableResults).
StatusOr<FarmDatabase> OpenFarmDatabase(const std::string& path,
                                        std::span<const Migration> migrations = Migrations());

}  // namespace iosfarm::server

#endif  // IOSFARM_SERVER_FARM_DATABASE_H_
