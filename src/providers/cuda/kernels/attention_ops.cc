// ai.tessera::Attention (graph/passes/attention_fusion): checks and geometry shared with the CPU kernel
// (tessera/ep/attention_geometry.h), the fused device kernel in attention.cu. The cache-update form
// (graph/passes/cache_update_fusion) writes its rows in the one-query kernel's launch (attention_decode.cu) when it
// can, else with ScatterElements' kernel before the attention.
#include <array>

#include "tessera/ep/attention_geometry.h"
#include "providers/cuda/kernels/attention.h"
#include "providers/cuda/kernels/cuda_kernels.h"
#include "providers/cuda/kernels/kernel_utils.h"
#include "providers/cuda/step_graphs.h"

namespace tessera::cuda {

namespace {

// A cache update of the cache-update form (graph/passes/cache_update_fusion.h) not yet written.
struct PendingUpdate {
  const Tensor* indices = nullptr;
  const Tensor* updates = nullptr;
  Tensor* cache = nullptr;  // the updated cache (output 1 or 2, or scratch)
  int64_t axis = 0;
};

// The tensor the attention reads at `operand` (1: K, 2: V): the input, or in the cache-update form output `operand`
// holding the input (its own buffer when the executor hands it over for an in-place update, else a copy made on
// the stream); the updates themselves are written later (`pending`), by the one-query kernel or ScatterElements'.
const Tensor& ReadCache(KernelContext& ctx, size_t operand, int64_t axis, Tensor& scratch, PendingUpdate& pending) {
  const Tensor& cache = ctx.Input(operand);
  if (!UpdatesCache(ctx, operand)) return cache;
  const size_t first = operand == 1 ? kKeyIndicesInput : kValueIndicesInput;
  const Tensor& indices = ctx.Input(first);
  const Tensor& updates = ctx.Input(first + 1);
  CheckCacheUpdate(ctx.node(), operand == 1 ? "K" : "V", cache, indices, updates, axis);
  Tensor& out = ctx.NumOutputs() > operand ? ctx.Output(operand, cache.type(), cache.shape())
                                           : (scratch = Tensor::Allocate(cache.type(), cache.shape(), ctx.allocator()));
  if (out.raw_data() != cache.raw_data() && out.SizeInBytes() > 0)
    CheckCuda(cudaMemcpyAsync(out.raw_data(), cache.raw_data(), out.SizeInBytes(), cudaMemcpyDeviceToDevice,
                              StreamOf(ctx)),
              ctx.node(), ": copying the cache");
  pending = {&indices, &updates, &out, axis};
  return out;
}

// Whether the one-query kernel can write `p` itself (its blocks each own one (batch, head) of the cache: no
// broadcasting of the cache there), filling `u`.
bool FuseUpdate(const PendingUpdate& p, const std::array<int64_t, 4>& axes, const AttentionGeometry& g,
                launch::AttentionArgs::CacheUpdate& u) {
  if (p.cache == nullptr) return true;
  const Shape& cache = p.cache->shape();
  if (cache[axes[0]] != g.batch || cache[axes[1]] != g.heads) return false;
  const Shape& shape = p.updates->shape();
  int64_t contiguous[4];
  int64_t stride = 1;
  for (size_t d = 4; d-- > 0;) {
    contiguous[d] = stride;
    stride *= shape[d];
  }
  for (size_t i = 0; i < 4; ++i) {
    u.dims[i] = shape[axes[i]];
    u.strides[i] = contiguous[axes[i]];
  }
  u.indices = p.indices->raw_data();
  u.int64_indices = p.indices->type() == DataType::kInt64;
  u.updates = p.updates->raw_data();
  return true;
}

void LaunchScatter(KernelContext& ctx, const PendingUpdate& p) {
  if (p.cache == nullptr || p.indices->NumElements() == 0) return;
  launch::ScatterElementsGeometry geometry;
  geometry.rank = 4;
  geometry.axis = static_cast<int>(p.axis);
  geometry.axis_dim = p.cache->shape()[p.axis];
  int64_t stride = 1;
  for (int d = 4; d-- > 0;) {
    geometry.dims[d] = p.indices->shape()[d];
    geometry.data_strides[d] = stride;
    stride *= p.cache->shape()[d];
  }
  CheckLaunch(ctx,
              launch::ScatterElements(static_cast<int>(SizeOf(p.cache->type())), p.cache->raw_data(),
                                      p.indices->raw_data(), p.indices->type() == DataType::kInt64,
                                      p.updates->raw_data(), geometry, StreamOf(ctx)),
              "cache update launch");
}

class AttentionKernel : public Kernel {
 public:
  explicit AttentionKernel(const KernelInfo& info)
      : ep_(CudaEpOf(info)), attributes_(ReadAttentionAttributes(info.node())) {}

  void Compute(KernelContext& ctx) const override {
    DeviceGuard guard(ep_.ordinal());
    const Tensor& q = ctx.Input(0);
    Tensor k_scratch, v_scratch;
    PendingUpdate k_pending, v_pending;
    const Tensor& k = ReadCache(ctx, 1, attributes_.k_axes[2], k_scratch, k_pending);
    const Tensor& v = ReadCache(ctx, 2, attributes_.v_axes[2], v_scratch, v_pending);
    const Tensor* mask = ctx.OptionalInput(3);
    const AttentionGeometry g = MakeAttentionGeometry(ctx.node(), attributes_, q, k, v, mask);
    Tensor& y = ctx.Output(0, q.type(), g.output_shape);
    launch::AttentionArgs args;
    args.type = FloatElementType(ctx, q.type());
    const size_t element = SizeOf(q.type());
    args.q = static_cast<const char*>(q.raw_data()) + g.q_offset * element;
    args.k = static_cast<const char*>(k.raw_data()) + g.k_offset * element;
    args.v = static_cast<const char*>(v.raw_data()) + g.v_offset * element;
    args.mask = mask != nullptr ? mask->raw_data() : nullptr;
    args.bool_mask = g.bool_mask;
    args.out = y.raw_data();
    args.batch = g.batch;
    args.heads = g.heads;
    args.q_len = g.q_len;
    args.k_len = g.k_len;
    args.head_size = g.head_size;
    args.v_head_size = g.v_head_size;
    for (int i = 0; i < 4; ++i) {
      args.q_strides[i] = g.q[i];
      args.k_strides[i] = g.k[i];
      args.v_strides[i] = g.v[i];
      args.out_strides[i] = g.out[i];
      args.mask_strides[i] = g.mask[i];
    }
    args.scale = attributes_.scale;
    args.masked_rows_zero = attributes_.masked_rows_zero;
    // The cache rows of a decoding step go into the one-query kernel's launch; otherwise ScatterElements' kernel
    // writes them first.
    launch::AttentionArgs::CacheUpdate k_update, v_update;
    const bool fused = y.NumElements() > 0 && launch::AttentionOneQueryFits(args) &&
                       FuseUpdate(k_pending, attributes_.k_axes, g, k_update) &&
                       FuseUpdate(v_pending, attributes_.v_axes, g, v_update);
    if (fused) {
      args.k_update = k_update;
      args.v_update = v_update;
    } else {
      LaunchScatter(ctx, k_pending);
      LaunchScatter(ctx, v_pending);
    }
    if (y.NumElements() == 0) return;
    // One launch, replayed from a step graph in eager sessions (1-3 us of host time instead of ~4): the launch
    // depends on the operands' addresses and shapes and the node's attributes only.
    const cudaStream_t stream = StreamOf(ctx);
    StepKey key(stream);
    key.Add(args.q).Add(args.k).Add(args.v).Add(args.mask).Add(args.out).Add(static_cast<uint64_t>(q.type()));
    key.AddShape(q.shape()).AddShape(k.shape()).AddShape(v.shape()).AddShape(mask != nullptr ? mask->shape() : Shape{});
    // A fused cache update: its operands (the dims and strides follow from the indices' shape and the node).
    for (const PendingUpdate* p : {&k_pending, &v_pending})
      if (fused && p->cache != nullptr)
        key.Add(p->indices->raw_data()).Add(p->updates->raw_data()).AddShape(p->indices->shape())
            .Add(static_cast<uint64_t>(p->indices->type()));
    steps_.Run(ctx, ep_, nullptr, key, StepLibrary::kNone, [&](cudaStream_t on, const LibraryHandles::Lease*) {
      const cudaError_t status = launch::Attention(args, on);
      if (status == cudaErrorInvalidConfiguration)
        Fail(ErrorCode::kNotImplemented, ctx.node(), ": head size ", g.head_size, " with ", g.batch * g.heads,
             " batch x heads and ", g.q_len, " queries does not fit the fused kernel's blocks");
      CheckLaunch(ctx, status, "Attention launch");
    });
  }

 private:
  const CudaExecutionProvider& ep_;
  AttentionAttributes attributes_;
  StepGraphs steps_;
};

}  // namespace

void RegisterAttentionKernels(KernelRegistry& registry) {
  registry.Register<AttentionKernel>(AttentionKernelDef());
}

}  // namespace tessera::cuda
