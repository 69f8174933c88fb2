// Transpose, Concat, Split, Slice, Tile, Pad, DepthToSpace, SpaceToDepth, Trilu, OneHot (and their opset-1
// forms): expected values by hand, or from a plain index-by-index reference for the larger layouts.
#include <gtest/gtest.h>

#include <climits>
#include <string>
#include <vector>

#include "ops/op_tester.h"

namespace tessera::test {
namespace {

using Ints = std::vector<int64_t>;

Tensor F(Shape shape, const std::vector<float>& v) { return Tensor::FromVector<float>(std::move(shape), v); }
Tensor I64(Shape shape, const Ints& v) { return Tensor::FromVector<int64_t>(std::move(shape), v); }
Tensor Str(Shape shape, const std::vector<std::string>& v) {
  return Tensor::FromVector<std::string>(std::move(shape), v);
}
Tensor Vec(const Ints& v) { return I64(Shape{static_cast<int64_t>(v.size())}, v); }
Tensor Iota(Shape shape) {
  std::vector<float> v(static_cast<size_t>(shape.NumElements()));
  for (size_t i = 0; i < v.size(); ++i) v[i] = static_cast<float>(i);
  return F(std::move(shape), v);
}

// Reference transpose: output element at multi-index o reads input at index i with i[perm[k]] = o[k].
Tensor ReferenceTranspose(const Tensor& input, const Ints& perm) {
  const std::vector<int64_t>& dims = input.shape().dims();
  const size_t rank = dims.size();
  Ints out_dims(rank), in_strides(rank, 1);
  for (size_t k = rank; k-- > 1;) in_strides[k - 1] = in_strides[k] * dims[k];
  for (size_t k = 0; k < rank; ++k) out_dims[k] = dims[perm[k]];
  std::vector<float> out(static_cast<size_t>(input.NumElements()));
  const float* in = input.Data<float>();
  for (int64_t linear = 0; linear < input.NumElements(); ++linear) {
    int64_t rest = linear, offset = 0;
    for (size_t k = rank; k-- > 0;) {
      offset += (rest % out_dims[k]) * in_strides[perm[k]];
      rest /= out_dims[k];
    }
    out[static_cast<size_t>(linear)] = in[offset];
  }
  return F(Shape(out_dims), out);
}

TEST(TensorOpsTest, TransposeSmallAndDefaultPerm) {
  OpTester("Transpose", 13).Input("x", Iota({2, 3})).Output("y", F({3, 2}, {0, 3, 1, 4, 2, 5})).Run();
  OpTester("Transpose", 13)
      .Attr("perm", Ints{1, 2, 0})
      .Input("x", Iota({2, 3, 4}))
      .Output("y", ReferenceTranspose(Iota({2, 3, 4}), {1, 2, 0}))
      .Run();
  OpTester("Transpose", 13).Attr("perm", Ints{1, 0}).Input("x", F({0, 3}, {})).Output("y", F({3, 0}, {})).Run();
  OpTester("Transpose", 13).Input("x", F({}, {4})).Output("y", F({}, {4})).Run();
}

TEST(TensorOpsTest, TransposeLargeLayouts) {
  // 2-D blocked path with sizes that are not multiples of the tile.
  OpTester("Transpose", 13).Input("x", Iota({67, 131})).Output("y", ReferenceTranspose(Iota({67, 131}), {1, 0})).Run();
  // NCHW -> NHWC and back: collapsed to a batched 2-D transpose.
  const Tensor nchw = Iota({2, 5, 9, 11});
  OpTester("Transpose", 13)
      .Attr("perm", Ints{0, 2, 3, 1})
      .Input("x", nchw)
      .Output("y", ReferenceTranspose(nchw, {0, 2, 3, 1}))
      .Run();
  OpTester("Transpose", 13)
      .Attr("perm", Ints{0, 3, 1, 2})
      .Input("x", nchw)
      .Output("y", ReferenceTranspose(nchw, {0, 3, 1, 2}))
      .Run();
  // General N-d permutation with a unit dim, and a large identity permutation (one parallel copy).
  const Tensor five = Iota({3, 1, 4, 5, 6});
  OpTester("Transpose", 13)
      .Attr("perm", Ints{4, 2, 0, 1, 3})
      .Input("x", five)
      .Output("y", ReferenceTranspose(five, {4, 2, 0, 1, 3}))
      .Run();
  OpTester("Transpose", 13).Attr("perm", Ints{0, 1}).Input("x", Iota({300, 400})).Output("y", Iota({300, 400})).Run();
}

// Data movement dispatches on element size: check each size with a non-float type.
template <typename T>
void CheckTransposeOf(const std::vector<T>& values) {
  const std::vector<T> transposed = {values[0], values[3], values[1], values[4], values[2], values[5]};
  OpTester("Transpose", 13)
      .Input("x", Tensor::FromVector<T>(Shape{2, 3}, values))
      .Output("y", Tensor::FromVector<T>(Shape{3, 2}, transposed))
      .Run();
}

TEST(TensorOpsTest, TransposeEveryElementSize) {
  CheckTransposeOf<int8_t>({1, -2, 3, -4, 5, -6});
  CheckTransposeOf<bool>({true, false, false, true, true, false});
  CheckTransposeOf<uint16_t>({1, 2, 3, 4, 5, 65535});
  CheckTransposeOf<int32_t>({1, 2, 3, 4, 5, -7});
  CheckTransposeOf<double>({0.5, 1.5, 2.5, 3.5, 4.5, 5.5});
  CheckTransposeOf<int64_t>({1, 2, 3, 4, 5, INT64_MIN});
}

TEST(TensorOpsTest, TransposeStringsAndBadPerm) {
  OpTester("Transpose", 13)
      .Input("x", Str({2, 2}, {"a", "b", "c", "d"}))
      .Output("y", Str({2, 2}, {"a", "c", "b", "d"}))
      .Run({"cpu"});
  OpTester("Transpose", 13)
      .Attr("perm", Ints{0, 0})
      .Input("x", Iota({2, 2}))
      .Output("y", Iota({2, 2}))
      .ExpectFailure("not a permutation")
      .Run({"cpu"});
}

TEST(TensorOpsTest, ConcatAxesAndZeroSizeInputs) {
  OpTester("Concat", 13)
      .Attr("axis", int64_t{1})
      .Input("a", F({2, 2}, {1, 2, 3, 4}))
      .Input("b", F({2, 3}, {5, 6, 7, 8, 9, 10}))
      .Output("y", F({2, 5}, {1, 2, 5, 6, 7, 3, 4, 8, 9, 10}))
      .Run();
  OpTester("Concat", 13)
      .Attr("axis", int64_t{-2})
      .Input("a", F({1, 2}, {1, 2}))
      .Input("b", F({0, 2}, {}))
      .Input("c", F({2, 2}, {3, 4, 5, 6}))
      .Output("y", F({3, 2}, {1, 2, 3, 4, 5, 6}))
      .Run();
  OpTester("Concat", 13)
      .Attr("axis", int64_t{0})
      .Input("a", Str({1}, {"x"}))
      .Input("b", Str({2}, {"y", "z"}))
      .Output("y", Str({3}, {"x", "y", "z"}))
      .Run({"cpu"});
  OpTester("Concat", 13)
      .Attr("axis", int64_t{2})
      .Input("a", F({1, 2}, {1, 2}))
      .Output("y", F({1, 2}, {1, 2}))
      .ExpectFailure("out of range")
      .Run({"cpu"});
}

// One element from each input per output row (a rotary embedding's rotate-every-two): the interleaving path, for
// two inputs and for three, on rows enough to be split over threads, and for strings.
TEST(TensorOpsTest, ConcatInterleavesOneElementPieces) {
  for (const int64_t k : {2, 3}) {
    const int64_t rows = 40000;
    std::vector<std::vector<float>> parts(static_cast<size_t>(k));
    std::vector<float> expected(static_cast<size_t>(rows * k));
    for (int64_t i = 0; i < k; ++i)
      for (int64_t o = 0; o < rows; ++o) {
        const float v = static_cast<float>(o * 10 + i);
        parts[static_cast<size_t>(i)].push_back(v);
        expected[static_cast<size_t>(o * k + i)] = v;
      }
    OpTester tester("Concat", 13);
    tester.Attr("axis", int64_t{-1});
    const char* names[] = {"x0", "x1", "x2"};
    for (int64_t i = 0; i < k; ++i) tester.Input(names[i], F({2, rows / 2, 1}, parts[static_cast<size_t>(i)]));
    tester.Output("y", F({2, rows / 2, k}, expected)).Run();
  }
  // As many elements per row as inputs, but not one from each: no interleave (a shape computation's Concat).
  OpTester("Concat", 13)
      .Attr("axis", int64_t{0})
      .Input("a", I64({2}, {5, 6}))
      .Input("b", I64({0}, {}))
      .Output("y", I64({2}, {5, 6}))
      .Run();
  OpTester("Concat", 13)
      .Attr("axis", int64_t{1})
      .Input("a", Str({3, 1}, {"a", "b", "c"}))
      .Input("b", Str({3, 1}, {"x", "y", "z"}))
      .Output("y", Str({3, 2}, {"a", "x", "b", "y", "c", "z"}))
      .Run({"cpu"});
}

TEST(TensorOpsTest, SplitEqualGivenAndNumOutputs) {
  OpTester("Split", 13)
      .Attr("axis", int64_t{1})
      .Input("x", Iota({2, 4}))
      .Output("a", F({2, 2}, {0, 1, 4, 5}))
      .Output("b", F({2, 2}, {2, 3, 6, 7}))
      .Run();
  OpTester("Split", 13)
      .Attr("axis", int64_t{-1})
      .Input("x", Iota({2, 4}))
      .Input("s", Vec({1, 3}))
      .Output("a", F({2, 1}, {0, 4}))
      .Output("b", F({2, 3}, {1, 2, 3, 5, 6, 7}))
      .Run();
  OpTester("Split", 11)
      .Attr("split", Ints{2, 1})
      .Input("x", Iota({3}))
      .Output("a", F({2}, {0, 1}))
      .Output("b", F({1}, {2}))
      .Run();
  OpTester("Split", 18)
      .Attr("num_outputs", int64_t{2})
      .Input("x", Iota({5}))
      .Output("a", F({3}, {0, 1, 2}))
      .Output("b", F({2}, {3, 4}))
      .Run();
  OpTester("Split", 13)
      .Input("x", Iota({3}))
      .Output("a", Iota({1}))
      .Output("b", Iota({1}))
      .ExpectFailure("equal parts")
      .Run({"cpu"});
}

TEST(TensorOpsTest, SliceAttributesOpset9) {
  OpTester("Slice", 9)
      .Attr("axes", Ints{0, 1})
      .Attr("starts", Ints{1, 0})
      .Attr("ends", Ints{2, 3})
      .Input("x", F({2, 4}, {1, 2, 3, 4, 5, 6, 7, 8}))
      .Output("y", F({1, 3}, {5, 6, 7}))
      .Run();
  OpTester("Slice", 9)
      .Attr("starts", Ints{0, 1})
      .Attr("ends", Ints{-1, 1000})
      .Input("x", F({2, 4}, {1, 2, 3, 4, 5, 6, 7, 8}))
      .Output("y", F({1, 3}, {2, 3, 4}))
      .Run();
}

TEST(TensorOpsTest, SliceInputsStepsAndClamping) {
  const Tensor x = F({2, 4}, {1, 2, 3, 4, 5, 6, 7, 8});
  // Negative steps reverse; an end of INT64_MIN clamps to "before the first element".
  OpTester("Slice", 13)
      .Input("x", x)
      .Input("s", Vec({-1, -1}))
      .Input("e", Vec({INT64_MIN, INT64_MIN}))
      .Input("a", Vec({0, 1}))
      .Input("p", Vec({-1, -2}))
      .Output("y", F({2, 2}, {8, 6, 4, 2}))
      .Run();
  OpTester("Slice", 13)
      .Input("x", x)
      .Input("s", Vec({0, 1}))
      .Input("e", Vec({INT64_MAX, INT64_MAX}))
      .Input("a", Vec({-2, -1}))
      .Input("p", Vec({1, 2}))
      .Output("y", F({2, 2}, {2, 4, 6, 8}))
      .Run();
  // Start past the end with a negative step clamps to the last element.
  OpTester("Slice", 13)
      .Input("x", Iota({5}))
      .Input("s", Vec({100}))
      .Input("e", Vec({1}))
      .OmittedInput()
      .Input("p", Vec({-2}))
      .Output("y", F({2}, {4, 2}))
      .Run();
  OpTester("Slice", 13).Input("x", Iota({5})).Input("s", Vec({3})).Input("e", Vec({1})).Output("y", F({0}, {})).Run();
  OpTester("Slice", 13)
      .Input("x", Str({3}, {"a", "b", "c"}))
      .Input("s", Vec({1}))
      .Input("e", Vec({3}))
      .Output("y", Str({2}, {"b", "c"}))
      .Run({"cpu"});
  OpTester("Slice", 13)
      .Input("x", Iota({5}))
      .Input("s", Vec({0}))
      .Input("e", Vec({3}))
      .Input("a", Vec({0}))
      .Input("p", Vec({0}))
      .Output("y", Iota({3}))
      .ExpectFailure("step")
      .Run({"cpu"});
}

TEST(TensorOpsTest, Tile) {
  OpTester("Tile", 13)
      .Input("x", F({2, 2}, {1, 2, 3, 4}))
      .Input("r", Vec({2, 3}))
      .Output("y", F({4, 6}, {1, 2, 1, 2, 1, 2, 3, 4, 3, 4, 3, 4, 1, 2, 1, 2, 1, 2, 3, 4, 3, 4, 3, 4}))
      .Run();
  OpTester("Tile", 13).Input("x", F({2}, {1, 2})).Input("r", Vec({0})).Output("y", F({0}, {})).Run();
  OpTester("Tile", 13)
      .Input("x", F({2}, {1, 2}))
      .Input("r", Vec({1, 1}))
      .Output("y", F({2}, {1, 2}))
      .ExpectFailure("repeats")
      .Run({"cpu"});
}

// Opset-1 forms: Tile(input, tiles, axis), Pad's `paddings` attribute, Split's split as an input.
TEST(TensorOpsTest, LegacyOpset1Forms) {
  OpTester("Tile", 1)
      .Input("x", F({2, 2}, {1, 2, 3, 4}))
      .Input("tiles", I64({}, {3}))
      .Input("axis", I64({}, {1}))
      .Output("y", F({2, 6}, {1, 2, 1, 2, 1, 2, 3, 4, 3, 4, 3, 4}))
      .Run();
  OpTester("Pad", 1)
      .Attr("paddings", Ints{0, 1, 0, 0})
      .Attr("value", 7.0f)
      .Input("x", F({2, 2}, {1, 2, 3, 4}))
      .Output("y", F({2, 3}, {7, 1, 2, 7, 3, 4}))
      .Run();
  OpTester("Split", 1)
      .Input("x", Iota({5}))
      .Input("split", Vec({2, 3}))
      .Output("a", F({2}, {0, 1}))
      .Output("b", F({3}, {2, 3, 4}))
      .Run();
}

TEST(TensorOpsTest, PadModes) {
  const Tensor x = F({3, 2}, {1.0f, 1.2f, 2.3f, 3.4f, 4.5f, 5.7f});
  OpTester("Pad", 13)
      .Input("x", x)
      .Input("p", Vec({0, 2, 0, 0}))
      .Input("v", F({}, {0.5f}))
      .Output("y", F({3, 4}, {0.5f, 0.5f, 1.0f, 1.2f, 0.5f, 0.5f, 2.3f, 3.4f, 0.5f, 0.5f, 4.5f, 5.7f}))
      .Run();
  OpTester("Pad", 13)
      .Attr("mode", std::string("reflect"))
      .Input("x", x)
      .Input("p", Vec({0, 2, 0, 0}))
      .Output("y", F({3, 4}, {1.0f, 1.2f, 1.0f, 1.2f, 2.3f, 3.4f, 2.3f, 3.4f, 4.5f, 5.7f, 4.5f, 5.7f}))
      .Run();
  OpTester("Pad", 13)
      .Attr("mode", std::string("edge"))
      .Input("x", x)
      .Input("p", Vec({0, 2, 0, 0}))
      .Output("y", F({3, 4}, {1.0f, 1.0f, 1.0f, 1.2f, 2.3f, 2.3f, 2.3f, 3.4f, 4.5f, 4.5f, 4.5f, 5.7f}))
      .Run();
  // Reflect along both dims, further than one period on rows.
  OpTester("Pad", 13)
      .Attr("mode", std::string("reflect"))
      .Input("x", Iota({3}))
      .Input("p", Vec({3, 2}))
      .Output("y", F({8}, {1, 2, 1, 0, 1, 2, 1, 0}))
      .Run();
}

TEST(TensorOpsTest, PadNegativeAttributesAxesAndWrap) {
  // Negative pads crop; pads in both dims with a constant of zero.
  OpTester("Pad", 13)
      .Input("x", Iota({2, 3}))
      .Input("p", Vec({1, -1, 0, 0}))
      .Output("y", F({3, 2}, {0, 0, 1, 2, 4, 5}))
      .Run();
  OpTester("Pad", 10)
      .Attr("pads", Ints{0, 1, 0, 1})
      .Attr("value", 9.0f)
      .Input("x", Iota({1, 2}))
      .Output("y", F({1, 4}, {9, 0, 1, 9}))
      .Run();
  OpTester("Pad", 18)
      .Input("x", Iota({2, 2}))
      .Input("p", Vec({1, 0}))
      .OmittedInput()
      .Input("a", Vec({-1}))
      .Output("y", F({2, 3}, {0, 0, 1, 0, 2, 3}))
      .Run();
  OpTester("Pad", 19)
      .Attr("mode", std::string("wrap"))
      .Input("x", Iota({3}))
      .Input("p", Vec({2, 1}))
      .Output("y", F({6}, {1, 2, 0, 1, 2, 0}))
      .Run();
}

// Reference DepthToSpace from the ONNX definition (reshape, transpose, reshape), index by index.
Tensor ReferenceDepthToSpace(const Tensor& x, int64_t b, bool crd) {
  const int64_t n = x.shape()[0], c = x.shape()[1], h = x.shape()[2], w = x.shape()[3], oc = c / (b * b);
  std::vector<float> out(static_cast<size_t>(x.NumElements()));
  const float* in = x.Data<float>();
  size_t i = 0;
  for (int64_t ni = 0; ni < n; ++ni)
    for (int64_t ci = 0; ci < oc; ++ci)
      for (int64_t y = 0; y < h * b; ++y)
        for (int64_t xx = 0; xx < w * b; ++xx) {
          const int64_t by = y % b, bx = xx % b;
          const int64_t channel = crd ? ci * b * b + by * b + bx : (by * b + bx) * oc + ci;
          out[i++] = in[((ni * c + channel) * h + y / b) * w + xx / b];
        }
  return F(Shape{n, oc, h * b, w * b}, out);
}

TEST(TensorOpsTest, DepthToSpaceAndBack) {
  const Tensor x = Iota({2, 8, 3, 2});
  const Tensor dcr = ReferenceDepthToSpace(x, 2, false);
  OpTester("DepthToSpace", 13).Attr("blocksize", int64_t{2}).Input("x", x).Output("y", dcr).Run();
  OpTester("DepthToSpace", 13)
      .Attr("blocksize", int64_t{2})
      .Attr("mode", std::string("CRD"))
      .Input("x", x)
      .Output("y", ReferenceDepthToSpace(x, 2, true))
      .Run();
  // SpaceToDepth inverts DCR DepthToSpace.
  OpTester("SpaceToDepth", 13).Attr("blocksize", int64_t{2}).Input("x", dcr).Output("y", x).Run();
  // SpaceToDepth-28's mode: CRD inverts CRD DepthToSpace; DCR is the default.
  OpTester("SpaceToDepth", 28)
      .Attr("blocksize", int64_t{2})
      .Attr("mode", std::string("CRD"))
      .Input("x", ReferenceDepthToSpace(x, 2, true))
      .Output("y", x)
      .Run();
  OpTester("SpaceToDepth", 28).Attr("blocksize", int64_t{2}).Input("x", dcr).Output("y", x).Run();
  OpTester("SpaceToDepth", 28)
      .Attr("blocksize", int64_t{2})
      .Attr("mode", std::string("RCD"))
      .Input("x", dcr)
      .Output("y", x)
      .ExpectFailure("mode must be 'DCR' or 'CRD'")
      .Run({"cpu"});
  OpTester("SpaceToDepth", 13)
      .Attr("blocksize", int64_t{2})
      .Input("x", Iota({1, 1, 3, 2}))
      .Output("y", Iota({1, 4, 1, 1}))
      .ExpectFailure("divisible")
      .Run({"cpu"});
}

TEST(TensorOpsTest, Trilu) {
  const Tensor x = Iota({3, 4});
  OpTester("Trilu", 14).Input("x", x).Output("y", F({3, 4}, {0, 1, 2, 3, 0, 5, 6, 7, 0, 0, 10, 11})).Run();
  OpTester("Trilu", 14)
      .Input("x", x)
      .Input("k", I64({}, {1}))
      .Output("y", F({3, 4}, {0, 1, 2, 3, 0, 0, 6, 7, 0, 0, 0, 11}))
      .Run();
  OpTester("Trilu", 14)
      .Attr("upper", int64_t{0})
      .Input("x", x)
      .Input("k", I64({}, {-1}))
      .Output("y", F({3, 4}, {0, 0, 0, 0, 4, 0, 0, 0, 8, 9, 0, 0}))
      .Run();
  // Batched, lower with k = 0.
  OpTester("Trilu", 14)
      .Attr("upper", int64_t{0})
      .Input("x", Iota({2, 2, 2}))
      .Output("y", F({2, 2, 2}, {0, 0, 2, 3, 4, 0, 6, 7}))
      .Run();
}

TEST(TensorOpsTest, OneHot) {
  OpTester("OneHot", 11)
      .Input("i", Vec({0, 2, -1, 5}))
      .Input("d", I64({}, {3}))
      .Input("v", F({2}, {0, 1}))
      .Output("y", F({4, 3}, {1, 0, 0, 0, 0, 1, 0, 0, 1, 0, 0, 0}))
      .Run();
  OpTester("OneHot", 11)
      .Attr("axis", int64_t{0})
      .Input("i", Vec({1, 0}))
      .Input("d", F({}, {2.0f}))
      .Input("v", Vec({-1, 7}))
      .Output("y", I64({2, 2}, {-1, 7, 7, -1}))
      .Run();
}

}  // namespace
}  // namespace tessera::test
