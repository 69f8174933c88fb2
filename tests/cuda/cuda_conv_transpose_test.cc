// ConvTranspose on the CUDA EP (cuDNN backward data) against the CPU EP: PP-OCR's 2x2 stride-2 upsampling heads,
// symmetric and asymmetric pads, output_padding, auto_pad, output_shape, groups with dilation, 1-D and 3-D, with and
// without a bias, float32 and float16. Each case also checks that the node runs on the CUDA EP.
#include <string>
#include <vector>

#include "cuda/cuda_test_util.h"

namespace tessera::test {
namespace {

using CudaConvTransposeTest = CudaTest;

struct ConvTransposeCase {
  std::string name;
  Shape x, w;
  std::vector<int64_t> strides = {}, pads = {}, dilations = {}, output_padding = {}, output_shape = {};
  int64_t group = 1;
  std::string auto_pad = {};
  bool bias = true;
};

void Build(OpTester& t, const ConvTransposeCase& c, const std::vector<Tensor>& in) {
  if (!c.strides.empty()) t.Attr("strides", c.strides);
  if (!c.pads.empty()) t.Attr("pads", c.pads);
  if (!c.dilations.empty()) t.Attr("dilations", c.dilations);
  if (!c.output_padding.empty()) t.Attr("output_padding", c.output_padding);
  if (!c.output_shape.empty()) t.Attr("output_shape", c.output_shape);
  if (c.group != 1) t.Attr("group", c.group);
  if (!c.auto_pad.empty()) t.Attr("auto_pad", c.auto_pad);
  t.Input("X", in[0]).Input("W", in[1], true);
  if (c.bias) t.Input("B", in[2], true);
}

TEST_F(CudaConvTransposeTest, MatchesTheCpu) {
  const std::vector<ConvTransposeCase> cases = {
      {"PP-OCR head 2x2 stride 2", {1, 24, 20, 20}, {24, 24, 2, 2}, {2, 2}},
      {"to one channel, no bias", {1, 24, 16, 16}, {24, 1, 2, 2}, {2, 2}, {}, {}, {}, {}, 1, "", false},
      {"3x3 stride 2 symmetric pads", {2, 8, 7, 9}, {8, 16, 3, 3}, {2, 2}, {1, 1, 1, 1}},
      {"asymmetric pads", {1, 8, 6, 6}, {8, 8, 3, 3}, {2, 2}, {0, 1, 1, 0}},
      {"output_padding", {1, 8, 5, 6}, {8, 4, 3, 3}, {2, 2}, {1, 1, 1, 1}, {}, {1, 1}},
      {"auto_pad SAME_UPPER", {1, 4, 5, 5}, {4, 4, 4, 4}, {2, 2}, {}, {}, {}, {}, 1, "SAME_UPPER"},
      {"output_shape", {1, 4, 5, 5}, {4, 6, 3, 3}, {2, 2}, {}, {}, {}, {12, 11}},
      {"groups and dilation", {1, 8, 6, 7}, {8, 3, 3, 3}, {1, 1}, {1, 1, 1, 1}, {2, 2}, {}, {}, 2},
      {"1-D", {2, 4, 9}, {4, 3, 3}, {2}, {1, 1}},
      {"3-D", {1, 2, 4, 4, 4}, {2, 3, 2, 2, 2}, {2, 2, 2}},
  };
  for (const ConvTransposeCase& c : cases) {
    SCOPED_TRACE(c.name);
    const Shape bias{c.w[1] * c.group};
    {
      OpTester t("ConvTranspose", 11);
      Build(t, c, {RandomTensor(kF32, c.x, 1), RandomTensor(kF32, c.w, 2, -0.5, 0.5), RandomTensor(kF32, bias, 3)});
      t.OutputName("Y").Tolerance(1e-4, 1e-4);
      CompareOnCuda(t);
    }
    CompareFloat16WithCpu(
        "ConvTranspose", 11,
        {RandomTensor(kF16, c.x, 4), RandomTensor(kF16, c.w, 5, -0.5, 0.5), RandomTensor(kF16, bias, 6)},
        [&](OpTester& o, const std::vector<Tensor>& in) { Build(o, c, in); }, 2e-2, 2e-2);
  }
}

}  // namespace
}  // namespace tessera::test
