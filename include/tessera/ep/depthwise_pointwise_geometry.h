// EP SDK: ai.tessera::DepthwisePointwiseConv (graph/passes/depthwise_pointwise_fusion.h), Y = a(W_pw . a_dw(
// depthwise(X) + B_dw) + B_pw + Z): its attributes read once per kernel, and per call the checked sizes and the
// depthwise window, shared by every EP's kernel.
#pragma once

#include <cstdint>

#include "tessera/ep/fused_activation.h"
#include "tessera/ep/graph.h"
#include "tessera/ep/window_geometry.h"
#include "tessera/shape.h"
#include "tessera/tensor.h"

namespace tessera {

// Input positions of the op.
inline constexpr size_t kDwX = 0, kDwWeights = 1, kDwBias = 2, kPwWeights = 3, kPwBias = 4, kPwResidual = 5;

struct DepthwisePointwiseAttributes {
  WindowAttributes window;                 // the depthwise convolution's
  FusedActivation depthwise_activation;    // after the depthwise convolution and its bias
  FusedActivation activation;              // after the pointwise product, its bias and the residual
  static DepthwisePointwiseAttributes Of(const Node& node);
};

struct DepthwisePointwiseGeometry {
  int64_t N = 0, C = 0, H = 0, W = 0;  // X [N, C, H, W]
  int64_t K = 0;                       // output channels (W_pw [K, C, 1, 1])
  int64_t R = 0, S = 0;                // the depthwise window's extent (W_dw [C, 1, R, S])
  int64_t stride_h = 1, stride_w = 1, dilation_h = 1, dilation_w = 1, pad_top = 0, pad_left = 0;
  int64_t OH = 0, OW = 0;
  Shape output_shape;  // [N, K, OH, OW]
};

// Checks the operands -- X of rank 4; W_dw [C, 1, R, S]; B_dw of C values; W_pw [K, C, 1, 1]; B_pw of K values; one
// float type for all of them -- and resolves the window against X; throws kInvalidArgument naming the node and the
// operand. A residual's shape is the kernel's to check (it broadcasts to the output shape).
DepthwisePointwiseGeometry MakeDepthwisePointwiseGeometry(const Node& node, const DepthwisePointwiseAttributes& attributes,
                                                          const Tensor& x, const Tensor& w_dw, const Tensor* b_dw,
                                                          const Tensor& w_pw, const Tensor* b_pw);

}  // namespace tessera
