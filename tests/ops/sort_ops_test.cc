// TopK (opset 1 attribute k, opset 11 largest/smallest with ties) and Unique (flattened, along an axis,
// sorted and in first-occurrence order), checked against a naive selection.
#include <gtest/gtest.h>

#include <algorithm>
#include <numeric>

#include "ops/op_tester.h"

namespace tessera::test {
namespace {

using Ints = std::vector<int64_t>;
Tensor F(Shape s, const std::vector<float>& v) { return Tensor::FromVector<float>(std::move(s), v); }
Tensor I64(Shape s, const Ints& v) { return Tensor::FromVector<int64_t>(std::move(s), v); }

// Top k of each row of a [rows, n] matrix, ties by lower index.
void NaiveTopK(const Tensor& x, int64_t k, bool largest, Tensor& values, Tensor& indices) {
  const int64_t rows = x.shape()[0], n = x.shape()[1];
  std::vector<float> v;
  Ints idx;
  for (int64_t r = 0; r < rows; ++r) {
    Ints order(static_cast<size_t>(n));
    std::iota(order.begin(), order.end(), 0);
    const float* row = x.Data<float>() + r * n;
    std::stable_sort(order.begin(), order.end(), [&](int64_t a, int64_t b) {
      return largest ? row[a] > row[b] : row[a] < row[b];
    });
    for (int64_t i = 0; i < k; ++i) {
      v.push_back(row[order[static_cast<size_t>(i)]]);
      idx.push_back(order[static_cast<size_t>(i)]);
    }
  }
  values = F({rows, k}, v);
  indices = I64({rows, k}, idx);
}

TEST(SortOpsTest, TopKLargestAndSmallestMatchNaive) {
  Tensor x = RandomTensor(DataType::kFloat, {7, 33}, 3, -4, 4);
  for (bool largest : {true, false}) {
    Tensor values, indices;
    NaiveTopK(x, 5, largest, values, indices);
    OpTester("TopK", 11)
        .Attr("largest", int64_t{largest})
        .Input("x", x)
        .Input("k", I64({1}, {5}))
        .Output("values", values)
        .Output("indices", indices)
        .Run();
  }
}

TEST(SortOpsTest, TopKTiesKeepLowerIndexFirst) {
  OpTester("TopK", 11)
      .Input("x", F({1, 6}, {1, 3, 3, 2, 3, 1}))
      .Input("k", I64({1}, {4}))
      .Output("values", F({1, 4}, {3, 3, 3, 2}))
      .Output("indices", I64({1, 4}, {1, 2, 4, 3}))
      .Run();
}

TEST(SortOpsTest, TopKOpset1AttributeAlongAxisZero) {
  OpTester("TopK", 1)
      .Attr("k", int64_t{1})
      .Attr("axis", int64_t{0})
      .Input("x", F({3, 2}, {1, 6, 5, 2, 3, 4}))
      .Output("values", F({1, 2}, {5, 6}))
      .Output("indices", I64({1, 2}, {1, 0}))
      .Run();
}

TEST(SortOpsTest, UniqueUnsortedKeepsFirstOccurrenceOrder) {
  OpTester("Unique", 11)
      .Attr("sorted", int64_t{0})
      .Input("x", F({6}, {2, 1, 1, 3, 4, 3}))
      .Output("y", F({4}, {2, 1, 3, 4}))
      .Output("indices", I64({4}, {0, 1, 3, 4}))
      .Output("inverse_indices", I64({6}, {0, 1, 1, 2, 3, 2}))
      .Output("counts", I64({4}, {1, 2, 2, 1}))
      .Run();
}

TEST(SortOpsTest, UniqueSortedAlongAxisComparesWholeSlices) {
  OpTester("Unique", 11)
      .Attr("axis", int64_t{1})
      .Input("x", F({2, 4}, {1, 0, 1, 0, 2, 5, 2, 3}))
      .Output("y", F({2, 3}, {0, 0, 1, 3, 5, 2}))
      .Output("indices", I64({3}, {3, 1, 0}))
      .Output("inverse_indices", I64({4}, {2, 1, 2, 0}))
      .Output("counts", I64({3}, {1, 1, 2}))
      .Run();
}

}  // namespace
}  // namespace tessera::test
