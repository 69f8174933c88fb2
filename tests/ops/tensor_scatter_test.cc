// TensorScatter (opset 24) against a direct evaluation of its definition: linear and circular writes per batch item,
// the default axis (-2) and another one, write_indices absent, any element type; malformed operands fail by name.
#include <gtest/gtest.h>

#include "ops/op_tester.h"

namespace tessera::test {
namespace {

// present = past with update written at write_indices[b] + s along `axis` (wrapping when circular).
template <typename T>
Tensor Expected(const Tensor& past, const Tensor& update, const std::vector<int64_t>& starts, int64_t axis, bool circular) {
  Tensor out = Tensor::FromVector<T>(past.shape(), past.ToVector<T>());
  const Shape& s = past.shape();
  const int64_t rank = static_cast<int64_t>(s.rank());
  std::vector<int64_t> index(static_cast<size_t>(rank), 0);
  for (int64_t i = 0; i < update.NumElements(); ++i) {
    int64_t rest = i;
    for (int64_t d = rank; d-- > 0;) {
      index[static_cast<size_t>(d)] = rest % update.shape()[d];
      rest /= update.shape()[d];
    }
    int64_t p = starts[static_cast<size_t>(index[0])] + index[static_cast<size_t>(axis)];
    if (circular) p = ((p % s[axis]) + s[axis]) % s[axis];
    index[static_cast<size_t>(axis)] = p;
    int64_t offset = 0;
    for (int64_t d = 0; d < rank; ++d) offset = offset * s[d] + index[static_cast<size_t>(d)];
    out.Data<T>()[offset] = update.Data<T>()[i];
  }
  return out;
}

TEST(TensorScatterTest, LinearWritesAtEachBatchItemsIndex) {
  const Tensor past = RandomTensor(DataType::kFloat, {2, 3, 8, 4}, 1);
  const Tensor update = RandomTensor(DataType::kFloat, {2, 3, 2, 4}, 2);
  const std::vector<int64_t> starts = {5, 0};
  OpTester t("TensorScatter", 24);
  t.Input("past_cache", past).Input("update", update).Input("write_indices", Tensor::FromVector<int64_t>({2}, starts));
  t.Output("present_cache", Expected<float>(past, update, starts, 2, false));
  t.Run({"cpu"});
}

TEST(TensorScatterTest, CircularWrapsAndAnotherAxis) {
  const Tensor past = RandomTensor(DataType::kFloat, {2, 5, 3}, 3);
  const Tensor update = RandomTensor(DataType::kFloat, {2, 3, 3}, 4);
  const std::vector<int64_t> starts = {4, 1};
  OpTester t("TensorScatter", 24);
  t.Attr("axis", int64_t{1}).Attr("mode", std::string("circular"));
  t.Input("past_cache", past).Input("update", update).Input("write_indices", Tensor::FromVector<int64_t>({2}, starts));
  t.Output("present_cache", Expected<float>(past, update, starts, 1, true));
  t.Run({"cpu"});
}

TEST(TensorScatterTest, WithoutWriteIndicesAndOtherTypes) {
  const Tensor past = Tensor::FromVector<int32_t>({1, 4, 2}, {1, 2, 3, 4, 5, 6, 7, 8});
  const Tensor update = Tensor::FromVector<int32_t>({1, 2, 2}, {-1, -2, -3, -4});
  OpTester t("TensorScatter", 24);
  t.Input("past_cache", past).Input("update", update);
  t.Output("present_cache", Tensor::FromVector<int32_t>({1, 4, 2}, {-1, -2, -3, -4, 5, 6, 7, 8}));
  t.Run({"cpu"});
}

TEST(TensorScatterTest, MalformedOperandsFailByName) {
  const Tensor past = RandomTensor(DataType::kFloat, {2, 4, 3}, 5);
  {
    OpTester t("TensorScatter", 24);  // linear: 3 positions from 2 do not fit 4
    t.Input("past_cache", past).Input("update", RandomTensor(DataType::kFloat, {2, 3, 3}, 6));
    t.Input("write_indices", Tensor::FromVector<int64_t>({2}, {0, 2})).OutputName("present_cache");
    t.ExpectFailure("linear mode: they must fit").Run({"cpu"});
  }
  {
    OpTester t("TensorScatter", 24);
    t.Input("past_cache", past).Input("update", RandomTensor(DataType::kFloat, {2, 2, 4}, 7)).OutputName("present_cache");
    t.ExpectFailure("must have the shape of").Run({"cpu"});
  }
  {
    OpTester t("TensorScatter", 24);
    t.Attr("mode", std::string("ring"));
    t.Input("past_cache", past).Input("update", RandomTensor(DataType::kFloat, {2, 1, 3}, 8)).OutputName("present_cache");
    t.ExpectFailure("mode 'ring'").Run({"cpu"});
  }
}

}  // namespace
}  // namespace tessera::test
