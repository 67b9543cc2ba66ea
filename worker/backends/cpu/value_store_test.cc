#include "worker/backends/cpu/value_store.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace iosfarm::worker::cpu {
namespace {

class ValueStoreTest : public ::testing::Test {
 protected:
  dnnl::engine engine_{dnnl::engine::kind::cpu, 0};
  dnnl::stream stream_{engine_};
};

TEST_F(ValueStoreTest, WritesAndReadsBackThroughTheStorageLayout) {
  ValueStore store(engine_, ActivationLayout::kBlocked8);
  graph::Tensor t;
  t.shape = {1, 10, 2, 2};
  for (int i = 0; i < 40; ++i) t.data.push_back(static_cast<float>(i));
  ASSERT_TRUE(store.Write(3, t, stream_).ok());
  EXPECT_TRUE(store.Has(3));
  EXPECT_FALSE(IsPlain(store.Get(3, t.shape).get_desc()));
  auto back = store.Read(3, t.shape, stream_);
  ASSERT_TRUE(back.ok()) << back.status();
  EXPECT_EQ(back->data, t.data);
  EXPECT_EQ(store.Read(4, t.shape, stream_).status().code(),
            absl::StatusCode::kFailedPrecondition);
  graph::Tensor bad = t;
  bad.data.pop_back();
  EXPECT_EQ(store.Write(5, bad, stream_).code(), absl::StatusCode::kInvalidArgument);
}

TEST_F(ValueStoreTest, ReleasedBuffersBackLaterValues) {
  ValueStore store(engine_, ActivationLayout::kChannelsLast);
  const dnnl::memory a = store.Get(0, {1, 16, 8, 8});
  const dnnl::memory b = store.Get(1, {1, 16, 8, 8});
  EXPECT_NE(a.get_data_handle(), b.get_data_handle());
  EXPECT_EQ(reinterpret_cast<uintptr_t>(a.get_data_handle()) % 64, 0u);
  const size_t two = store.bytes();
  store.Release(0);
  // Smaller values fit in the freed buffer; the same value keeps its memory.
  const dnnl::memory c = store.Get(2, {1, 8, 8, 8});
  EXPECT_EQ(c.get_data_handle(), a.get_data_handle());
  EXPECT_EQ(store.Get(1, {1, 16, 8, 8}).get_data_handle(), b.get_data_handle());
  EXPECT_EQ(store.bytes(), two);
  // Nothing free is large enough: a new buffer.
  const dnnl::memory d = store.Get(3, {1, 16, 8, 8});
  EXPECT_NE(d.get_data_handle(), a.get_data_handle());
  EXPECT_NE(d.get_data_handle(), b.get_data_handle());
  EXPECT_GT(store.bytes(), two);
  store.Release(42);  // unknown: no-op
}

}  // namespace
}  // namespace iosfarm::worker::cpu
