#include "server/farm_database.h"

#include "spdlog/spdlog.h"

namespace iosfarm::server {

StatusOr<FarmDatabase> OpenFarmDatabase(const std::string& path,
                                        std::span<const Migration> migrations) {
  FarmDatabase database;
  ASSIGN_OR_RETURN(database.connection, StoreConnection::Open(path, migrations));
  database.latencies = std::make_unique<LatencyDb>(database.connection);
  database.jobs = std::make_unique<JobStore>(database.connection);
  // Test migration lists may stop before results_unreadable exists.
  if (!migrations.empty() && migrations.back().version >= 3) {
    ASSIGN_OR_RETURN(const int64_t unreadable, database.jobs->CountUnreadableResults());
    if (unreadable > 0) {
      spdlog::warn("database {}: {} job result(s) from schema version 2 could not be read; their "
                   "jobs are kept and their text is in table results_unreadable "
                   "(docs/database.md)",
                   path, unreadable);
    }
  }
  return database;
}

}  // namespace iosfarm::server
