// A test fixture with a fresh farm database (farm.db in the test's own
// temporary directory), opened before each test. Header-only, used only by
// *_test.cc files.
#ifndef IOSFARM_SERVER_FARM_DATABASE_TEST_UTIL_H_
#define IOSFARM_SERVER_FARM_DATABASE_TEST_UTIL_H_

#include <gtest/gtest.h>

#include <utility>

#include "server/farm_database.h"
#include "server/store_test_util.h"

namespace iosfarm::server {

class FarmDatabaseTest : public TempDirTest {
 protected:
  void SetUp() override {
    TempDirTest::SetUp();
    auto database = OpenFarmDatabase(PathOf("farm.db"));
    ASSERT_TRUE(database.ok()) << database.status();
    database_ = std::move(*database);
  }

  FarmDatabase database_;
};

}  // namespace iosfarm::server

#endif  // IOSFARM_SERVER_FARM_DATABASE_TEST_UTIL_H_
