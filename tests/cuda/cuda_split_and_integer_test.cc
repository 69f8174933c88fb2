// The CUDA Split kernel (attribute, input and num_outputs forms, any axis and element type, more outputs
// than one launch takes) and the integer elementwise kernels (Add, Sub, Mul, Div with broadcasting, Neg,
// Abs on int32 and int64) against the CPU EP. Each case also checks that the node really runs on the CUDA
// EP (a missing kernel would otherwise pass by falling back to the CPU).
#include <cstdint>
#include <limits>
#include <string>
#include <vector>

#include "cuda/cuda_test_util.h"

namespace tessera::test {
namespace {

using CudaSplitAndIntegerTest = CudaTest;


// An int32 or int64 tensor with `values`.
Tensor IntTensor(DataType type, const Shape& shape, const std::vector<int64_t>& values) {
  if (type == kI64) return Tensor::FromVector<int64_t>(shape, values);
  return Tensor::FromVector<int32_t>(shape, std::vector<int32_t>(values.begin(), values.end()));
}

// Names the outputs "Y0".."Y<count - 1>".
void SplitOutputs(OpTester& t, int count) {
  for (int i = 0; i < count; ++i) {
    std::string name = "Y";  // appended, not "Y" + ...: GCC 12's -Wrestrict misfires on that at -O3
    t.OutputName(name += std::to_string(i));
  }
}

TEST_F(CudaSplitAndIntegerTest, SplitWithLengthsAttribute) {
  OpTester lengths("Split", 11);
  lengths.Attr("axis", int64_t{1}).Attr("split", std::vector<int64_t>{2, 3, 1});
  lengths.Input("input", RandomTensor(kF32, {4, 6, 5}, 1));
  SplitOutputs(lengths, 3);
  CompareOnCuda(lengths);
  OpTester equal_parts("Split", 2);  // no lengths: equal parts, one per output
  equal_parts.Input("input", RandomTensor(kF32, {6, 4}, 2));
  SplitOutputs(equal_parts, 3);
  CompareOnCuda(equal_parts);
}

TEST_F(CudaSplitAndIntegerTest, SplitWithLengthsInputAndNegativeAxis) {
  // GPT-2's fused QKV projection: [1, 1, 2304] into three 768-wide parts along the last axis.
  for (DataType type : {kF32, kF16}) {
    OpTester qkv("Split", 13);
    qkv.Attr("axis", int64_t{-1});
    qkv.Input("input", RandomTensor(type, {1, 1, 2304}, 3)).Input("split", Int64s({768, 768, 768}), true);
    SplitOutputs(qkv, 3);
    CompareOnCuda(qkv);
  }
  OpTester with_empty_part("Split", 13);  // a zero-length part, a middle axis, several rows
  with_empty_part.Attr("axis", int64_t{-2});
  with_empty_part.Input("input", RandomTensor(kF16, {3, 5, 4}, 4)).Input("split", Int64s({1, 0, 4}), true);
  SplitOutputs(with_empty_part, 3);
  CompareOnCuda(with_empty_part);
  OpTester odd_rows("Split", 13);  // 3-byte rows: copied byte by byte
  odd_rows.Attr("axis", int64_t{1});
  odd_rows.Input("input", RandomTensor(DataType::kUInt8, {2, 7, 3}, 5, 0, 200)).Input("split", Int64s({2, 5}), true);
  SplitOutputs(odd_rows, 2);
  CompareOnCuda(odd_rows);
}

TEST_F(CudaSplitAndIntegerTest, SplitIntoNumOutputsWithSmallerLastPart) {
  OpTester ints("Split", 18);  // 7 = 3 + 3 + 1
  ints.Attr("axis", int64_t{0}).Attr("num_outputs", int64_t{3});
  ints.Input("input", RandomTensor(kI64, {7, 2}, 6, -1000, 1000));
  SplitOutputs(ints, 3);
  CompareOnCuda(ints);
  OpTester bools("Split", 18);  // 5 = 2 + 2 + 1 along the last axis
  bools.Attr("axis", int64_t{-1}).Attr("num_outputs", int64_t{3});
  bools.Input("input", RandomTensor(DataType::kBool, {3, 5}, 7));
  SplitOutputs(bools, 3);
  CompareOnCuda(bools);
}

TEST_F(CudaSplitAndIntegerTest, SplitIntoMoreOutputsThanOneLaunchTakes) {
  OpTester t("Split", 13);
  t.Attr("axis", int64_t{1});
  t.Input("input", RandomTensor(kI32, {3, 40, 2}, 8, -100, 100));
  SplitOutputs(t, 40);
  CompareOnCuda(t);
}

TEST_F(CudaSplitAndIntegerTest, SplitRejectsLengthsThatDoNotFitTheAxis) {
  OpTester wrong_sum("Split", 13);
  wrong_sum.Attr("axis", int64_t{1});
  wrong_sum.Input("input", RandomTensor(kF32, {2, 5}, 9)).Input("split", Int64s({2, 2}), true);
  SplitOutputs(wrong_sum, 2);
  ExpectAllOnCuda(wrong_sum.SerializedModel());
  wrong_sum.ExpectFailure("Split 'Split_node' (opset 13): split [2,2] sums to 4, but axis 1 of input [2,5] has 5");
  wrong_sum.Run({"cuda"});
  OpTester negative("Split", 13);
  negative.Input("input", RandomTensor(kF32, {4}, 10)).Input("split", Int64s({5, -1}), true);
  SplitOutputs(negative, 2);
  negative.ExpectFailure("Split 'Split_node' (opset 13): split [5,-1] gives output 1 the negative length -1");
  negative.Run({"cuda"});
}

TEST_F(CudaSplitAndIntegerTest, IntegerArithmeticWithBroadcasting) {
  struct Case {
    Shape a, b;
  };
  const std::vector<Case> shapes = {{{4, 6}, {4, 6}},     // same shape
                                    {{3, 4, 6}, {6}},     // trailing row
                                    {{1, 6}, {3, 4, 6}},  // row first
                                    {{3, 1, 5}, {4, 1}},  // general broadcast
                                    {{2, 3}, {}}};        // scalar
  for (const char* op : {"Add", "Sub", "Mul"}) {
    for (DataType type : {kI32, kI64}) {
      for (const Case& c : shapes) {
        OpTester t(op, 14);
        t.Input("A", RandomTensor(type, c.a, 11, -1000, 1000)).Input("B", RandomTensor(type, c.b, 12, -1000, 1000));
        t.OutputName("C");
        CompareOnCuda(t);
      }
    }
  }
  // Div: negative operands on both sides and no zero divisor (the CPU EP rejects one).
  for (DataType type : {kI32, kI64}) {
    OpTester general("Div", 14);
    general.Input("A", IntTensor(type, {3, 1, 4}, {7, -7, 7, -7, 0, 100, -100, 99, -1, 1, 13, -13}))
        .Input("B", IntTensor(type, {4, 1}, {2, -3, 5, -7}))
        .OutputName("C");
    CompareOnCuda(general);
    OpTester row("Div", 14);
    row.Input("A", RandomTensor(type, {5, 4}, 13, -1000, 1000))
        .Input("B", IntTensor(type, {4}, {2, -3, 5, -7}))
        .OutputName("C");
    CompareOnCuda(row);
  }
}

// Integer Div truncates toward zero like the CPU EP, wraps INT_MIN / -1 and gives 0 for a zero divisor
// (which the CPU EP rejects, so this case checks values, not agreement).
TEST_F(CudaSplitAndIntegerTest, IntegerDivisionTruncatesAndDefinesZeroDivisors) {
  constexpr int32_t kMin32 = std::numeric_limits<int32_t>::min();
  OpTester ints("Div", 14);
  ints.Input("A", Tensor::FromVector<int32_t>({6}, {7, -7, 7, -7, kMin32, 5}))
      .Input("B", Tensor::FromVector<int32_t>({6}, {2, 2, -2, -2, -1, 0}))
      .Output("C", Tensor::FromVector<int32_t>({6}, {3, -3, -3, 3, kMin32, 0}));
  ints.Run({"cuda"});
  constexpr int64_t kMin64 = std::numeric_limits<int64_t>::min();
  OpTester longs("Div", 14);
  longs.Input("A", Tensor::FromVector<int64_t>({5}, {kMin64, -9, 9, 0, -4}))
      .Input("B", Tensor::FromVector<int64_t>({1}, {-1}))
      .Output("C", Tensor::FromVector<int64_t>({5}, {kMin64, 9, -9, 0, 4}));
  longs.Run({"cuda"});
}

TEST_F(CudaSplitAndIntegerTest, IntegerNegAndAbs) {
  for (const char* op : {"Neg", "Abs"}) {
    for (DataType type : {kI32, kI64}) {
      OpTester t(op, 13);
      t.Input("X", RandomTensor(type, {3, 7}, 15, -500, 500)).OutputName("Y");
      CompareOnCuda(t);
    }
  }
}

}  // namespace
}  // namespace tessera::test
