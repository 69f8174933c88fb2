// Gather, GatherElements, GatherND, ScatterElements, ScatterND, NonZero: the ONNX spec's examples plus
// edge cases (negative and out-of-range indices, scalar indices, strings, a large parallel gather).
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "ops/op_tester.h"

namespace tessera::test {
namespace {

using Ints = std::vector<int64_t>;

Tensor F(Shape shape, const std::vector<float>& v) { return Tensor::FromVector<float>(std::move(shape), v); }
Tensor I64(Shape shape, const Ints& v) { return Tensor::FromVector<int64_t>(std::move(shape), v); }
Tensor I32(Shape shape, const std::vector<int32_t>& v) { return Tensor::FromVector<int32_t>(std::move(shape), v); }
Tensor Str(Shape shape, const std::vector<std::string>& v) {
  return Tensor::FromVector<std::string>(std::move(shape), v);
}
Tensor Iota(Shape shape) {
  std::vector<float> v(static_cast<size_t>(shape.NumElements()));
  for (size_t i = 0; i < v.size(); ++i) v[i] = static_cast<float>(i);
  return F(std::move(shape), v);
}

TEST(GatherOpsTest, GatherAxisZeroWithNegativeIndices) {
  OpTester("Gather", 13)
      .Input("x", F({3, 2}, {1.0f, 1.2f, 2.3f, 3.4f, 4.5f, 5.7f}))
      .Input("i", I64({2, 2}, {0, 1, -2, 2}))
      .Output("y", F({2, 2, 2}, {1.0f, 1.2f, 2.3f, 3.4f, 2.3f, 3.4f, 4.5f, 5.7f}))
      .Run();
}

TEST(GatherOpsTest, GatherInnerAxisInt32AndScalarIndex) {
  OpTester("Gather", 13)
      .Attr("axis", int64_t{1})
      .Input("x", Iota({2, 3}))
      .Input("i", I32({2}, {2, 0}))
      .Output("y", F({2, 2}, {2, 0, 5, 3}))
      .Run();
  OpTester("Gather", 13)
      .Attr("axis", int64_t{-1})
      .Input("x", Iota({2, 3}))
      .Input("i", I64({}, {-1}))
      .Output("y", F({2}, {2, 5}))
      .Run();
  OpTester("Gather", 13).Input("x", Iota({2, 3})).Input("i", I64({0}, {})).Output("y", F({0, 3}, {})).Run();
}

TEST(GatherOpsTest, GatherStringsAndOutOfRangeIndex) {
  OpTester("Gather", 13)
      .Input("x", Str({3}, {"a", "b", "c"}))
      .Input("i", I64({2}, {2, 2}))
      .Output("y", Str({2}, {"c", "c"}))
      .Run({"cpu"});
  OpTester("Gather", 13)
      .Input("x", Iota({3, 2}))
      .Input("i", I64({1}, {3}))
      .Output("y", Iota({1, 2}))
      .ExpectFailure("index 3 is out of range")
      .Run({"cpu"});
  OpTester("Gather", 13)
      .Input("x", Iota({3, 2}))
      .Input("i", I64({1}, {-4}))
      .Output("y", Iota({1, 2}))
      .ExpectFailure("Gather_node")
      .Run({"cpu"});
}

TEST(GatherOpsTest, GatherLargeMatchesReference) {
  const int64_t rows = 1000, cols = 64, picks = 700;
  const Tensor data = Iota({rows, cols});
  Ints indices(static_cast<size_t>(picks));
  std::vector<float> expected;
  for (int64_t p = 0; p < picks; ++p) {
    indices[static_cast<size_t>(p)] = (p * 37) % rows - (p % 3 == 0 ? rows : 0);
    const int64_t row = (p * 37) % rows;
    for (int64_t c = 0; c < cols; ++c) expected.push_back(static_cast<float>(row * cols + c));
  }
  OpTester("Gather", 13)
      .Input("x", data)
      .Input("i", I64({picks}, indices))
      .Output("y", F({picks, cols}, expected))
      .Run();
}

TEST(GatherOpsTest, GatherElements) {
  OpTester("GatherElements", 13)
      .Attr("axis", int64_t{1})
      .Input("x", F({2, 2}, {1, 2, 3, 4}))
      .Input("i", I64({2, 2}, {0, 0, 1, 0}))
      .Output("y", F({2, 2}, {1, 1, 4, 3}))
      .Run();
  OpTester("GatherElements", 13)
      .Input("x", F({3, 3}, {1, 2, 3, 4, 5, 6, 7, 8, 9}))
      .Input("i", I32({2, 3}, {1, 2, 0, 2, 0, -3}))
      .Output("y", F({2, 3}, {4, 8, 3, 7, 2, 3}))
      .Run();
  OpTester("GatherElements", 13)
      .Input("x", F({2, 2}, {1, 2, 3, 4}))
      .Input("i", I64({1, 2}, {0, 2}))
      .Output("y", F({1, 2}, {1, 2}))
      .ExpectFailure("out of range")
      .Run({"cpu"});
}

TEST(GatherOpsTest, GatherND) {
  OpTester("GatherND", 13)
      .Input("x", I32({2, 2}, {0, 1, 2, 3}))
      .Input("i", I64({2, 2}, {0, 0, 1, 1}))
      .Output("y", I32({2}, {0, 3}))
      .Run();
  OpTester("GatherND", 13)
      .Input("x", I32({2, 2}, {0, 1, 2, 3}))
      .Input("i", I64({2, 1}, {1, 0}))
      .Output("y", I32({2, 2}, {2, 3, 0, 1}))
      .Run();
  OpTester("GatherND", 13)
      .Input("x", I32({2, 2, 2}, {0, 1, 2, 3, 4, 5, 6, 7}))
      .Input("i", I64({2, 1, 2}, {0, 1, 1, 0}))
      .Output("y", I32({2, 1, 2}, {2, 3, 4, 5}))
      .Run();
  OpTester("GatherND", 13)
      .Attr("batch_dims", int64_t{1})
      .Input("x", I32({2, 2, 2}, {0, 1, 2, 3, 4, 5, 6, 7}))
      .Input("i", I64({2, 1}, {1, 0}))
      .Output("y", I32({2, 2}, {2, 3, 4, 5}))
      .Run();
  OpTester("GatherND", 13)
      .Input("x", I32({2, 2}, {0, 1, 2, 3}))
      .Input("i", I64({1, 2}, {-1, -2}))
      .Output("y", I32({1}, {2}))
      .Run();
  OpTester("GatherND", 13)
      .Input("x", I32({2, 2}, {0, 1, 2, 3}))
      .Input("i", I64({1, 2}, {0, 2}))
      .Output("y", I32({1}, {0}))
      .ExpectFailure("out of range")
      .Run({"cpu"});
}

TEST(GatherOpsTest, ScatterElementsSpecExamplesAndReductions) {
  OpTester("ScatterElements", 13)
      .Input("x", F({3, 3}, {0, 0, 0, 0, 0, 0, 0, 0, 0}))
      .Input("i", I64({2, 3}, {1, 0, 2, 0, 2, 1}))
      .Input("u", F({2, 3}, {1.0f, 1.1f, 1.2f, 2.0f, 2.1f, 2.2f}))
      .Output("y", F({3, 3}, {2.0f, 1.1f, 0.0f, 1.0f, 0.0f, 2.2f, 0.0f, 2.1f, 1.2f}))
      .Run();
  OpTester("ScatterElements", 13)
      .Attr("axis", int64_t{1})
      .Input("x", F({1, 5}, {1, 2, 3, 4, 5}))
      .Input("i", I64({1, 2}, {1, -2}))
      .Input("u", F({1, 2}, {1.1f, 2.1f}))
      .Output("y", F({1, 5}, {1.0f, 1.1f, 3.0f, 2.1f, 5.0f}))
      .Run();
  OpTester("ScatterElements", 16)
      .Attr("axis", int64_t{1})
      .Attr("reduction", std::string("add"))
      .Input("x", F({1, 5}, {1, 2, 3, 4, 5}))
      .Input("i", I64({1, 2}, {1, 1}))
      .Input("u", F({1, 2}, {1.1f, 2.1f}))
      .Output("y", F({1, 5}, {1.0f, 5.2f, 3.0f, 4.0f, 5.0f}))
      .Run();
  OpTester("ScatterElements", 18)
      .Attr("reduction", std::string("max"))
      .Input("x", I32({3}, {1, 5, 3}))
      .Input("i", I64({3}, {0, 1, 0}))
      .Input("u", I32({3}, {4, 2, 9}))
      .Output("y", I32({3}, {9, 5, 3}))
      .Run();
  OpTester("ScatterElements", 13)
      .Input("x", F({2}, {0, 0}))
      .Input("i", I64({1}, {2}))
      .Input("u", F({1}, {1}))
      .Output("y", F({2}, {0, 0}))
      .ExpectFailure("out of range")
      .Run({"cpu"});
}

TEST(GatherOpsTest, ScatterND) {
  OpTester("ScatterND", 13)
      .Input("x", F({8}, {1, 2, 3, 4, 5, 6, 7, 8}))
      .Input("i", I64({4, 1}, {4, 3, 1, 7}))
      .Input("u", F({4}, {9, 10, 11, 12}))
      .Output("y", F({8}, {1, 11, 3, 10, 9, 6, 7, 12}))
      .Run();
  // Slices: rows 0 and 2 of a [4, 2] tensor replaced.
  OpTester("ScatterND", 13)
      .Input("x", Iota({4, 2}))
      .Input("i", I64({2, 1}, {0, -2}))
      .Input("u", F({2, 2}, {10, 11, 12, 13}))
      .Output("y", F({4, 2}, {10, 11, 2, 3, 12, 13, 6, 7}))
      .Run();
  OpTester("ScatterND", 16)
      .Attr("reduction", std::string("mul"))
      .Input("x", F({3}, {1, 2, 3}))
      .Input("i", I64({2, 1}, {1, 1}))
      .Input("u", F({2}, {3, 4}))
      .Output("y", F({3}, {1, 24, 3}))
      .Run();
  OpTester("ScatterND", 13)
      .Input("x", F({3}, {1, 2, 3}))
      .Input("i", I64({1, 1}, {0}))
      .Input("u", F({2}, {3, 4}))
      .Output("y", F({3}, {1, 2, 3}))
      .ExpectFailure("should have shape")
      .Run({"cpu"});
}

TEST(GatherOpsTest, NonZero) {
  OpTester("NonZero", 13).Input("x", F({2, 2}, {1, 0, 1, 1})).Output("y", I64({2, 3}, {0, 1, 1, 0, 0, 1})).Run();
  OpTester("NonZero", 13)
      .Input("x", I32({5}, {0, 3, 0, -1, 0}))
      .Output("y", I64({1, 2}, {1, 3}))
      .Run();
  OpTester("NonZero", 13).Input("x", F({2}, {0, -0.0f})).Output("y", I64({1, 0}, {})).Run();
  OpTester("NonZero", 13).Input("x", F({}, {3})).Output("y", I64({1, 1}, {0})).Run();
}

}  // namespace
}  // namespace tessera::test
