// ConvTranspose: the transpose (input gradient) of Conv, used as a learned upsampling. N-D with groups,
// strides, dilations, explicit pads, auto_pad, output_shape, output_padding and an optional bias.
// ai.tessera::FusedConvTranspose (from conv_activation_fusion) is ConvTranspose followed by its `activation`.
// Kernels that tile the output (stride == kernel, no pads or dilations) with few input channels run the direct
// loop of tiling_conv_transpose.h.
// float32 with 1 to 3 spatial dims runs on oneDNN's deconvolution primitive (built per input shape and
// cached; constant weights are packed once); double, other ranks and geometries oneDNN rejects use a
// direct loop.
//
// Geometry per spatial axis: output = stride * (in - 1) + output_padding + (kernel - 1) * dilation + 1
// - pad_begin - pad_end. output_padding is folded into pad_end, which may therefore be negative: the
// positions it appends are reached by no input and hold only the bias (oneDNN accepts a negative right
// padding for exactly this).
//
// Activation layout (oneDNN 2.6, AVX-512 host, 2 threads, kernel 2x2 stride 2, ms per run):
//                                        plain NCHW (gemm:jit)   blocked (jit) + reorders in and out
//   24 -> 24 channels, 160x160 -> 320x320        4.2                    2.4
//   24 -> 1 channel,   320x320 -> 640x640        0.45                   3.7
// Blocked layouts pad channels to 16, which a thin side pays for many times over, so they are used only
// when both sides have at least 16 channels and there are no groups.
#include <algorithm>
#include <cstring>
#include <optional>

#include "providers/cpu/common/dnnl_utils.h"
#include "providers/cpu/common/window_geometry.h"
#include "providers/cpu/cpu_kernels.h"
#include "providers/cpu/nn/tiling_conv_transpose.h"
#include "tessera/ep/conv_transpose_geometry.h"

namespace tessera::cpu {
namespace {

int64_t Product(const std::vector<int64_t>& v) {
  int64_t p = 1;
  for (int64_t d : v) p *= d;
  return p;
}

// Direct transposed convolution, one (image, output channel) plane per task: every output position
// gathers the (input position, kernel tap) pairs that reach it. Accumulates in double.
template <typename T>
void ReferenceConvTranspose(const ConvTransposeShapes& s, const T* x, const T* w, const T* bias, T* y,
                            const ThreadPool& pool) {
  const size_t rank = s.rank();
  const int64_t in_size = Product(s.input), out_size = Product(s.output), k_size = Product(s.kernel);
  const int64_t ic_per_group = s.in_channels / s.group, oc_per_group = s.out_channels / s.group;
  pool.ParallelFor(s.batch * s.out_channels, 1, [&](int64_t begin, int64_t end) {
    std::vector<int64_t> out_pos(rank);
    for (int64_t task = begin; task < end; ++task) {
      const int64_t n = task / s.out_channels, oc = task % s.out_channels;
      const int64_t grp = oc / oc_per_group, oc_in_group = oc % oc_per_group;
      const T* x_group = x + (n * s.in_channels + grp * ic_per_group) * in_size;
      // W is [C_in][C_out / group][kernel...]: the taps of (input channel ic, this output channel).
      const T* w_oc = w + (grp * ic_per_group * oc_per_group + oc_in_group) * k_size;
      T* y_plane = y + task * out_size;
      for (int64_t o = 0; o < out_size; ++o) {
        for (int64_t r = o, d = static_cast<int64_t>(rank) - 1; d >= 0; --d) {
          out_pos[d] = r % s.output[d];
          r /= s.output[d];
        }
        double acc = bias ? static_cast<double>(bias[oc]) : 0.0;
        for (int64_t k = 0; k < k_size; ++k) {
          int64_t offset = 0, stride = 1;
          bool reached = true;
          for (int64_t r = k, d = static_cast<int64_t>(rank) - 1; d >= 0 && reached; --d) {
            const int64_t kd = r % s.kernel[d];
            r /= s.kernel[d];
            const int64_t numerator = out_pos[d] + s.pad_begin[d] - kd * s.dilations[d];
            const int64_t i = numerator / s.strides[d];
            reached = numerator >= 0 && numerator % s.strides[d] == 0 && i < s.input[d];
            offset += i * stride;
            stride *= s.input[d];
          }
          if (!reached) continue;
          for (int64_t ic = 0; ic < ic_per_group; ++ic)
            acc += static_cast<double>(x_group[ic * in_size + offset]) *
                   static_cast<double>(w_oc[ic * oc_per_group * k_size + k]);
        }
        y_plane[o] = static_cast<T>(acc);
      }
    }
  });
}


// ONNX's W ([C_in][C_out / group][kernel...]) described with oneDNN's logical weight dims
// ({[group,] C_out / group, C_in / group, kernel...}) through strides, so no copy is needed to read it.
dnnl::memory::desc OnnxWeightsDesc(const ConvTransposeShapes& s) {
  const int64_t k_size = Product(s.kernel);
  const int64_t ocg = s.out_channels / s.group, icg = s.in_channels / s.group;
  dnnl::memory::dims dims, strides;
  if (s.group > 1) {
    dims = {s.group, ocg, icg};
    strides = {icg * ocg * k_size, k_size, ocg * k_size};
  } else {
    dims = {ocg, icg};
    strides = {k_size, ocg * k_size};
  }
  int64_t spatial_stride = k_size;
  for (int64_t k : s.kernel) {
    spatial_stride /= k;
    dims.push_back(k);
    strides.push_back(spatial_stride);
  }
  return dnnl::memory::desc(dims, dnnl::memory::data_type::f32, strides);
}

// A oneDNN deconvolution for one (X shape, W shape); `packed_weights` is set when W is a constant and
// the reorders are set when the primitive wants blocked activations.
struct DnnlDeconv {
  dnnl::deconvolution_forward::primitive_desc pd;
  dnnl::deconvolution_forward primitive;
  dnnl::memory::desc src_plain, weights_onnx, dst_plain;
  dnnl::memory packed_weights;
  std::optional<LayoutReorder> src_to_blocked, dst_to_plain;
};

class ConvTranspose : public Kernel {
 public:
  explicit ConvTranspose(const KernelInfo& info)
      : attrs_(ReadConvTransposeAttributes(info.node())),
        has_bias_(info.node().HasInput(2)),
        activation_(info.node().domain.empty() ? FusedActivation{} : ReadFusedActivation(info.node())),
        constant_weights_(info.ConstantInput(1) ? *info.ConstantInput(1) : Tensor()) {}

  void Compute(KernelContext& ctx) const override {
    const Tensor& x = ctx.Input(0);
    const Tensor& w = ctx.Input(1);
    const Tensor* bias = ctx.OptionalInput(2);
    const ConvTransposeShapes s = ResolveConvTransposeShapes(ctx.node(), attrs_, x.shape(), w.shape(), bias);
    Tensor& y = ctx.Output(0, x.type(), s.y);
    if (y.NumElements() == 0) return;
    if (x.type() == DataType::kFloat && x.NumElements() > 0 && UseTilingConvTranspose(s)) {
      if (ctx.preparing_only()) {  // a dry preparation run: the direct loop has nothing to prepare
        std::memset(y.raw_data(), 0, y.SizeInBytes());
        return;
      }
      return TilingConvTranspose(s, x.Data<float>(), w.Data<float>(), bias ? bias->Data<float>() : nullptr,
                                 activation_, y.Data<float>(), ctx.thread_pool());
    }
    if (x.type() == DataType::kFloat && s.rank() <= 3 && x.NumElements() > 0) {
      std::shared_ptr<const DnnlDeconv> deconv = primitives_.Get(ctx, CacheKey(x, w), [&] { return Build(s); });
      if (deconv->primitive && ZeroFilledForPreparation(ctx, deconv->pd, y)) return;
      if (deconv->primitive) return RunDnnl(ctx, *deconv, x, w, bias, y);
    }
    if (x.type() == DataType::kFloat) {
      ReferenceConvTranspose(s, x.Data<float>(), w.Data<float>(), bias ? bias->Data<float>() : nullptr,
                             y.Data<float>(), ctx.thread_pool());
      ApplyActivation(activation_, y.Data<float>(), y.NumElements());
    } else {
      ReferenceConvTranspose(s, x.Data<double>(), w.Data<double>(), bias ? bias->Data<double>() : nullptr,
                             y.Data<double>(), ctx.thread_pool());
      ApplyActivation(activation_, y.Data<double>(), y.NumElements());
    }
  }

 private:
  static std::vector<int64_t> CacheKey(const Tensor& x, const Tensor& w) {
    std::vector<int64_t> key;
    AppendShapeKey(key, x.shape());
    AppendShapeKey(key, w.shape());
    return key;
  }

  // Builds the primitive for `s`; returns an entry without a primitive when oneDNN rejects the geometry.
  DnnlDeconv Build(const ConvTransposeShapes& s) const {
    using dnnl::memory;
    memory::dims src{s.batch, s.in_channels}, dst{s.batch, s.out_channels};
    src.insert(src.end(), s.input.begin(), s.input.end());
    dst.insert(dst.end(), s.output.begin(), s.output.end());
    memory::dims dilations;
    for (int64_t d : s.dilations) dilations.push_back(d - 1);  // oneDNN counts the gaps
    DnnlDeconv deconv;
    deconv.src_plain = PlainF32Desc(src);
    deconv.dst_plain = PlainF32Desc(dst);
    deconv.weights_onnx = OnnxWeightsDesc(s);
    auto any = [](const memory::dims& d) { return memory::desc(d, memory::data_type::f32, memory::format_tag::any); };
    const bool blocked = s.group == 1 && s.in_channels >= 16 && s.out_channels >= 16;
    try {
      const memory::desc bias = has_bias_ ? PlainF32Desc({s.out_channels}) : memory::desc();
      dnnl::deconvolution_forward::desc desc(
          dnnl::prop_kind::forward_inference, dnnl::algorithm::deconvolution_direct,
          blocked ? any(src) : deconv.src_plain, any(deconv.weights_onnx.dims()), bias,
          blocked ? any(dst) : deconv.dst_plain, ToDnnlDims(s.strides), dilations, ToDnnlDims(s.pad_begin),
          ToDnnlDims(s.pad_end));
      dnnl::post_ops ops;
      AppendActivation(ops, activation_);
      dnnl::primitive_attr attr;
      attr.set_post_ops(ops);
      deconv.pd = dnnl::deconvolution_forward::primitive_desc(desc, DnnlAttr(attr), DnnlEngine());
    } catch (const dnnl::error&) {
      return deconv;
    }
    deconv.primitive = dnnl::deconvolution_forward(deconv.pd);
    deconv.src_to_blocked = MakeReorder(deconv.src_plain, deconv.pd.src_desc());
    deconv.dst_to_plain = MakeReorder(deconv.pd.dst_desc(), deconv.dst_plain);
    if (constant_weights_.defined()) {
      dnnl::memory onnx(deconv.weights_onnx, DnnlEngine(), const_cast<void*>(constant_weights_.raw_data()));
      deconv.packed_weights = ReorderInto(onnx, deconv.pd.weights_desc());
    }
    return deconv;
  }

  static void RunDnnl(KernelContext& ctx, const DnnlDeconv& deconv, const Tensor& x, const Tensor& w,
                      const Tensor* bias, Tensor& y) {
    const dnnl::engine& engine = DnnlEngine();
    dnnl::memory src(deconv.src_plain, engine, const_cast<float*>(x.Data<float>()));
    dnnl::memory dst(deconv.dst_plain, engine, y.Data<float>());
    dnnl::memory weights = deconv.packed_weights;
    if (!weights) {
      weights = dnnl::memory(deconv.weights_onnx, engine, const_cast<float*>(w.Data<float>()));
      if (deconv.pd.weights_desc() != deconv.weights_onnx) weights = ReorderInto(weights, deconv.pd.weights_desc());
    }
    std::unordered_map<int, dnnl::memory> args{{DNNL_ARG_WEIGHTS, weights}};
    if (bias)
      args[DNNL_ARG_BIAS] = dnnl::memory(deconv.pd.bias_desc(), engine, const_cast<float*>(bias->Data<float>()));
    Tensor src_storage, dst_storage;
    args[DNNL_ARG_SRC] = InLayout(ctx, deconv.src_to_blocked, src, src_storage);
    args[DNNL_ARG_DST] = deconv.dst_to_plain ? ScratchMemory(ctx, deconv.pd.dst_desc(), dst_storage) : dst;
    ExecuteDnnl(ctx, deconv.primitive, deconv.pd, args);
    if (deconv.dst_to_plain) RunReorder(ctx, *deconv.dst_to_plain, args[DNNL_ARG_DST], dst);
  }

  ConvTransposeAttributes attrs_;
  bool has_bias_;  // fixed per node, so the cached primitives either all take a bias or none does
  FusedActivation activation_;  // FusedConvTranspose only
  Tensor constant_weights_;  // shares the initializer's buffer; undefined when W is not constant
  ShapeCache<DnnlDeconv> primitives_;
};

}  // namespace

void RegisterConvTransposeKernels(KernelRegistry& registry) {
  KernelDef def;
  def.op_type = "ConvTranspose";
  def.input_types = {{0, {DataType::kFloat, DataType::kDouble}}};
  registry.Register<ConvTranspose>(def);
  def.op_type = "FusedConvTranspose";
  def.domain = "ai.tessera";
  def.extension_attributes = {"activation_clip"};
  def.since_version = 1;
  registry.Register<ConvTranspose>(std::move(def));
}

}  // namespace tessera::cpu
