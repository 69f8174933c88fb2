// Conv: N-D convolution with groups (depthwise included), strides, dilations, explicit pads or auto_pad
// and an optional bias. float32 with 1 to 3 spatial dims runs on oneDNN; double, other ranks and
// geometries oneDNN rejects use a direct loop.
//
// Activation layout (oneDNN 2.6, AVX-512 host, f32, 1 x C x 56x56 -> C channels, ms per conv):
//                               plain NCHW (gemm:jit)    blocked (brgconv) + reorders in and out
//   3x3, C=256, 2 / 8 threads   19.6 / 6.0               16.6 / 4.2
//   1x1, C=256, 2 / 8 threads    1.9 / 0.60               2.2 / 0.60
//   1x1, C=64,  2 threads        0.16                     0.25
// So spatial kernels let oneDNN pick the activation layout (reordering in and out inside the kernel)
// and 1x1 kernels keep plain NCHW. Through a Session, 3x3 C=256 runs in 5.25 ms on 8 threads.
//
// ai.tessera::FusedConv(X, W, B?, Z?) is Conv followed by `Y += Z` (a residual of Y's shape, or one that
// broadcasts to it) and then `activation` (see FusedActivation); both run as oneDNN post-ops (sum, eltwise),
// so the conv output is written once. The graph pass conv_activation_fusion produces it.
//
// ai.tessera::NchwcConv(X, W, B?, Z?) is FusedConv in a channel-inner layout (nn/nchwc_shapes.h) named by
// attribute `channel_block` (8, 16: nChw8c / nChw16c; 0: NHWC): Y and Z are in it, X is too or is plain NCHW
// (a first conv, e.g. 3 channels).
// With `residual_in_place` = 1 (the graph guarantees nothing else reads Z and Z owns its buffer) Y is written
// over Z, which the sum post-op reads in place, instead of copying Z into a new Y first.
// The primitive is asked for those layouts directly, so consecutive convs (graph pass nchwc_layout) pay no
// reorders; only 2-D float convs run that way, on oneDNN. Its 1x1 convs are oneDNN's jit / brgemm 1x1 kernels,
// whose eltwise post-ops are cheap, so the activation is fused there unless oneDNN still picks a gemm kernel.
// Dense 3x3 stride-1 NchwcConvs with 64+ channels run oneDNN's Winograd algorithm where the CPU has it (AVX-512)
// unless the CPU EP option conv_winograd = 0: ResNet-50 at 2 threads, 23.0 -> 21.5 ms per run (dev VM).
#include <algorithm>
#include <memory>
#include <optional>
#include <string>

#include "providers/cpu/common/dnnl_utils.h"
#include "providers/cpu/common/target_clones.h"
#include "providers/cpu/common/window_geometry.h"
#include "providers/cpu/cpu_ep.h"
#include "providers/cpu/cpu_kernels.h"
#include "providers/cpu/nn/nchwc_shapes.h"

namespace tessera::cpu {
namespace {

struct ConvShapes {
  int64_t batch = 0, in_channels = 0, out_channels = 0, group = 1;
  WindowGeometry window;
  Shape output;
};

ConvShapes ResolveConvShapes(const Node& node, const WindowAttributes& attrs, int64_t group, const Shape& x,
                             const Shape& w, const Tensor* bias) {
  if (x.rank() < 3 || w.rank() != x.rank())
    Fail(ErrorCode::kInvalidArgument, node.Describe(), ": X ", x.ToString(), " and W ", w.ToString(),
         " must have the same rank >= 3 (N, C, spatial...)");
  ConvShapes s;
  s.batch = x[0];
  s.in_channels = x[1];
  s.out_channels = w[0];
  s.group = group;
  if (group < 1 || s.in_channels != w[1] * group || s.out_channels % group != 0)
    Fail(ErrorCode::kInvalidArgument, node.Describe(), ": channel mismatch: X ", x.ToString(), ", W ", w.ToString(),
         ", group ", group, " (need C == W[1] * group and W[0] divisible by group)");
  std::vector<int64_t> spatial(x.dims().begin() + 2, x.dims().end());
  std::vector<int64_t> kernel(w.dims().begin() + 2, w.dims().end());
  if (!attrs.kernel_shape.empty() && attrs.kernel_shape != kernel)
    Fail(ErrorCode::kInvalidArgument, node.Describe(), ": kernel_shape ", Shape(attrs.kernel_shape).ToString(),
         " does not match W ", w.ToString());
  if (bias && (bias->shape().rank() != 1 || bias->shape()[0] != s.out_channels))
    Fail(ErrorCode::kInvalidArgument, node.Describe(), ": bias ", bias->shape().ToString(), " must be [",
         s.out_channels, "] for W ", w.ToString());
  s.window = ResolveWindow(attrs, spatial, kernel, node);
  std::vector<int64_t> out{s.batch, s.out_channels};
  out.insert(out.end(), s.window.output.begin(), s.window.output.end());
  s.output = Shape(std::move(out));
  return s;
}

// Direct convolution, one (image, output channel) plane per task. Accumulates in double.
template <typename T>
void ReferenceConv(const ConvShapes& s, const T* x, const T* w, const T* bias, T* y, const ThreadPool& pool) {
  const WindowGeometry& g = s.window;
  const size_t rank = g.rank();
  const int64_t in_size = g.InputSize(), out_size = g.OutputSize(), k_size = g.KernelSize();
  const int64_t ic_per_group = s.in_channels / s.group, oc_per_group = s.out_channels / s.group;
  pool.ParallelFor(s.batch * s.out_channels, 1, [&](int64_t begin, int64_t end) {
    std::vector<int64_t> out_pos(rank), k_pos(rank);
    for (int64_t task = begin; task < end; ++task) {
      const int64_t n = task / s.out_channels, oc = task % s.out_channels, grp = oc / oc_per_group;
      const T* x_group = x + (n * s.in_channels + grp * ic_per_group) * in_size;
      const T* w_oc = w + oc * ic_per_group * k_size;
      T* y_plane = y + task * out_size;
      for (int64_t o = 0; o < out_size; ++o) {
        for (int64_t r = o, d = static_cast<int64_t>(rank) - 1; d >= 0; --d) {
          out_pos[d] = r % g.output[d];
          r /= g.output[d];
        }
        double acc = bias ? static_cast<double>(bias[oc]) : 0.0;
        for (int64_t k = 0; k < k_size; ++k) {
          int64_t offset = 0;
          bool inside = true;
          for (int64_t r = k, d = static_cast<int64_t>(rank) - 1; d >= 0; --d) {
            const int64_t kd = r % g.kernel[d];
            r /= g.kernel[d];
            const int64_t pos = out_pos[d] * g.strides[d] - g.pad_begin[d] + kd * g.dilations[d];
            inside = inside && pos >= 0 && pos < g.input[d];
            k_pos[d] = pos;
          }
          if (!inside) continue;
          for (size_t d = 0; d < rank; ++d) offset = offset * g.input[d] + k_pos[d];
          for (int64_t ic = 0; ic < ic_per_group; ++ic)
            acc += static_cast<double>(x_group[ic * in_size + offset]) * static_cast<double>(w_oc[ic * k_size + k]);
        }
        y_plane[o] = static_cast<T>(acc);
      }
    }
  });
}


// Small float 1-D convolutions (speech models: depthwise and pointwise convs over a few frames) cost oneDNN more
// in dispatch than in arithmetic: silero VAD's 258-group depthwise conv over 9 frames (12K multiply-adds) took
// 120 us there. They run here instead: per (image, output channel), each (input channel, tap) adds its weight
// times a contiguous (stride 1) or strided run of inputs, the valid output range computed once per tap so the
// inner loop has no padding checks.
constexpr int64_t kSmallConv1dMacs = 1 << 20;

bool IsSmallConv1d(const ConvShapes& s) {
  const WindowGeometry& g = s.window;
  if (g.rank() != 1) return false;
  const int64_t macs = s.batch * s.out_channels * g.output[0] * (s.in_channels / s.group) * g.kernel[0];
  return macs <= kSmallConv1dMacs;
}

// What the output tasks of one SmallConv1d call read.
struct SmallConv1dWork {
  const ConvShapes* s;
  const float *x, *w, *bias;
  float* y;
  int64_t in, out, kernel, stride, dilation, pad, ic_per_group, oc_per_group, depth;
  const int64_t *first, *last;  // per tap: the output range that reads inside the input
  const float* columns;         // gathered inputs [batch * group][out][depth], or null
};

// Output rows [begin, end) of (image, output channel) tasks; built per instruction set (the dot products and
// the scaled runs vectorize to the widest registers the processor has).
TESSERA_TARGET_CLONES("arch=x86-64-v4", "arch=x86-64-v3", "default")
void SmallConv1dTasks(const SmallConv1dWork& c, int64_t begin, int64_t end) {
  const ConvShapes& s = *c.s;
  for (int64_t task = begin; task < end; ++task) {
    const int64_t n = task / s.out_channels, oc = task % s.out_channels, grp = oc / c.oc_per_group;
    const float* w_oc = c.w + oc * c.depth;
    float* row = c.y + task * c.out;
    if (c.columns != nullptr) {
      const float* block = c.columns + (n * s.group + grp) * c.out * c.depth;
      for (int64_t o = 0; o < c.out; ++o) {
        const float* col = block + o * c.depth;
        float acc[16] = {};  // independent partial sums the compiler can keep in vector registers
        int64_t i = 0;
        for (; i + 16 <= c.depth; i += 16)
          for (int j = 0; j < 16; ++j) acc[j] += w_oc[i + j] * col[i + j];
        float sum = c.bias ? c.bias[oc] : 0.0f;
        for (int j = 0; j < 16; ++j) sum += acc[j];
        for (; i < c.depth; ++i) sum += w_oc[i] * col[i];
        row[o] = sum;
      }
      continue;
    }
    const float* x_group = c.x + (n * s.in_channels + grp * c.ic_per_group) * c.in;
    std::fill(row, row + c.out, c.bias ? c.bias[oc] : 0.0f);
    for (int64_t ic = 0; ic < c.ic_per_group; ++ic)
      for (int64_t k = 0; k < c.kernel; ++k) {
        const float weight = w_oc[ic * c.kernel + k];
        const float* channel = x_group + ic * c.in;
        const int64_t shift = k * c.dilation - c.pad, lo = c.first[k], hi = c.last[k];
        if (c.stride == 1) {
          for (int64_t o = lo; o < hi; ++o) row[o] += weight * channel[o + shift];
        } else {
          for (int64_t o = lo; o < hi; ++o) row[o] += weight * channel[o * c.stride + shift];
        }
      }
  }
}

void SmallConv1d(const ConvShapes& s, const float* x, const float* w, const float* bias, float* y,
                 const ThreadPool& pool) {
  const WindowGeometry& g = s.window;
  const int64_t in = g.input[0], out = g.output[0], kernel = g.kernel[0];
  const int64_t stride = g.strides[0], dilation = g.dilations[0], pad = g.pad_begin[0];
  const int64_t ic_per_group = s.in_channels / s.group, oc_per_group = s.out_channels / s.group;
  // Output range [first, last) whose tap k reads inside the input.
  std::vector<int64_t> first(static_cast<size_t>(kernel)), last(static_cast<size_t>(kernel));
  for (int64_t k = 0; k < kernel; ++k) {
    const int64_t shift = k * dilation - pad;  // input position of output 0 at tap k
    int64_t lo = shift >= 0 ? 0 : (-shift + stride - 1) / stride;
    int64_t hi = in - 1 - shift < 0 ? 0 : (in - 1 - shift) / stride + 1;
    first[static_cast<size_t>(k)] = std::min(lo, out);
    last[static_cast<size_t>(k)] = std::max(std::min(hi, out), first[static_cast<size_t>(k)]);
  }
  const int64_t tasks = s.batch * s.out_channels;
  const int64_t depth = ic_per_group * kernel, macs_per_task = out * depth;
  // Few output positions and a long reduction (pointwise or dense convs over a few frames): gather each
  // position's inputs once per (image, group) into columns [out][depth] and take dot products with the weight
  // rows; otherwise each weight scales a run of outputs.
  const bool by_columns = out < 16 && depth >= 16;
  std::vector<float> columns;
  if (by_columns) {
    columns.assign(static_cast<size_t>(s.batch * s.group * out * depth), 0.0f);
    for (int64_t n = 0; n < s.batch; ++n)
      for (int64_t grp = 0; grp < s.group; ++grp) {
        const float* x_group = x + (n * s.in_channels + grp * ic_per_group) * in;
        float* block = columns.data() + (n * s.group + grp) * out * depth;
        for (int64_t ic = 0; ic < ic_per_group; ++ic)
          for (int64_t k = 0; k < kernel; ++k) {
            const int64_t shift = k * dilation - pad;
            for (int64_t o = first[static_cast<size_t>(k)]; o < last[static_cast<size_t>(k)]; ++o)
              block[o * depth + ic * kernel + k] = x_group[ic * in + o * stride + shift];
          }
      }
  }
  const SmallConv1dWork work{&s,       x,          w,      bias,         y,           in,           out,
                             kernel,   stride,     dilation, pad,        ic_per_group, oc_per_group, depth,
                             first.data(), last.data(), by_columns ? columns.data() : nullptr};
  if (tasks * macs_per_task < (1 << 15) || tasks < 2) {
    SmallConv1dTasks(work, 0, tasks);
  } else {
    pool.ParallelFor(tasks, std::max<int64_t>(1, (1 << 14) / std::max<int64_t>(macs_per_task, 1)),
                     [&](int64_t begin, int64_t end) { SmallConv1dTasks(work, begin, end); });
  }
}

// A oneDNN convolution for one (X shape, W shape); `packed_weights` is set when W is a constant and
// the reorders are set when the primitive wants other activation layouts than the user's (dst_to_blocked
// brings the residual into the primitive's dst layout when there is a sum post-op).
struct DnnlConv {
  dnnl::convolution_forward::primitive_desc pd;
  dnnl::convolution_forward primitive;
  std::shared_ptr<DnnlMemoryPool> memories = std::make_shared<DnnlMemoryPool>();  // X, Y, B per concurrent caller
  dnnl::memory::desc src_user, weights_plain, dst_user;  // X, W and Y as the kernel receives them
  dnnl::memory packed_weights;
  std::optional<LayoutReorder> src_to_blocked, dst_to_plain, dst_to_blocked;
  bool activation_fused = false;  // the activation runs as eltwise post-ops
  // NchwcConv: what the inputs' shapes resolved to when the entry was made (its key holds every input shape), so
  // that a step with shapes seen before validates and resolves nothing again.
  Shape y_shape;
  bool sum_residual = false;  // Z has Y's shape and is summed inside the primitive
};

// Adds `z` (unidirectionally broadcast to `y_shape`) to `y`; throws when it does not broadcast. Works row by row
// over Y's last dim (Z's offset for a row computed once, the row added with Z's stride there: 1, or 0 where Z
// broadcasts along it), rows spread over the pool: a [H, W] noise map added to [N, C, H, W] is one pass.
template <typename T>
void AddResidual(const ThreadPool& pool, const Node& node, const Shape& y_shape, T* y, const Shape& z_shape,
                 const T* z) {
  const size_t rank = y_shape.rank();
  if (z_shape.rank() > rank)
    Fail(ErrorCode::kInvalidArgument, node.Describe(), ": Z ", z_shape.ToString(), " does not broadcast to Y ",
         y_shape.ToString());
  std::vector<int64_t> z_strides(rank, 0);
  for (int64_t d = static_cast<int64_t>(rank) - 1, stride = 1, zd = static_cast<int64_t>(z_shape.rank()) - 1; zd >= 0;
       --d, --zd) {
    if (z_shape[zd] != 1 && z_shape[zd] != y_shape[d])
      Fail(ErrorCode::kInvalidArgument, node.Describe(), ": Z ", z_shape.ToString(), " does not broadcast to Y ",
           y_shape.ToString());
    z_strides[d] = z_shape[zd] == 1 ? 0 : stride;
    stride *= z_shape[zd];
  }
  const int64_t count = y_shape.NumElements();
  if (count == 0) return;
  const int64_t width = rank == 0 ? 1 : y_shape[rank - 1];
  const int64_t inner_stride = rank == 0 ? 0 : z_strides[rank - 1];
  const int64_t rows = count / width;
  pool.ParallelFor(rows, std::max<int64_t>(1, 16384 / width), [&](int64_t begin, int64_t end) {
    for (int64_t row = begin; row < end; ++row) {
      int64_t offset = 0;
      for (int64_t r = row, d = static_cast<int64_t>(rank) - 2; d >= 0; --d) {
        offset += (r % y_shape[d]) * z_strides[d];
        r /= y_shape[d];
      }
      T* out = y + row * width;
      const T* in = z + offset;
      if (inner_stride == 1)
        for (int64_t j = 0; j < width; ++j) out[j] += in[j];
      else
        for (int64_t j = 0; j < width; ++j) out[j] += in[0];
    }
  });
}

// How Build sets up a oneDNN convolution.
struct ConvBuildOptions {
  bool sum_residual = false;     // a residual of Y's shape is added by a sum post-op
  bool fuse_activation = false;  // the activation may run as eltwise post-ops
  bool src_blocked = false;      // X arrives in the channel-inner layout `block`
  bool dst_blocked = false;      // Y leaves in the channel-inner layout `block` (NchwcConv)
  int64_t block = 0;             // channel block: 8, 16 or 0 (NHWC)
};

bool ImplementationIs(const dnnl::primitive_desc_base& pd, const char* prefix) {
  return std::string(pd.impl_info_str()).rfind(prefix, 0) == 0;
}

class Conv : public Kernel {
 public:
  explicit Conv(const KernelInfo& info)
      : attrs_(ReadWindowAttributes(info.node())),
        group_(info.node().GetInt("group", 1)),
        has_bias_(info.node().HasInput(2)),
        activation_(info.node().domain.empty() ? FusedActivation{} : ReadFusedActivation(info.node())),
        input_activation_(info.node().op_type == "ActivatedNchwcConv"
                              ? ReadFusedActivation(info.node(), "input_activation")
                              : FusedActivation{}),
        blocked_(info.node().op_type == "NchwcConv" || info.node().op_type == "ActivatedNchwcConv"),
        channel_block_(blocked_ ? info.node().GetInt("channel_block") : 0),
        residual_in_place_(info.node().GetInt("residual_in_place", 0) != 0),
        winograd_(WinogradAllowed(info.ep())),
        constant_weights_(info.ConstantInput(1) ? *info.ConstantInput(1) : Tensor()) {
    if (blocked_ && !IsChannelBlock(channel_block_))
      Fail(ErrorCode::kInvalidModel, info.node().Describe(), ": channel_block must be 8, 16 or 0, got ",
           channel_block_);
  }

  void Compute(KernelContext& ctx) const override {
    const Tensor& x = ctx.Input(0);
    const Tensor& w = ctx.Input(1);
    const Tensor* bias = ctx.OptionalInput(2);
    const Tensor* residual = ctx.node().domain.empty() ? nullptr : ctx.OptionalInput(3);
    if (residual && residual->type() != x.type())
      Fail(ErrorCode::kInvalidArgument, ctx.node().Describe(), ": Z is ", DataTypeName(residual->type()),
           " but X is ", DataTypeName(x.type()));
    if (input_activation_.kind != FusedActivation::Kind::kNone) {
      // ActivatedNchwcConv: NchwcConv of activation(X), from an activated copy (the CUDA EP's depthwise kernel
      // applies it on load; this EP runs the op where a model has it but does not ask the pass for it).
      if (x.type() != DataType::kFloat)
        Fail(ErrorCode::kInvalidArgument, ctx.node().Describe(), ": X must be float, not ", DataTypeName(x.type()));
      Tensor activated = Tensor::Allocate(x.type(), x.shape(), ctx.allocator());
      const float* from = x.Data<float>();
      float* to = activated.Data<float>();
      ctx.thread_pool().ParallelFor(x.NumElements(), 16384, [&](int64_t begin, int64_t end) {
        std::copy(from + begin, from + end, to + begin);
        ApplyActivation(input_activation_, to + begin, end - begin);
      });
      return ComputeBlocked(ctx, activated, w, bias, residual);
    }
    if (blocked_) return ComputeBlocked(ctx, x, w, bias, residual);
    const ConvShapes s = ResolveConvShapes(ctx.node(), attrs_, group_, x.shape(), w.shape(), bias);
    Tensor& y = ctx.Output(0, x.type(), s.output);
    if (y.NumElements() == 0) return;
    // A residual of Y's own shape is summed inside the primitive; a broadcasting one is added afterwards.
    const bool sum_in_primitive = residual && residual->shape() == s.output;
    if (x.type() == DataType::kFloat && IsSmallConv1d(s)) {
      SmallConv1d(s, x.Data<float>(), w.Data<float>(), bias ? bias->Data<float>() : nullptr, y.Data<float>(),
                  ctx.thread_pool());
      Finish(ctx, residual, y.Data<float>(), y);
      return;
    }
    if (x.type() == DataType::kFloat && UseDnnl(s, x)) {
      // oneDNN 2.6's gemm-based 1x1 convolution runs eltwise post-ops about 4x slower than the conv itself
      // (MobileNetV2, Clip): those convs apply the activation afterwards in a vectorized loop.
      ConvBuildOptions options;
      options.sum_residual = sum_in_primitive;
      options.fuse_activation = (!residual || sum_in_primitive) && s.window.KernelSize() != 1;
      std::shared_ptr<const DnnlConv> conv =
          primitives_.Get(ctx, CacheKey(x, w, sum_in_primitive), [&] { return Build(s, options); });
      if (conv->primitive) {
        if (ZeroFilledForPreparation(ctx, conv->pd, y)) return;
        RunDnnl(ctx, *conv, x, w, bias, sum_in_primitive ? residual : nullptr, y);
        if (!conv->activation_fused) Finish(ctx, sum_in_primitive ? nullptr : residual, y.Data<float>(), y);
        return;
      }
    }
    if (x.type() == DataType::kFloat) {
      ReferenceConv(s, x.Data<float>(), w.Data<float>(), bias ? bias->Data<float>() : nullptr, y.Data<float>(),
                    ctx.thread_pool());
      Finish(ctx, residual, y.Data<float>(), y);
    } else {
      ReferenceConv(s, x.Data<double>(), w.Data<double>(), bias ? bias->Data<double>() : nullptr, y.Data<double>(),
                    ctx.thread_pool());
      Finish(ctx, residual, y.Data<double>(), y);
    }
  }

 private:
  static bool UseDnnl(const ConvShapes& s, const Tensor& x) {
    return s.window.rank() <= 3 && x.NumElements() > 0;
  }

  static bool WinogradAllowed(const ExecutionProvider& ep) {
    const auto* cpu = dynamic_cast<const CpuExecutionProvider*>(&ep);
    return cpu == nullptr || cpu->options().conv_winograd;
  }

  // Dense 3x3 stride-1 undilated 2-D convs with channel counts oneDNN's Winograd kernels take (multiples of 16);
  // below 64 channels the transforms cost more than they save.
  static bool WinogradEligible(const ConvShapes& s) {
    const WindowGeometry& g = s.window;
    if (g.rank() != 2 || s.group != 1 || s.in_channels % 16 != 0 || s.out_channels % 16 != 0) return false;
    for (size_t d = 0; d < 2; ++d)
      if (g.kernel[d] != 3 || g.strides[d] != 1 || g.dilations[d] != 1) return false;
    return s.in_channels >= 32 && s.out_channels >= 32;
  }

  static std::vector<int64_t> CacheKey(const Tensor& x, const Tensor& w, bool sum_in_primitive) {
    std::vector<int64_t> key;
    AppendShapeKey(key, x.shape());
    AppendShapeKey(key, w.shape());
    key.push_back(sum_in_primitive);
    return key;
  }

  // NchwcConv: Y and Z blocked, X blocked (rank 5) or plain NCHW; float on oneDNN only.
  void ComputeBlocked(KernelContext& ctx, const Tensor& x, const Tensor& w, const Tensor* bias,
                      const Tensor* residual) const {
    const Node& node = ctx.node();
    const auto wrong_x = [&] {
      Fail(ErrorCode::kInvalidArgument, node.Describe(), ": X ", x.shape().ToString(), " (", DataTypeName(x.type()),
           ") must be float NCHW or blocked with channel block ", channel_block_);
    };
    if (x.type() != DataType::kFloat) wrong_x();
    // Every input shape is in the key: an entry found was validated and resolved for exactly these shapes. The key's
    // buffer is the thread's (no allocation per step; nothing below runs another kernel on this thread).
    thread_local std::vector<int64_t> key;
    key.clear();
    AppendShapeKey(key, x.shape());
    AppendShapeKey(key, w.shape());
    key.push_back(bias != nullptr ? 1 : 0);
    if (bias != nullptr) AppendShapeKey(key, bias->shape());
    key.push_back(residual != nullptr ? 1 : 0);
    if (residual != nullptr) AppendShapeKey(key, residual->shape());
    std::shared_ptr<const DnnlConv> conv = primitives_.Get(ctx, key, [&] {
      const bool x_blocked = x.shape().rank() == 5;
      // X's channel count comes from W (a blocked X may carry zero padding channels).
      const int64_t in_channels = w.shape().rank() >= 2 ? w.shape()[1] * group_ : -1;
      const Shape x_plain = x_blocked ? PlainShapeOfBlocked(node, "X", x.shape(), in_channels) : x.shape();
      if (x_plain.rank() != 4 || (x_blocked && x.shape()[4] != BlockWidth(channel_block_, in_channels))) wrong_x();
      const ConvShapes s = ResolveConvShapes(node, attrs_, group_, x_plain, w.shape(), bias);
      const Shape y_shape = BlockedShapeOf(node, s.output, channel_block_);
      const bool sum_in_primitive = residual && residual->shape() == y_shape;
      ConvBuildOptions options;
      options.sum_residual = sum_in_primitive;
      options.fuse_activation = !residual || sum_in_primitive;
      options.src_blocked = x_blocked;
      options.dst_blocked = true;
      options.block = channel_block_;
      DnnlConv built = Build(s, options);
      built.y_shape = y_shape;
      built.sum_residual = sum_in_primitive;
      return built;
    });
    const bool sum_in_primitive = conv->sum_residual;
    const bool in_place = sum_in_primitive && residual_in_place_;
    if (in_place) ctx.SetOutput(0, Value(*residual));
    Tensor& y = in_place ? const_cast<Tensor&>(*residual) : ctx.Output(0, x.type(), conv->y_shape);
    if (y.NumElements() == 0) return;
    if (!conv->primitive)
      Fail(ErrorCode::kNotImplemented, node.Describe(), ": oneDNN has no convolution for X ", x.shape().ToString(),
           " and W ", w.shape().ToString());
    if (ZeroFilledForPreparation(ctx, conv->pd, y)) return;  // in place, Y is Z at its last use: nothing else reads it
    RunDnnl(ctx, *conv, x, w, bias, sum_in_primitive ? residual : nullptr, y);
    if (!conv->activation_fused) Finish(ctx, sum_in_primitive ? nullptr : residual, y.Data<float>(), y);
  }

  // The residual and activation for paths that did not fuse them into the primitive.
  template <typename T>
  void Finish(KernelContext& ctx, const Tensor* residual, T* y_data, const Tensor& y) const {
    if (residual) AddResidual(ctx.thread_pool(), ctx.node(), y.shape(), y_data, residual->shape(), residual->Data<T>());
    if (activation_.kind == FusedActivation::Kind::kNone) return;
    ctx.thread_pool().ParallelFor(y.NumElements(), 16384, [&](int64_t begin, int64_t end) {
      ApplyActivation(activation_, y_data + begin, end - begin);
    });
  }

  // Builds the primitive for `s`; returns an entry without a primitive when oneDNN rejects the geometry.
  // Plain 1x1 convs keep NCHW (gemm); blocked convs ask for the user's layouts, falling back to layouts of
  // oneDNN's choice (plus reorders) when only the reference kernel takes those; other convs let oneDNN choose.
  DnnlConv Build(const ConvShapes& s, const ConvBuildOptions& options) const {
    using dnnl::memory;
    const WindowGeometry& g = s.window;
    memory::dims src{s.batch, s.in_channels}, dst{s.batch, s.out_channels}, weights;
    src.insert(src.end(), g.input.begin(), g.input.end());
    dst.insert(dst.end(), g.output.begin(), g.output.end());
    if (s.group > 1) weights = {s.group, s.out_channels / s.group, s.in_channels / s.group};
    else weights = {s.out_channels, s.in_channels};
    weights.insert(weights.end(), g.kernel.begin(), g.kernel.end());
    memory::dims dilations;
    for (int64_t d : g.dilations) dilations.push_back(d - 1);  // oneDNN counts the gaps
    DnnlConv conv;
    conv.src_user = options.src_blocked ? BlockedF32Desc(src, options.block) : PlainF32Desc(src);
    conv.dst_user = options.dst_blocked ? BlockedF32Desc(dst, options.block) : PlainF32Desc(dst);
    // A first conv (plain NCHW X) with 16 output channels writing NHWC: nChw16c holds the same bytes as NHWC when C
    // is 16, and oneDNN has a direct kernel from NCHW into nChw16c but none into NHWC, which would reorder X first
    // (RetinaFace's 3-channel 512x512 input: 108 us of its conv's 300).
    if (options.dst_blocked && options.block == 0 && !options.src_blocked && s.out_channels == 16 && s.group == 1)
      conv.dst_user = BlockedF32Desc(dst, 16);
    conv.weights_plain = PlainF32Desc(weights);
    auto any = [](const memory::dims& d) { return memory::desc(d, memory::data_type::f32, memory::format_tag::any); };
    const memory::desc bias = has_bias_ ? PlainF32Desc({s.out_channels}) : memory::desc();
    auto create = [&](const memory::desc& src_desc, const memory::desc& dst_desc, bool fuse_activation,
                      dnnl::algorithm algorithm =
                          dnnl::algorithm::convolution_direct) -> std::optional<dnnl::convolution_forward::primitive_desc> {
      dnnl::post_ops ops;
      if (options.sum_residual) ops.append_sum(1.0f);
      if (fuse_activation) AppendActivation(ops, activation_);
      dnnl::primitive_attr attr;
      attr.set_post_ops(ops);
      try {
        dnnl::convolution_forward::desc desc(dnnl::prop_kind::forward_inference, algorithm,
                                            src_desc, any(weights), bias, dst_desc, ToDnnlDims(g.strides), dilations,
                                            ToDnnlDims(g.pad_begin), ToDnnlDims(g.pad_end));
        return dnnl::convolution_forward::primitive_desc(desc, DnnlAttr(attr), DnnlEngine());
      } catch (const dnnl::error&) {
        return std::nullopt;
      }
    };
    const bool blocked = options.dst_blocked, fixed_layouts = blocked || g.KernelSize() == 1;
    conv.activation_fused = options.fuse_activation && activation_.kind != FusedActivation::Kind::kNone;
    auto pd = create(fixed_layouts ? conv.src_user : any(src), fixed_layouts ? conv.dst_user : any(dst),
                     conv.activation_fused);
    // A plain X with NHWC Y has only the reference kernel: reorder X instead (or, failing that, both).
    if (pd && blocked && ImplementationIs(*pd, "ref")) pd = create(any(src), conv.dst_user, conv.activation_fused);
    if (pd && blocked && ImplementationIs(*pd, "ref")) pd = create(any(src), any(dst), conv.activation_fused);
    if (pd && blocked && conv.activation_fused && ImplementationIs(*pd, "gemm")) {
      conv.activation_fused = false;
      pd = create(pd->src_desc(), pd->dst_desc(), false);
    }
    // Winograd takes only oneDNN's own blocked activation layout: X and Y are reordered inside the kernel, which
    // still leaves ResNet-50's 3x3 convs ~25% faster in the model (oneDNN 2.6, AVX-512; unavailable elsewhere).
    // Its kernels fuse ReLU but not SiLU (YOLO's activation): the activation then runs as its own pass over Y
    // (Finish), which still leaves a 96-channel 52x52 conv 0.92 -> 0.43 ms (standalone, 2 threads, reorders in).
    if (pd && blocked && winograd_ && WinogradEligible(s)) {
      auto winograd = create(any(src), any(dst), conv.activation_fused, dnnl::algorithm::convolution_winograd);
      bool activation_apart = false;
      if (!winograd && conv.activation_fused) {
        winograd = create(any(src), any(dst), false, dnnl::algorithm::convolution_winograd);
        activation_apart = true;
      }
      if (winograd && !ImplementationIs(*winograd, "ref")) {
        pd = winograd;
        if (activation_apart) conv.activation_fused = false;
      }
    }
    if (!pd) return conv;
    conv.pd = *pd;
    conv.primitive = dnnl::convolution_forward(conv.pd);
    conv.src_to_blocked = MakeReorder(conv.src_user, conv.pd.src_desc());
    conv.dst_to_plain = MakeReorder(conv.pd.dst_desc(), conv.dst_user);
    if (options.sum_residual) conv.dst_to_blocked = MakeReorder(conv.dst_user, conv.pd.dst_desc());
    if (constant_weights_.defined()) {
      dnnl::memory plain(conv.weights_plain, DnnlEngine(), const_cast<void*>(constant_weights_.raw_data()));
      conv.packed_weights = ReorderInto(plain, conv.pd.weights_desc());
    }
    return conv;
  }

  // `residual` (Y's shape and layout) is set exactly when the primitive has a sum post-op.
  static void RunDnnl(KernelContext& ctx, const DnnlConv& conv, const Tensor& x, const Tensor& w, const Tensor* bias,
                      const Tensor* residual, Tensor& y) {
    const dnnl::engine& engine = DnnlEngine();
    DnnlMemoryPool::Lease bound = conv.memories->Borrow();
    const dnnl::memory& src = bound.Bind(0, conv.src_user, x.Data<float>());
    const dnnl::memory& dst = bound.Bind(1, conv.dst_user, y.Data<float>());
    dnnl::memory weights = conv.packed_weights;
    if (!weights) {
      weights = dnnl::memory(conv.weights_plain, engine, const_cast<float*>(w.Data<float>()));
      if (conv.pd.weights_desc() != conv.weights_plain) weights = ReorderInto(weights, conv.pd.weights_desc());
    }
    dnnl::memory bias_memory;
    if (bias) bias_memory = bound.Bind(2, [&] { return conv.pd.bias_desc(); }, bias->Data<float>());
    Tensor src_storage, dst_storage;
    const dnnl::memory src_arg = InLayout(ctx, conv.src_to_blocked, src, src_storage);
    const dnnl::memory dst_arg = conv.dst_to_plain ? ScratchMemory(ctx, conv.pd.dst_desc(), dst_storage) : dst;
    if (residual) {
      dnnl::memory z(conv.dst_user, engine, const_cast<float*>(residual->Data<float>()));
      if (conv.dst_to_blocked)
        RunReorder(ctx, *conv.dst_to_blocked, z, dst_arg);
      else if (residual->raw_data() != y.raw_data())
        std::copy_n(residual->Data<float>(), residual->NumElements(), y.Data<float>());
    }
    const std::array<DnnlArg, 4> args = {DnnlArg{DNNL_ARG_SRC, &src_arg}, DnnlArg{DNNL_ARG_WEIGHTS, &weights},
                                         DnnlArg{DNNL_ARG_DST, &dst_arg}, DnnlArg{DNNL_ARG_BIAS, &bias_memory}};
    ExecuteDnnl(ctx, conv.primitive, conv.pd, std::span<const DnnlArg>(args.data(), bias ? 4 : 3));
    if (conv.dst_to_plain) RunReorder(ctx, *conv.dst_to_plain, dst_arg, dst);
  }

  WindowAttributes attrs_;
  int64_t group_;
  bool has_bias_;  // fixed per node, so the cached primitives either all take a bias or none does
  FusedActivation activation_;  // FusedConv and NchwcConv only
  FusedActivation input_activation_;  // ActivatedNchwcConv only
  bool blocked_;  // NchwcConv
  int64_t channel_block_;  // NchwcConv only
  bool residual_in_place_;  // NchwcConv only
  bool winograd_;  // NchwcConv: eligible convs may use the Winograd algorithm (CPU EP option conv_winograd)
  Tensor constant_weights_;  // shares the initializer's buffer; undefined when W is not constant
  ShapeCache<DnnlConv> primitives_;
};

}  // namespace

void RegisterConvKernels(KernelRegistry& registry) {
  KernelDef def;
  def.op_type = "Conv";
  def.input_types = {{0, {DataType::kFloat, DataType::kDouble}}};
  registry.Register<Conv>(def);
  def.op_type = "FusedConv";
  def.domain = "ai.tessera";
  def.extension_attributes = {"activation_clip"};  // the clamp after the activation: AppendActivation / ApplyActivation
  def.input_types = {{0, {DataType::kFloat, DataType::kDouble}}, {3, {DataType::kFloat, DataType::kDouble}}};
  registry.Register<Conv>(def);
  def.op_type = "NchwcConv";
  def.input_types = {{0, {DataType::kFloat}}, {3, {DataType::kFloat}}};
  def.may_alias = true;  // residual_in_place
  registry.Register<Conv>(def);
  def.op_type = "ActivatedNchwcConv";  // NchwcConv of input_activation(X); see CpuExecutionProvider::PrefersFusion
  def.extension_attributes.clear();    // depthwise_input_activation leaves clamped producers alone
  registry.Register<Conv>(std::move(def));
}

}  // namespace tessera::cpu
