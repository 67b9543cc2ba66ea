#include "common/flags/flags.h"

#include <sstream>

#include <gtest/gtest.h>

namespace iosfarm {
namespace {

struct Parsed {
  std::optional<int> exit;
  std::string err;
};

Parsed Parse(std::vector<const char*> argv) {
  CLI::App app{"a test program", "prog"};
  int slots = 2;
  std::string db;
  app.add_option("--server-slots", slots)->check(CLI::Range(1, 64));
  app.add_option("--db", db)->required();
  app.set_version_flag("--version", "prog 1.0");
  std::ostringstream err;
  Parsed parsed;
  parsed.exit = ParseFlags(app, static_cast<int>(argv.size()), argv.data(), err);
  parsed.err = err.str();
  return parsed;
}

TEST(ParseFlagsTest, AMistypedFlagIsNamedWithTheNearestOneAndExits2) {
  Parsed p = Parse({"prog", "--server-slot", "3", "--db", "x"});
  ASSERT_EQ(p.exit, 2);
  EXPECT_NE(p.err.find("prog: error: unknown flag '--server-slot' for 'prog'; did you mean "
                       "'--server-slots'?"),
            std::string::npos)
      << p.err;
  // The mistyped flag is named even when CLI11's own complaint is another.
  p = Parse({"prog", "--bd", "x"});
  ASSERT_EQ(p.exit, 2);
  EXPECT_NE(p.err.find("unknown flag '--bd' for 'prog'; did you mean '--db'?"), std::string::npos)
      << p.err;
}

TEST(ParseFlagsTest, OtherUsageErrorsExit2AndHelpAndVersionExit0) {
  Parsed p = Parse({"prog", "--server-slots", "0", "--db", "x"});
  EXPECT_EQ(p.exit, 2);
  EXPECT_NE(p.err.find("--server-slots"), std::string::npos) << p.err;
  p = Parse({"prog"});
  EXPECT_EQ(p.exit, 2);
  EXPECT_NE(p.err.find("--db is required"), std::string::npos) << p.err;
  EXPECT_EQ(Parse({"prog", "--help"}).exit, 0);
  EXPECT_EQ(Parse({"prog", "--version"}).exit, 0);
  EXPECT_EQ(Parse({"prog", "--db", "x"}).exit, std::nullopt);
}

}  // namespace
}  // namespace iosfarm
