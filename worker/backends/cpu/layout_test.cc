#include "worker/backends/cpu/layout.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstring>

namespace iosfarm::worker::cpu {
namespace {

class LayoutTest : public ::testing::Test {
 protected:
  dnnl::memory Make(const graph::Shape& shape, ActivationLayout layout, float start) {
    dnnl::memory target(StorageDesc(shape, layout), engine_);
    std::memset(target.get_data_handle(), 0, target.get_desc().get_size());
    if (start >= 0) {
      std::vector<float> data(static_cast<size_t>(graph::NumElements(shape)));
      for (size_t i = 0; i < data.size(); ++i) data[i] = start + static_cast<float>(i);
      dnnl::memory plain(PlainDesc(shape), engine_, data.data());
      dnnl::reorder(plain, target).execute(stream_, plain, target);
      stream_.wait();
    }
    return target;
  }
  std::vector<float> Plain(const dnnl::memory& m, const graph::Shape& shape) {
    std::vector<float> data(static_cast<size_t>(graph::NumElements(shape)));
    dnnl::memory plain(PlainDesc(shape), engine_, data.data());
    dnnl::reorder(m, plain).execute(stream_, const_cast<dnnl::memory&>(m), plain);
    stream_.wait();
    return data;
  }

  dnnl::engine engine_{dnnl::engine::kind::cpu, 0};
  dnnl::stream stream_{engine_};
};

constexpr ActivationLayout kAllLayouts[] = {ActivationLayout::kPlain,
                                            ActivationLayout::kChannelsLast,
                                            ActivationLayout::kBlocked8,
                                            ActivationLayout::kBlocked16};

TEST_F(LayoutTest, OnlyFourDimensionalTensorsLeavePlainLayout) {
  using Tag = dnnl::memory::format_tag;
  const auto desc = [](Tag tag) {
    return dnnl::memory::desc({1, 32, 7, 7}, dnnl::memory::data_type::f32, tag);
  };
  EXPECT_EQ(StorageDesc({1, 32, 7, 7}, ActivationLayout::kBlocked16), desc(Tag::nChw16c));
  EXPECT_EQ(StorageDesc({1, 32, 7, 7}, ActivationLayout::kBlocked8), desc(Tag::nChw8c));
  EXPECT_EQ(StorageDesc({1, 32, 7, 7}, ActivationLayout::kChannelsLast), desc(Tag::nhwc));
  EXPECT_FALSE(IsPlain(StorageDesc({1, 32, 7, 7}, ActivationLayout::kChannelsLast)));
  // Too few channels to block.
  EXPECT_TRUE(IsPlain(StorageDesc({1, 8, 7, 7}, ActivationLayout::kBlocked16)));
  EXPECT_TRUE(IsPlain(StorageDesc({1, 32, 7, 7}, ActivationLayout::kPlain)));
  // nhwc of [N, C, 1, 1] is the plain layout.
  EXPECT_TRUE(IsPlain(StorageDesc({2, 32, 1, 1}, ActivationLayout::kChannelsLast)));
  for (ActivationLayout layout : kAllLayouts) {
    EXPECT_TRUE(IsPlain(StorageDesc({4, 1000}, layout)));
    EXPECT_TRUE(IsPlain(StorageDesc({2, 3, 4, 5, 6}, layout)));
    EXPECT_TRUE(IsChannelCopyable(StorageDesc({1, 32, 7, 7}, layout)));
  }
  EXPECT_EQ(ActivationLayoutName(ActivationLayout::kChannelsLast), "nhwc");
  // Whatever this CPU prefers, it is one of the four.
  const ActivationLayout detected = DetectActivationLayout(engine_);
  EXPECT_FALSE(ActivationLayoutName(detected).empty());
}

// Copies channels [5, 17) of an iota [2, 20, 3, 3] into channels [3, 15) of
// a zeroed [2, 24, 3, 3], for every pair of layouts.
TEST_F(LayoutTest, CopyChannelsBetweenAnyLayouts) {
  const graph::Shape src_shape = {2, 20, 3, 3}, dst_shape = {2, 24, 3, 3};
  for (ActivationLayout src_layout : kAllLayouts) {
    for (ActivationLayout dst_layout : kAllLayouts) {
      for (auto [src_begin, dst_begin] : {std::pair{5, 3}, std::pair{0, 8}, std::pair{16, 16}}) {
        const int count = std::min(20 - src_begin, 12);
        dnnl::memory src = Make(src_shape, src_layout, 0);
        dnnl::memory dst = Make(dst_shape, dst_layout, -1);
        CopyChannels(src, src_begin, dst, dst_begin, count);
        const std::vector<float> out = Plain(dst, dst_shape);
        for (int n = 0; n < 2; ++n) {
          for (int c = 0; c < 24; ++c) {
            for (int p = 0; p < 9; ++p) {
              const bool copied = c >= dst_begin && c < dst_begin + count;
              const float expected =
                  copied ? static_cast<float>((n * 20 + c - dst_begin + src_begin) * 9 + p) : 0;
              ASSERT_EQ(out[(n * 24 + c) * 9 + p], expected)
                  << ActivationLayoutName(src_layout) << "->" << ActivationLayoutName(dst_layout) << " begin " << src_begin
                  << "->" << dst_begin << " at n=" << n << " c=" << c << " p=" << p;
            }
          }
        }
      }
    }
  }
}

}  // namespace
}  // namespace iosfarm::worker::cpu
