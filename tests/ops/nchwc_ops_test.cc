// The blocked-channel kernels (ai.tessera NchwcConv, Nchwc*Pool, ReorderFromBlocked) against the plain ops on
// the CPU EP, for both channel blocks: inputs are blocked here, expected outputs are the plain results blocked.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <functional>
#include <optional>

#include "ops/op_tester.h"
#include "providers/cpu/cpu_ep.h"
#include "test_env.h"

namespace tessera::test {
namespace {

// NCHW [N, C, H, W] -> [N, ceil(C/B), H, W, B], padding channels zero; block 0 is NHWC ([N, 1, H, W, C]).
Tensor Block(const Tensor& plain, int64_t channel_block) {
  const Shape& s = plain.shape();
  const int64_t block = channel_block == 0 ? s[1] : channel_block;
  const int64_t n = s[0], c = s[1], hw = s[2] * s[3], blocks = (c + block - 1) / block;
  std::vector<float> out(n * blocks * hw * block, 0.0f);
  const float* in = plain.Data<float>();
  for (int64_t i = 0; i < n; ++i)
    for (int64_t ch = 0; ch < c; ++ch)
      for (int64_t p = 0; p < hw; ++p)
        out[((i * blocks + ch / block) * hw + p) * block + ch % block] = in[(i * c + ch) * hw + p];
  return Tensor::FromVector(Shape{n, blocks, s[2], s[3], block}, out);
}

struct ConvCase {
  Shape x, w;
  int64_t group, stride, pad;
  bool x_blocked;
  std::string activation;  // "", "Relu" or "Clip" (0, 6)
  std::optional<Shape> z;  // plain residual shape
};

// The convolution computed here in double (2-D, symmetric pads, groups): the oracle. A Conv run through a session
// would itself be rewritten into NchwcConv by the layout pass.
Tensor DirectConv(const ConvCase& c, const Tensor& x, const Tensor& w, const Tensor& b) {
  const int64_t n = c.x[0], ch = c.x[1], h = c.x[2], wd = c.x[3], oc = c.w[0], icg = c.w[1], kh = c.w[2], kw = c.w[3];
  const int64_t oh = (h + 2 * c.pad - kh) / c.stride + 1, ow = (wd + 2 * c.pad - kw) / c.stride + 1;
  const int64_t ocg = oc / c.group;
  std::vector<float> y(static_cast<size_t>(n * oc * oh * ow));
  for (int64_t i = 0; i < n; ++i)
    for (int64_t o = 0; o < oc; ++o)
      for (int64_t r = 0; r < oh; ++r)
        for (int64_t q = 0; q < ow; ++q) {
          double acc = b.Data<float>()[o];
          for (int64_t k = 0; k < icg; ++k)
            for (int64_t u = 0; u < kh; ++u)
              for (int64_t v = 0; v < kw; ++v) {
                const int64_t ih = r * c.stride - c.pad + u, iw = q * c.stride - c.pad + v;
                if (ih < 0 || ih >= h || iw < 0 || iw >= wd) continue;
                const int64_t in_channel = (o / ocg) * icg + k;
                acc += static_cast<double>(x.Data<float>()[((i * ch + in_channel) * h + ih) * wd + iw]) *
                       w.Data<float>()[((o * icg + k) * kh + u) * kw + v];
              }
          y[static_cast<size_t>(((i * oc + o) * oh + r) * ow + q)] = static_cast<float>(acc);
        }
  return Tensor::FromVector(Shape{n, oc, oh, ow}, y);
}

Tensor PlainConv(const ConvCase& c, const Tensor& x, const Tensor& w, const Tensor& b, const Tensor* z) {
  Tensor y = DirectConv(c, x, w, b);
  float* data = y.Data<float>();
  const Shape& s = y.shape();
  for (int64_t i = 0; i < y.NumElements(); ++i) {
    if (z) {  // z broadcasts as [N or 1, C, H or 1, W or 1]
      const int64_t w_i = i % s[3], h_i = i / s[3] % s[2], c_i = i / (s[2] * s[3]) % s[1], n_i = i / s.SizeFrom(1);
      const Shape& zs = z->shape();
      data[i] += z->Data<float>()[((zs[0] == 1 ? 0 : n_i) * zs[1] + c_i) * zs[2] * zs[3] +
                                  (zs[2] == 1 ? 0 : h_i) * zs[3] + (zs[3] == 1 ? 0 : w_i)];
    }
    if (c.activation == "Relu") data[i] = std::max(data[i], 0.0f);
    if (c.activation == "Clip") data[i] = std::clamp(data[i], 0.0f, 6.0f);
    if (c.activation == "Swish") data[i] = data[i] / (1.0f + std::exp(-data[i]));
  }
  return y;
}

void CheckNchwcConv(const ConvCase& c, int64_t block) {
  SCOPED_TRACE("X " + c.x.ToString() + " W " + c.w.ToString() + " block " + std::to_string(block));
  const Tensor x = RandomTensor(DataType::kFloat, c.x, 1);
  const Tensor w = RandomTensor(DataType::kFloat, c.w, 2, -0.5, 0.5);
  const Tensor b = RandomTensor(DataType::kFloat, Shape{c.w[0]}, 3);
  const std::optional<Tensor> z = c.z ? std::optional<Tensor>(RandomTensor(DataType::kFloat, *c.z, 4)) : std::nullopt;
  OpTester t("NchwcConv", 1, "ai.tessera");
  t.Attr("channel_block", block).Attr("group", c.group).Attr("strides", std::vector<int64_t>{c.stride, c.stride});
  t.Attr("pads", std::vector<int64_t>{c.pad, c.pad, c.pad, c.pad});
  if (c.activation == "Clip")
    t.Attr("activation", std::string("Clip")).Attr("activation_params", std::vector<float>{0, 6});
  if (c.activation == "Relu") t.Attr("activation", std::string("Relu"));
  if (c.activation == "Swish")
    t.Attr("activation", std::string("Swish")).Attr("activation_params", std::vector<float>{1});
  t.Input("X", c.x_blocked ? Block(x, block) : x).Input("W", w, true).Input("B", b, true);
  if (z) t.Input("Z", Block(*z, block));
  t.Output("Y", Block(PlainConv(c, x, w, b, z ? &*z : nullptr), block)).Tolerance(1e-4, 1e-4);
  t.Run({"cpu"});
}

TEST(NchwcOpsTest, ConvMatchesPlainConv) {
  // x, w, group, stride, pad, x_blocked, activation, residual
  const std::vector<ConvCase> cases = {
      {{1, 3, 11, 11}, {16, 3, 3, 3}, 1, 2, 1, false, "Relu", std::nullopt},
      // a plain X into 16 channels: with B = 0 the kernel writes nChw16c, the same bytes as NHWC
      {{2, 3, 10, 10}, {16, 3, 3, 3}, 1, 1, 1, false, "Clip", Shape{2, 16, 10, 10}},
      {{1, 5, 9, 9}, {16, 5, 1, 1}, 1, 1, 0, false, "", Shape{1, 16, 1, 1}},
      {{2, 16, 7, 7}, {32, 16, 1, 1}, 1, 1, 0, true, "Clip", Shape{2, 32, 7, 7}},
      {{1, 32, 8, 8}, {32, 1, 3, 3}, 32, 1, 1, true, "Clip", std::nullopt},
      {{1, 32, 9, 9}, {32, 1, 3, 3}, 32, 2, 1, true, "", std::nullopt},
      {{1, 32, 5, 5}, {16, 32, 3, 3}, 1, 1, 1, true, "Relu", Shape{1, 16, 1, 1}},
      {{1, 32, 6, 6}, {32, 16, 3, 3}, 2, 1, 1, true, "", std::nullopt},
      // 24 channels: the last block holds zero padding channels when B = 16
      {{1, 32, 6, 6}, {24, 32, 1, 1}, 1, 1, 0, true, "", std::nullopt},
      {{1, 24, 6, 6}, {40, 24, 1, 1}, 1, 1, 0, true, "Relu", std::nullopt},
      {{2, 24, 5, 5}, {24, 24, 3, 3}, 1, 1, 1, true, "Clip", Shape{2, 24, 5, 5}},
  };
  for (int64_t block : {0, 8, 16})
    for (const ConvCase& c : cases) CheckNchwcConv(c, block);
}

// Dense 3x3 stride-1 convs with 32+ channels run oneDNN's Winograd algorithm (CPU EP option conv_winograd, on by
// default) where the CPU has it: same results as the direct algorithm within float tolerance. Its kernels fuse ReLU;
// SiLU (Swish) runs as a pass of its own after them, after a residual the primitive added.
TEST(NchwcOpsTest, WinogradConvsMatchPlainConv) {
  const std::vector<ConvCase> cases = {
      {{1, 64, 14, 14}, {64, 64, 3, 3}, 1, 1, 1, true, "Relu", std::nullopt},
      {{1, 32, 12, 12}, {32, 32, 3, 3}, 1, 1, 1, true, "Swish", std::nullopt},
      {{1, 64, 10, 10}, {96, 64, 3, 3}, 1, 1, 1, true, "Swish", Shape{1, 96, 10, 10}},
      {{2, 64, 9, 9}, {96, 64, 3, 3}, 1, 1, 1, true, "", Shape{2, 96, 9, 9}},
      {{1, 128, 7, 7}, {128, 128, 3, 3}, 1, 1, 1, true, "Relu", Shape{1, 128, 7, 7}},
  };
  for (int64_t block : {0, 8, 16})
    for (const ConvCase& c : cases) CheckNchwcConv(c, block);
}

// conv_winograd = 0 keeps the direct algorithm; on AVX-512 hosts (where oneDNN has Winograd kernels) the two
// settings round differently, which shows the option reaches the kernel -- also with SiLU (Swish), which the
// Winograd kernels do not fuse (it then runs after them).
TEST(NchwcOpsTest, ConvWinogradOptionSelectsTheAlgorithm) {
  const Tensor x = RandomTensor(DataType::kFloat, Shape{1, 64, 14, 14}, 1);
  for (const char* activation : {"", "Swish"}) {
    SCOPED_TRACE(std::string("activation ") + activation);
    OpTester t("NchwcConv", 1, "ai.tessera");
    t.Attr("channel_block", int64_t{16}).Attr("pads", std::vector<int64_t>{1, 1, 1, 1});
    if (*activation) t.Attr("activation", std::string(activation)).Attr("activation_params", std::vector<float>{1});
    t.Input("X", Block(x, 16)).Input("W", RandomTensor(DataType::kFloat, Shape{64, 64, 3, 3}, 2, -0.5, 0.5), true);
    t.OutputName("Y");
    const std::string model = t.SerializedModel();
    auto run = [&](const char* winograd) {
      SessionOptions options;
      options.AddProvider(kCpuEpName, {{"conv_winograd", winograd}});
      Session session(TestEnv(), model.data(), model.size(), options);
      return session.Run({{"X", Value(Block(x, 16))}})[0].tensor();
    };
    const Tensor direct = run("0"), winograd = run("1");
    EXPECT_EQ(CompareTensors(direct, winograd, 1e-4, 1e-4), "");
    if (__builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
        __builtin_cpu_supports("avx512vl") && __builtin_cpu_supports("avx512dq")) {
      EXPECT_FALSE(std::equal(direct.Data<float>(), direct.Data<float>() + direct.NumElements(), winograd.Data<float>()))
          << "identical results: the Winograd algorithm did not run";
    }
  }
}

TEST(NchwcOpsTest, CpuProviderOptionsAreValidated) {
  EXPECT_TRUE(ParseCpuProviderOptions({{"conv_winograd", "0"}}).conv_winograd == false);
  EXPECT_TRUE(ParseCpuProviderOptions({}).conv_winograd);
  EXPECT_THROW(ParseCpuProviderOptions({{"conv_winograd", "yes"}}), Error);
  EXPECT_THROW(ParseCpuProviderOptions({{"bogus", "1"}}), Error);
}

TEST(NchwcOpsTest, ReorderFromBlockedRestoresNchw) {
  for (int64_t block : {0, 8, 16}) {
    const Tensor x = RandomTensor(DataType::kFloat, Shape{2, 32, 3, 5}, 5);
    OpTester t("ReorderFromBlocked", 1, "ai.tessera");
    t.Input("X", Block(x, block)).Output("Y", x);
    t.Run({"cpu"});
    const Tensor x20 = RandomTensor(DataType::kFloat, Shape{1, 20, 4, 3}, 6);
    OpTester padded("ReorderFromBlocked", 1, "ai.tessera");
    padded.Attr("channels", int64_t{20}).Input("X", Block(x20, block)).Output("Y", x20);
    padded.Run({"cpu"});
  }
}

void CheckPool(const std::string& op, int64_t block, const std::function<void(OpTester&)>& attributes) {
  SCOPED_TRACE(op + " block " + std::to_string(block));
  const Tensor x = RandomTensor(DataType::kFloat, Shape{2, 32, 9, 8}, 6);
  OpTester plain(op, 17);
  attributes(plain);
  plain.Input("X", x).OutputName("Y");
  const Tensor expected = plain.RunOn("cpu")[0];
  OpTester blocked("Nchwc" + op, 1, "ai.tessera");
  attributes(blocked);
  blocked.Input("X", Block(x, block)).Output("Y", Block(expected, block)).Tolerance(1e-5, 1e-5);
  blocked.Run({"cpu"});
}

TEST(NchwcOpsTest, PoolsMatchPlainPools) {
  for (int64_t block : {0, 8, 16}) {
    CheckPool("MaxPool", block, [](OpTester& t) {
      t.Attr("kernel_shape", std::vector<int64_t>{3, 3}).Attr("strides", std::vector<int64_t>{2, 2});
      t.Attr("pads", std::vector<int64_t>{1, 1, 1, 1}).Attr("ceil_mode", int64_t{1});
    });
    CheckPool("MaxPool", block, [](OpTester& t) {
      t.Attr("kernel_shape", std::vector<int64_t>{2, 3}).Attr("dilations", std::vector<int64_t>{2, 1});
    });
    // Windows of 9 and more positions take the separable path (column maxima, then row maxima): SPP's large
    // same-size windows, strides with ceil_mode, dilations, windows wider than the padded input.
    for (int64_t k : {5, 9, 13}) {
      CheckPool("MaxPool", block, [k](OpTester& t) {
        t.Attr("kernel_shape", std::vector<int64_t>{k, k}).Attr("pads", std::vector<int64_t>{k / 2, k / 2, k / 2, k / 2});
      });
    }
    CheckPool("MaxPool", block, [](OpTester& t) {
      t.Attr("kernel_shape", std::vector<int64_t>{3, 4}).Attr("strides", std::vector<int64_t>{2, 3});
      t.Attr("pads", std::vector<int64_t>{1, 2, 0, 1}).Attr("dilations", std::vector<int64_t>{1, 2});
      t.Attr("ceil_mode", int64_t{1});
    });
    CheckPool("AveragePool", block, [](OpTester& t) {
      t.Attr("kernel_shape", std::vector<int64_t>{3, 3}).Attr("strides", std::vector<int64_t>{2, 2});
      t.Attr("pads", std::vector<int64_t>{1, 0, 1, 1}).Attr("count_include_pad", int64_t{1});
    });
    CheckPool("AveragePool", block, [](OpTester& t) {
      t.Attr("kernel_shape", std::vector<int64_t>{3, 2}).Attr("strides", std::vector<int64_t>{2, 2});
      t.Attr("pads", std::vector<int64_t>{1, 1, 1, 1}).Attr("ceil_mode", int64_t{1});
    });
    CheckPool("GlobalAveragePool", block, [](OpTester&) {});
    CheckPool("GlobalMaxPool", block, [](OpTester&) {});
  }
}

TEST(NchwcOpsTest, RejectsTensorsNotInBlockedLayout) {
  OpTester t("ReorderFromBlocked", 1, "ai.tessera");
  t.Input("X", RandomTensor(DataType::kFloat, Shape{1, 2, 3, 4, 5}, 7)).OutputName("Y");
  t.ExpectFailure("not a blocked-channel tensor");
  t.Run({"cpu"});
  OpTester too_many("ReorderFromBlocked", 1, "ai.tessera");
  too_many.Attr("channels", int64_t{40}).Input("X", RandomTensor(DataType::kFloat, Shape{1, 2, 3, 4, 16}, 7));
  too_many.OutputName("Y").ExpectFailure("holding 40 channels");
  too_many.Run({"cpu"});
}

}  // namespace
}  // namespace tessera::test
