#include <gtest/gtest.h>

#include "tessera/tensor.h"
#include "tessera/value.h"

namespace tessera {
namespace {

TEST(TensorTest, AllocateOwnsAndReturnsMemory) {
  AllocatorPtr host = CreateHostAllocator();
  {
    Tensor t = Tensor::Allocate(DataType::kFloat, {2, 3}, host);
    EXPECT_EQ(t.SizeInBytes(), 24u);
    EXPECT_FALSE(t.is_borrowed());
    EXPECT_GE(host->Stats().bytes_in_use, 24u);
    Tensor shared = t;  // shares the buffer
    EXPECT_EQ(shared.raw_data(), t.raw_data());
  }
  EXPECT_EQ(host->Stats().bytes_in_use, 0u);
}

TEST(TensorTest, WrapBorrowsWithoutCopying) {
  std::vector<float> data = {1, 2, 3, 4};
  Tensor t = Tensor::Wrap(DataType::kFloat, {2, 2}, data.data(), data.size() * sizeof(float), MemoryInfo::Host());
  EXPECT_TRUE(t.is_borrowed());
  EXPECT_EQ(t.raw_data(), data.data());
  data[3] = 9;
  EXPECT_EQ(t.Data<float>()[3], 9);
  EXPECT_THROW(Tensor::Wrap(DataType::kFloat, {3, 2}, data.data(), 16, MemoryInfo::Host()), Error);
}

TEST(TensorTest, ShareKeepsItsOwnerAliveWithoutCopying) {
  bool released = false;
  auto values = std::shared_ptr<std::vector<float>>(new std::vector<float>{1, 2, 3, 4, 5, 6},
                                                    [&released](std::vector<float>* v) {
                                                      released = true;
                                                      delete v;
                                                    });
  float* data = values->data();
  {
    Tensor t = Tensor::Share(DataType::kFloat, {2, 3}, values, data, 6 * sizeof(float), MemoryInfo::Host());
    values.reset();
    EXPECT_FALSE(released) << "the tensor keeps its owner";
    EXPECT_FALSE(t.is_borrowed());
    EXPECT_EQ(t.raw_data(), data);
    EXPECT_EQ(t.ToVector<float>(), (std::vector<float>{1, 2, 3, 4, 5, 6}));
    Tensor view = t.Reshaped({6});
    t = Tensor();
    EXPECT_FALSE(released) << "a view shares the owner too";
  }
  EXPECT_TRUE(released);
  auto bytes = std::make_shared<std::vector<char>>(64);
  EXPECT_THROW(Tensor::Share(DataType::kFloat, {4}, bytes, bytes->data() + 1, 32, MemoryInfo::Host()), Error)
      << "misaligned floats";
  EXPECT_THROW(Tensor::Share(DataType::kFloat, {16}, bytes, bytes->data(), 32, MemoryInfo::Host()), Error)
      << "too small";
  EXPECT_THROW(Tensor::Share(DataType::kString, {1}, bytes, bytes->data(), 64, MemoryInfo::Host()), Error);
  EXPECT_THROW(Tensor::Share(DataType::kFloat, {1}, nullptr, bytes->data(), 64, MemoryInfo::Host()), Error);
}

TEST(TensorTest, TypedAccessIsChecked) {
  Tensor t = Tensor::FromVector<int64_t>({3}, {1, 2, 3});
  EXPECT_THROW(t.Data<float>(), Error);
  MemoryInfo device;
  device.device_type = DeviceType::kGpu;
  int64_t fake[3];
  Tensor d = Tensor::Wrap(DataType::kInt64, {3}, fake, sizeof(fake), device);
  EXPECT_THROW(d.Data<int64_t>(), Error);  // not host-readable
}

TEST(TensorTest, ReshapedSharesAndValidates) {
  Tensor t = Tensor::FromVector<float>({2, 3}, {1, 2, 3, 4, 5, 6});
  Tensor r = t.Reshaped({3, 2});
  EXPECT_EQ(r.raw_data(), t.raw_data());
  EXPECT_EQ(r.shape(), (Shape{3, 2}));
  EXPECT_THROW(t.Reshaped({4}), Error);
}

TEST(TensorTest, StringTensorsConstructAndClone) {
  Tensor s = Tensor::Allocate(DataType::kString, {2});
  s.Data<std::string>()[0] = "hello";
  s.Data<std::string>()[1] = std::string(100, 'x');
  Tensor c = s.CloneOnHost();
  EXPECT_NE(c.raw_data(), s.raw_data());
  EXPECT_EQ(c.Data<std::string>()[1], std::string(100, 'x'));
}

TEST(ValueTest, KindsAreChecked) {
  Value none;
  EXPECT_TRUE(none.is_none());
  EXPECT_THROW(none.tensor(), Error);
  Value seq(TensorSequence{Tensor::FromVector<float>({1}, {1})});
  EXPECT_TRUE(seq.is_sequence());
  EXPECT_THROW(seq.tensor(), Error);
  EXPECT_EQ(seq.sequence().size(), 1u);
}

}  // namespace
}  // namespace tessera
