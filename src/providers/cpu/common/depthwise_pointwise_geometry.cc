#include "tessera/ep/depthwise_pointwise_geometry.h"

#include <vector>

#include "tessera/status.h"

namespace tessera {

DepthwisePointwiseAttributes DepthwisePointwiseAttributes::Of(const Node& node) {
  DepthwisePointwiseAttributes a;
  a.window = ReadWindowAttributes(node);
  a.depthwise_activation = ReadFusedActivation(node, "depthwise_activation");
  a.activation = ReadFusedActivation(node);
  return a;
}

DepthwisePointwiseGeometry MakeDepthwisePointwiseGeometry(const Node& node, const DepthwisePointwiseAttributes& attributes,
                                                          const Tensor& x, const Tensor& w_dw, const Tensor* b_dw,
                                                          const Tensor& w_pw, const Tensor* b_pw) {
  const auto fail = [&](const char* operand, const Tensor& t, const std::string& expected) {
    Fail(ErrorCode::kInvalidArgument, node.Describe(), ": ", operand, " ", t.shape().ToString(), " must be ", expected);
  };
  if (x.shape().rank() != 4) fail("X", x, "[N, C, H, W]");
  DepthwisePointwiseGeometry g;
  g.N = x.shape()[0], g.C = x.shape()[1], g.H = x.shape()[2], g.W = x.shape()[3];
  const std::string c = std::to_string(g.C);
  if (w_dw.shape().rank() != 4 || w_dw.shape()[0] != g.C || w_dw.shape()[1] != 1)
    fail("W_dw (input 1)", w_dw, "[" + c + ", 1, R, S] for X's " + c + " channels");
  if (b_dw != nullptr && b_dw->NumElements() != g.C) fail("B_dw (input 2)", *b_dw, "of " + c + " values");
  if (w_pw.shape().rank() != 4 || w_pw.shape()[1] != g.C || w_pw.shape()[2] != 1 || w_pw.shape()[3] != 1)
    fail("W_pw (input 3)", w_pw, "[K, " + c + ", 1, 1]");
  g.K = w_pw.shape()[0];
  if (b_pw != nullptr && b_pw->NumElements() != g.K) fail("B_pw (input 4)", *b_pw, "of " + std::to_string(g.K) + " values");
  for (const Tensor* t : {&w_dw, b_dw, &w_pw, b_pw})
    if (t != nullptr && t->type() != x.type())
      Fail(ErrorCode::kInvalidArgument, node.Describe(), ": every operand must be of X's type ", DataTypeName(x.type()),
           ", got ", DataTypeName(t->type()));
  g.R = w_dw.shape()[2], g.S = w_dw.shape()[3];
  const WindowGeometry window = ResolveWindow(attributes.window, {g.H, g.W}, {g.R, g.S}, node);
  g.stride_h = window.strides[0], g.stride_w = window.strides[1];
  g.dilation_h = window.dilations[0], g.dilation_w = window.dilations[1];
  g.pad_top = window.pad_begin[0], g.pad_left = window.pad_begin[1];
  g.OH = window.output[0], g.OW = window.output[1];
  g.output_shape = Shape(std::vector<int64_t>{g.N, g.K, g.OH, g.OW});
  return g;
}

}  // namespace tessera
