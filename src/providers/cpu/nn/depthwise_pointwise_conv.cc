// ai.tessera::DepthwisePointwiseConv (graph/passes/depthwise_pointwise_fusion.h) on the CPU EP, in float: the
// depthwise convolution of one image into a buffer (bias and activation applied), then the pointwise product over it
// row by row, the bias, the residual and the activation. The reference the other EPs' kernels are tested against,
// and what runs a graph that already has the op; the fusion itself does not make it for this EP
// (CpuExecutionProvider::PrefersFusion: oneDNN's two convolutions are faster).
#include <vector>

#include "providers/cpu/common/dnnl_utils.h"
#include "providers/cpu/cpu_kernels.h"
#include "tessera/ep/broadcast.h"
#include "tessera/ep/depthwise_pointwise_geometry.h"
#include "tessera/ep/kernel.h"

namespace tessera::cpu {
namespace {

class DepthwisePointwiseConv : public Kernel {
 public:
  explicit DepthwisePointwiseConv(const KernelInfo& info) : attributes_(DepthwisePointwiseAttributes::Of(info.node())) {}

  void Compute(KernelContext& ctx) const override {
    const Node& node = ctx.node();
    const Tensor& x = ctx.Input(kDwX);
    const Tensor& w_dw = ctx.Input(kDwWeights);
    const Tensor* b_dw = ctx.OptionalInput(kDwBias);
    const Tensor& w_pw = ctx.Input(kPwWeights);
    const Tensor* b_pw = ctx.OptionalInput(kPwBias);
    const Tensor* z = ctx.OptionalInput(kPwResidual);
    const DepthwisePointwiseGeometry g = MakeDepthwisePointwiseGeometry(node, attributes_, x, w_dw, b_dw, w_pw, b_pw);
    Tensor& y = ctx.Output(0, x.type(), g.output_shape);
    // Element strides of Z over Y's [N, K, OH, OW] (0 along broadcast dims).
    int64_t z_strides[4] = {0, 0, 0, 0};
    if (z != nullptr) {
      CheckUnidirectionalBroadcast(node, z->shape(), y.shape(), "Z (input 5)");
      const std::vector<int64_t>& zd = z->shape().dims();
      int64_t stride = 1;
      for (size_t i = zd.size(); i-- > 0;) {
        z_strides[4 - zd.size() + i] = zd[i] == 1 ? 0 : stride;
        stride *= zd[i];
      }
    }
    if (y.NumElements() == 0) return;
    const int64_t pixels = g.OH * g.OW, plane = g.H * g.W;
    const float* xs = x.Data<float>();
    const float* wd = w_dw.Data<float>();
    const float* wp = w_pw.Data<float>();
    const float* zs = z != nullptr ? z->Data<float>() : nullptr;
    float* ys = y.Data<float>();
    std::vector<float> d(static_cast<size_t>(g.C * pixels));
    for (int64_t n = 0; n < g.N; ++n) {
      for (int64_t c = 0; c < g.C; ++c) {
        const float* in = xs + (n * g.C + c) * plane;
        const float* w = wd + c * g.R * g.S;
        const float bias = b_dw != nullptr ? b_dw->Data<float>()[c] : 0.0f;
        float* out = d.data() + c * pixels;
        for (int64_t oh = 0; oh < g.OH; ++oh)
          for (int64_t ow = 0; ow < g.OW; ++ow) {
            float acc = bias;
            for (int64_t r = 0; r < g.R; ++r) {
              const int64_t ih = oh * g.stride_h - g.pad_top + r * g.dilation_h;
              if (ih < 0 || ih >= g.H) continue;
              for (int64_t s = 0; s < g.S; ++s) {
                const int64_t iw = ow * g.stride_w - g.pad_left + s * g.dilation_w;
                if (iw >= 0 && iw < g.W) acc += in[ih * g.W + iw] * w[r * g.S + s];
              }
            }
            out[oh * g.OW + ow] = acc;
          }
      }
      ApplyActivation(attributes_.depthwise_activation, d.data(), g.C * pixels);
      for (int64_t k = 0; k < g.K; ++k) {
        float* out = ys + (n * g.K + k) * pixels;
        const float bias = b_pw != nullptr ? b_pw->Data<float>()[k] : 0.0f;
        for (int64_t p = 0; p < pixels; ++p) out[p] = bias;
        for (int64_t c = 0; c < g.C; ++c) {
          const float w = wp[k * g.C + c];
          const float* row = d.data() + c * pixels;
          for (int64_t p = 0; p < pixels; ++p) out[p] += w * row[p];
        }
        if (zs != nullptr)
          for (int64_t p = 0; p < pixels; ++p) {
            const int64_t oh = p / g.OW, ow = p % g.OW;
            out[p] += zs[n * z_strides[0] + k * z_strides[1] + oh * z_strides[2] + ow * z_strides[3]];
          }
        ApplyActivation(attributes_.activation, out, pixels);
      }
    }
  }

 private:
  DepthwisePointwiseAttributes attributes_;
};

}  // namespace

void RegisterDepthwisePointwiseConvKernels(KernelRegistry& registry) {
  KernelDef def;
  def.op_type = "DepthwisePointwiseConv";
  def.domain = "ai.tessera";
  def.input_types = {{0, {DataType::kFloat}}};
  registry.Register<DepthwisePointwiseConv>(std::move(def));
}

}  // namespace tessera::cpu
