// Conv against a naive double-precision reference, on random inputs over many geometries.
#include <gtest/gtest.h>

#include <thread>

#include "ops/op_tester.h"
#include "test_env.h"

namespace tessera::test {
namespace {

struct ConvCase {
  ConvCase(Shape x_shape, Shape w_shape) : x(std::move(x_shape)), w(std::move(w_shape)) {}
  Shape x, w;
  int64_t group = 1;
  std::vector<int64_t> strides, dilations, pads;  // empty = attribute absent
  std::string auto_pad;                            // empty = attribute absent
  bool bias = true;
  bool constant_w = false;
};

// Resolves per-axis begin/end pads the way the ONNX spec describes them.
void ResolvePads(const ConvCase& c, size_t rank, std::vector<int64_t>& begin, std::vector<int64_t>& end,
                 const std::vector<int64_t>& strides, const std::vector<int64_t>& dilations) {
  begin.assign(rank, 0);
  end.assign(rank, 0);
  for (size_t d = 0; d < rank; ++d) {
    if (c.auto_pad == "SAME_UPPER" || c.auto_pad == "SAME_LOWER") {
      const int64_t in = c.x[d + 2], out = (in + strides[d] - 1) / strides[d];
      const int64_t total = std::max<int64_t>(0, (out - 1) * strides[d] + (c.w[d + 2] - 1) * dilations[d] + 1 - in);
      begin[d] = c.auto_pad == "SAME_UPPER" ? total / 2 : (total + 1) / 2;
      end[d] = total - begin[d];
    } else if (!c.pads.empty()) {
      begin[d] = c.pads[d];
      end[d] = c.pads[d + rank];
    }
  }
}

Tensor NaiveConv(const ConvCase& c, const Tensor& x, const Tensor& w, const Tensor* b) {
  const size_t rank = c.x.rank() - 2;
  std::vector<int64_t> strides = c.strides.empty() ? std::vector<int64_t>(rank, 1) : c.strides;
  std::vector<int64_t> dil = c.dilations.empty() ? std::vector<int64_t>(rank, 1) : c.dilations;
  std::vector<int64_t> pb, pe;
  ResolvePads(c, rank, pb, pe, strides, dil);
  // Lift to 3 spatial dims.
  std::vector<int64_t> in(3, 1), k(3, 1), st(3, 1), dl(3, 1), p0(3, 0), out(3, 1);
  for (size_t d = 0; d < rank; ++d) {
    const size_t t = 3 - rank + d;
    in[t] = c.x[d + 2], k[t] = c.w[d + 2], st[t] = strides[d], dl[t] = dil[d], p0[t] = pb[d];
    out[t] = (in[t] + pb[d] + pe[d] - (k[t] - 1) * dl[t] - 1) / st[t] + 1;
  }
  std::vector<int64_t> out_dims{c.x[0], c.w[0]};
  for (size_t t = 3 - rank; t < 3; ++t) out_dims.push_back(out[t]);
  Tensor y = Tensor::Allocate(x.type(), Shape(out_dims));
  const int64_t n_img = c.x[0], cin = c.x[1], m = c.w[0], cpg = cin / c.group, mpg = m / c.group;
  auto xv = [&](int64_t n, int64_t ch, int64_t i, int64_t j, int64_t l) {
    const int64_t idx = (((n * cin + ch) * in[0] + i) * in[1] + j) * in[2] + l;
    return x.type() == DataType::kFloat ? double(x.Data<float>()[idx]) : x.Data<double>()[idx];
  };
  auto wv = [&](int64_t o, int64_t ch, int64_t i, int64_t j, int64_t l) {
    const int64_t idx = (((o * cpg + ch) * k[0] + i) * k[1] + j) * k[2] + l;
    return w.type() == DataType::kFloat ? double(w.Data<float>()[idx]) : w.Data<double>()[idx];
  };
  int64_t oi = 0;
  for (int64_t n = 0; n < n_img; ++n)
    for (int64_t o = 0; o < m; ++o)
      for (int64_t a = 0; a < out[0]; ++a)
        for (int64_t bb = 0; bb < out[1]; ++bb)
          for (int64_t cc = 0; cc < out[2]; ++cc, ++oi) {
            double acc = !b ? 0.0 : b->type() == DataType::kFloat ? b->Data<float>()[o] : b->Data<double>()[o];
            for (int64_t ch = 0; ch < cpg; ++ch)
              for (int64_t i = 0; i < k[0]; ++i)
                for (int64_t j = 0; j < k[1]; ++j)
                  for (int64_t l = 0; l < k[2]; ++l) {
                    const int64_t pi = a * st[0] - p0[0] + i * dl[0], pj = bb * st[1] - p0[1] + j * dl[1],
                                  pl = cc * st[2] - p0[2] + l * dl[2];
                    if (pi < 0 || pi >= in[0] || pj < 0 || pj >= in[1] || pl < 0 || pl >= in[2]) continue;
                    acc += xv(n, (o / mpg) * cpg + ch, pi, pj, pl) * wv(o, ch, i, j, l);
                  }
            if (y.type() == DataType::kFloat) y.Data<float>()[oi] = static_cast<float>(acc);
            else y.Data<double>()[oi] = acc;
          }
  return y;
}

void CheckConv(const ConvCase& c, DataType type = DataType::kFloat, uint32_t seed = 1) {
  Tensor x = RandomTensor(type, c.x, seed), w = RandomTensor(type, c.w, seed + 1);
  Tensor b = RandomTensor(type, Shape{c.w[0]}, seed + 2);
  OpTester t("Conv", 17);
  if (c.group != 1) t.Attr("group", c.group);
  if (!c.strides.empty()) t.Attr("strides", c.strides);
  if (!c.dilations.empty()) t.Attr("dilations", c.dilations);
  if (!c.pads.empty()) t.Attr("pads", c.pads);
  if (!c.auto_pad.empty()) t.Attr("auto_pad", c.auto_pad);
  t.Input("X", x).Input("W", w, c.constant_w);
  if (c.bias) t.Input("B", b);
  t.Output("Y", NaiveConv(c, x, w, c.bias ? &b : nullptr));
  if (type == DataType::kFloat) t.Tolerance(1e-4, 1e-4);
  t.Run();
}

// Small 1-D convolutions run Tessera's own loops instead of oneDNN (speech models): depthwise with padding,
// strided and dilated taps, few output positions over a long reduction (the column path), asymmetric pads.
TEST(ConvOpTest, SmallOneDimensionalConvolutions) {
  std::vector<ConvCase> cases;
  {
    ConvCase c({1, 258, 9}, {258, 1, 5});  // depthwise, pad 2 (silero VAD)
    c.group = 258;
    c.pads = {2, 2};
    cases.push_back(c);
  }
  {
    ConvCase c({1, 1, 576}, {34, 1, 256});  // STFT-like: stride 64, no padding
    c.strides = {64};
    cases.push_back(c);
  }
  {
    ConvCase c({2, 64, 4}, {32, 64, 3});  // few positions, long reduction: columns and dot products
    c.pads = {1, 1};
    c.constant_w = true;
    cases.push_back(c);
  }
  {
    ConvCase c({1, 6, 23}, {4, 3, 3});  // groups, dilation, stride, asymmetric pads, no bias
    c.group = 2;
    c.strides = {2};
    c.dilations = {3};
    c.pads = {2, 1};
    c.bias = false;
    cases.push_back(c);
  }
  {
    ConvCase c({1, 16, 5}, {16, 16, 1});  // pointwise
    cases.push_back(c);
  }
  uint32_t seed = 300;
  for (const ConvCase& c : cases) {
    SCOPED_TRACE("x " + c.x.ToString() + " w " + c.w.ToString());
    CheckConv(c, DataType::kFloat, seed += 3);
  }
}

TEST(ConvOpTest, Basic2d) {
  ConvCase c({2, 3, 7, 9}, {4, 3, 3, 3});
  c.pads = {1, 1, 1, 1};
  CheckConv(c);
}

TEST(ConvOpTest, GroupsStridesDilationsAsymmetricPads) {
  ConvCase c({2, 4, 11, 8}, {6, 2, 3, 2});
  c.group = 2, c.strides = {2, 1}, c.dilations = {2, 1}, c.pads = {0, 1, 2, 0};
  CheckConv(c);
}

TEST(ConvOpTest, DepthwiseSameUpperStride2) {
  ConvCase c({1, 8, 9, 10}, {8, 1, 3, 3});
  c.group = 8, c.strides = {2, 2}, c.auto_pad = "SAME_UPPER";
  CheckConv(c);
}

TEST(ConvOpTest, SameLower1dNoBias) {
  ConvCase c({3, 5, 13}, {7, 5, 4});
  c.strides = {3}, c.auto_pad = "SAME_LOWER", c.bias = false;
  CheckConv(c);
}

TEST(ConvOpTest, Valid3d) {
  ConvCase c({1, 3, 5, 6, 7}, {4, 3, 2, 3, 2});
  c.auto_pad = "VALID", c.strides = {1, 2, 1};
  CheckConv(c);
}

TEST(ConvOpTest, PointwiseConstantWeights) {
  ConvCase c({2, 16, 5, 6}, {24, 16, 1, 1});
  c.constant_w = true;
  CheckConv(c);
}

TEST(ConvOpTest, ResNetLikeConstantWeights) {
  ConvCase c({1, 64, 14, 14}, {64, 64, 3, 3});
  c.pads = {1, 1, 1, 1}, c.constant_w = true;
  CheckConv(c, DataType::kFloat, 7);
}

TEST(ConvOpTest, PadsLargerThanKernel) {
  ConvCase c({1, 2, 4, 4}, {3, 2, 2, 2});
  c.pads = {3, 0, 2, 3};
  CheckConv(c);
}

TEST(ConvOpTest, Double) {
  ConvCase c({2, 4, 6, 5}, {4, 2, 3, 3});
  c.group = 2, c.strides = {1, 2}, c.pads = {1, 0, 0, 1};
  CheckConv(c, DataType::kDouble);
}

// Compute runs from many threads at once: the first runs race to build the per-shape primitive and
// later ones share it.
TEST(ConvOpTest, ConcurrentRuns) {
  ConvCase c({2, 8, 9, 7}, {8, 8, 3, 3});
  c.pads = {1, 1, 1, 1};
  Tensor w = RandomTensor(DataType::kFloat, c.w, 2);
  OpTester t("Conv", 17);
  t.Attr("pads", c.pads).Input("X", RandomTensor(DataType::kFloat, c.x, 1)).Input("W", w, true).OutputName("Y");
  const std::string model = t.SerializedModel();
  Session session(TestEnv(), model.data(), model.size(), OptionsFor("cpu"));
  std::vector<Tensor> inputs, expected;
  for (uint32_t seed = 0; seed < 4; ++seed) {
    inputs.push_back(RandomTensor(DataType::kFloat, c.x, 10 + seed));
    expected.push_back(NaiveConv(c, inputs.back(), w, nullptr));
  }
  std::vector<std::string> failures(4);
  std::vector<std::thread> threads;
  for (size_t id = 0; id < 4; ++id)
    threads.emplace_back([&, id] {
      for (size_t i = 0; i < 10 && failures[id].empty(); ++i) {
        const size_t which = (id + i) % 4;
        failures[id] = CompareTensors(expected[which], session.Run({{"X", inputs[which]}})[0].tensor(), 1e-4, 1e-4);
      }
    });
  for (std::thread& th : threads) th.join();
  for (const std::string& f : failures) EXPECT_EQ(f, "");
}

TEST(ConvOpTest, ChannelMismatchFails) {
  OpTester t("Conv", 17);
  t.Input("X", RandomTensor(DataType::kFloat, {1, 3, 5, 5}, 1)).Input("W", RandomTensor(DataType::kFloat, {2, 4, 3, 3}, 2));
  t.OutputName("Y").ExpectFailure("channel mismatch");
  t.Run({"cpu"});
}

TEST(ConvOpTest, RankMismatchFails) {
  OpTester t("Conv", 17);
  t.Input("X", RandomTensor(DataType::kFloat, {1, 3, 5}, 1)).Input("W", RandomTensor(DataType::kFloat, {2, 3, 3, 3}, 2));
  t.OutputName("Y").ExpectFailure("same rank");
  t.Run({"cpu"});
}

}  // namespace
}  // namespace tessera::test
