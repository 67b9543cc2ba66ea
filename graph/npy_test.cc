#include "graph/npy.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <xtensor/xarray.hpp>
#include <xtensor/xnpy.hpp>

namespace iosfarm::graph {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

class NpyTest : public ::testing::Test {
 protected:
  std::string Path(const std::string& name) {
    return (std::filesystem::path(::testing::TempDir()) / name).string();
  }
};

TEST_F(NpyTest, WrittenArraysReadBackExactly) {
  Tensor t{{2, 3, 1}, {1.5f, -2, 3, 4e-7f, 5e7f, -0.0f}};
  ASSERT_TRUE(WriteNpy(Path("a.npy"), t).ok());
  auto back = ReadNpy(Path("a.npy"));
  ASSERT_TRUE(back.ok()) << back.status();
  EXPECT_EQ(back->shape, t.shape);
  EXPECT_EQ(back->data, t.data);
}

TEST_F(NpyTest, ScalarsHaveAnEmptyShape) {
  ASSERT_TRUE(WriteNpy(Path("s.npy"), Tensor{{}, {42}}).ok());
  auto back = ReadNpy(Path("s.npy"));
  ASSERT_TRUE(back.ok()) << back.status();
  EXPECT_TRUE(back->shape.empty());
  EXPECT_THAT(back->data, ElementsAre(42));
}

TEST_F(NpyTest, Float64IsNarrowedToFloat32) {
  xt::xarray<double> a = {{0.25, 1e10}, {-3, 7}};
  xt::dump_npy(Path("d.npy"), a);
  auto back = ReadNpy(Path("d.npy"));
  ASSERT_TRUE(back.ok()) << back.status();
  EXPECT_THAT(back->shape, ElementsAre(2, 2));
  EXPECT_THAT(back->data, ElementsAre(0.25f, 1e10f, -3.f, 7.f));
}

TEST_F(NpyTest, FortranOrderComesBackRowMajor) {
  xt::xarray<float, xt::layout_type::column_major> a = {{1, 2, 3}, {4, 5, 6}};
  xt::dump_npy(Path("f.npy"), a);
  auto back = ReadNpy(Path("f.npy"));
  ASSERT_TRUE(back.ok()) << back.status();
  EXPECT_THAT(back->shape, ElementsAre(2, 3));
  EXPECT_THAT(back->data, ElementsAre(1, 2, 3, 4, 5, 6));
}

TEST_F(NpyTest, OtherDtypesAreRefusedWithTheFix) {
  xt::xarray<int64_t> a = {1, 2, 3};
  xt::dump_npy(Path("i.npy"), a);
  auto back = ReadNpy(Path("i.npy"));
  ASSERT_FALSE(back.ok());
  EXPECT_EQ(back.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(back.status().message(), HasSubstr("i.npy' holds int64 values"));
  EXPECT_THAT(back.status().message(), HasSubstr("astype(numpy.float32)"));
}

TEST_F(NpyTest, TruncatedAndForeignFilesAreRefused) {
  ASSERT_TRUE(WriteNpy(Path("t.npy"), Tensor{{100}, std::vector<float>(100, 1)}).ok());
  std::filesystem::resize_file(Path("t.npy"), std::filesystem::file_size(Path("t.npy")) - 8);
  auto truncated = ReadNpy(Path("t.npy"));
  ASSERT_FALSE(truncated.ok());
  EXPECT_THAT(truncated.status().message(), HasSubstr("truncated"));

  std::ofstream(Path("x.npy")) << "this is not numpy";
  auto foreign = ReadNpy(Path("x.npy"));
  ASSERT_FALSE(foreign.ok());
  EXPECT_EQ(foreign.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(foreign.status().message(), HasSubstr("x.npy' is not a valid .npy array"));

  auto missing = ReadNpy(Path("missing.npy"));
  EXPECT_EQ(missing.status().code(), absl::StatusCode::kNotFound);
}

TEST_F(NpyTest, ExtraBytesAreRefused) {
  ASSERT_TRUE(WriteNpy(Path("e.npy"), Tensor{{2}, {1, 2}}).ok());
  std::ofstream(Path("e.npy"), std::ios::app | std::ios::binary) << "junk";
  auto back = ReadNpy(Path("e.npy"));
  ASSERT_FALSE(back.ok());
  EXPECT_THAT(back.status().message(), HasSubstr("more bytes than its shape holds"));
}

TEST_F(NpyTest, WriteRefusesAMismatchedTensorAndAnUnwritablePath) {
  EXPECT_EQ(WriteNpy(Path("m.npy"), Tensor{{3}, {1, 2}}).code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(WriteNpy("/nonexistent-dir/o.npy", Tensor{{1}, {1}}).code(),
            absl::StatusCode::kUnavailable);
}

}  // namespace
}  // namespace iosfarm::graph
