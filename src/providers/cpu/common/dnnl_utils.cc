#include "providers/cpu/common/dnnl_utils.h"

#include <omp.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <string>
#include <unordered_map>

#include "providers/cpu/common/target_clones.h"
#include "providers/cpu/common/vector_math.h"

namespace tessera::cpu {

const dnnl::engine& DnnlEngine() {
  static const dnnl::engine engine(dnnl::engine::kind::cpu, 0);
  return engine;
}

dnnl::primitive_attr DnnlAttr(dnnl::primitive_attr base) {
  base.set_scratchpad_mode(dnnl::scratchpad_mode::user);
  return base;
}

dnnl::memory::dims ToDnnlDims(const std::vector<int64_t>& dims) { return {dims.begin(), dims.end()}; }

dnnl::memory::desc PlainF32Desc(const dnnl::memory::dims& dims) {
  dnnl::memory::dims strides(dims.size(), 1);
  for (size_t i = dims.size(); i-- > 1;) strides[i - 1] = strides[i] * std::max<int64_t>(dims[i], 1);
  return dnnl::memory::desc(dims, dnnl::memory::data_type::f32, strides);
}

dnnl::memory::desc BlockedF32Desc(const dnnl::memory::dims& dims, int64_t block) {
  using tag = dnnl::memory::format_tag;
  const tag layout = block == 0 ? tag::nhwc : block == 16 ? tag::nChw16c : tag::nChw8c;
  return dnnl::memory::desc(dims, dnnl::memory::data_type::f32, layout);
}

void UseIntraOpThreads(const KernelContext& ctx) {
  // OpenMP's count is per calling thread; oneDNN parallelizes with OpenMP from the calling thread.
  const int threads = ctx.thread_pool().num_threads();
  if (omp_get_max_threads() != threads) omp_set_num_threads(threads);
}

namespace {

// The calling thread's stream on DnnlEngine(). A CPU stream executes on its caller and holds no work
// between calls, so one per thread serves every primitive that thread runs.
dnnl::stream& ThreadStream() {
  thread_local dnnl::stream stream(DnnlEngine());
  return stream;
}

}  // namespace

namespace {

constexpr size_t kMaxDnnlArgs = 24;

// The calling thread's scratchpad for primitives: one buffer grown to the largest size asked for, and one oneDNN
// memory object per size over it. A primitive runs on its caller's thread and returns before the thread runs
// another, so one buffer per thread serves them all, with no allocation per call once the sizes have been seen.
class ThreadScratchpad {
 public:
  ~ThreadScratchpad() { std::free(data_); }

  const dnnl::memory& For(const dnnl_memory_desc_t& md, size_t bytes) {
    if (bytes > capacity_) {
      const size_t rounded = (bytes + 4095) / 4096 * 4096;
      void* grown = std::aligned_alloc(4096, rounded);
      if (grown == nullptr) Fail(ErrorCode::kOutOfMemory, "oneDNN scratchpad of ", bytes, " bytes: out of host memory");
      std::free(data_);
      data_ = grown;
      capacity_ = rounded;
      by_size_.clear();  // they point at the old buffer
    }
    auto it = by_size_.find(bytes);
    if (it == by_size_.end()) it = by_size_.emplace(bytes, dnnl::memory(dnnl::memory::desc(md), DnnlEngine(), data_)).first;
    return it->second;
  }

 private:
  void* data_ = nullptr;
  size_t capacity_ = 0;
  std::unordered_map<size_t, dnnl::memory> by_size_;
};

void ExecuteDnnlArgs(KernelContext& ctx, const dnnl::primitive& primitive, const dnnl::primitive_desc_base& pd,
                     std::array<dnnl_exec_arg_t, kMaxDnnlArgs>& c_args, int count) {
  UseIntraOpThreads(ctx);
  const dnnl_memory_desc_t* scratch_md = dnnl_primitive_desc_query_md(pd.get(), dnnl_query_scratchpad_md, 0);
  const size_t scratch_bytes = scratch_md != nullptr ? dnnl_memory_desc_get_size(scratch_md) : 0;
  if (scratch_bytes > 0) {
    thread_local ThreadScratchpad scratchpad;
    c_args[count++] = {DNNL_ARG_SCRATCHPAD, scratchpad.For(*scratch_md, scratch_bytes).get()};
  }
  dnnl::stream& stream = ThreadStream();
  const dnnl_status_t status = dnnl_primitive_execute(primitive.get(), stream.get(), count, c_args.data());
  if (status != dnnl_success)
    Fail(ErrorCode::kRuntime, ctx.node().Describe(), ": oneDNN could not execute its primitive (status ",
         static_cast<int>(status), ")");
  stream.wait();
}

void CheckArgCount(const KernelContext& ctx, size_t count) {
  if (count >= kMaxDnnlArgs)
    Fail(ErrorCode::kRuntime, ctx.node().Describe(), ": ", count, " oneDNN arguments (at most ", kMaxDnnlArgs - 1,
         ")");
}

}  // namespace

bool ZeroFilledForPreparation(const KernelContext& ctx, const dnnl::primitive_desc_base& pd, Tensor& y) {
  if (!ctx.preparing_only() || std::string(pd.impl_info_str()).find("gemm") != std::string::npos) return false;
  std::memset(y.raw_data(), 0, y.SizeInBytes());
  return true;
}

void ExecuteDnnl(KernelContext& ctx, const dnnl::primitive& primitive, const dnnl::primitive_desc_base& pd,
                 const std::unordered_map<int, dnnl::memory>& args) {
  CheckArgCount(ctx, args.size());
  std::array<dnnl_exec_arg_t, kMaxDnnlArgs> c_args;
  int count = 0;
  for (const auto& [arg, memory] : args) c_args[count++] = {arg, memory.get()};
  ExecuteDnnlArgs(ctx, primitive, pd, c_args, count);
}

void ExecuteDnnl(KernelContext& ctx, const dnnl::primitive& primitive, const dnnl::primitive_desc_base& pd,
                 std::span<const DnnlArg> args) {
  CheckArgCount(ctx, args.size());
  std::array<dnnl_exec_arg_t, kMaxDnnlArgs> c_args;
  int count = 0;
  for (const DnnlArg& a : args) c_args[count++] = {a.arg, a.memory->get()};
  ExecuteDnnlArgs(ctx, primitive, pd, c_args, count);
}

DnnlMemoryPool::Lease DnnlMemoryPool::Borrow() {
  std::lock_guard<std::mutex> lock(mutex_);
  if (free_.empty()) return Lease(*this, std::make_unique<Set>());
  std::unique_ptr<Set> set = std::move(free_.back());
  free_.pop_back();
  return Lease(*this, std::move(set));
}

void DnnlMemoryPool::Return(std::unique_ptr<Set> set) {
  std::lock_guard<std::mutex> lock(mutex_);
  free_.push_back(std::move(set));
}

dnnl::memory ReorderInto(const dnnl::memory& from, const dnnl::memory::desc& to_desc) {
  dnnl::memory to(to_desc, DnnlEngine());
  dnnl::stream& stream = ThreadStream();
  dnnl::reorder(from, to).execute(stream, const_cast<dnnl::memory&>(from), to);
  stream.wait();
  return to;
}

void AppendShapeKey(std::vector<int64_t>& key, const Shape& shape) {
  if (key.empty()) key.reserve(32);  // keys of a few shapes: one allocation, not one per doubling
  key.push_back(static_cast<int64_t>(shape.rank()));
  key.insert(key.end(), shape.dims().begin(), shape.dims().end());
}

namespace {

// Float activations call vector_math.h's branch-free Exp / Tanh / Erf so the loops below vectorize.
template <typename T>
__attribute__((always_inline)) inline T Activate(const FusedActivation& a, T x) {
  using K = FusedActivation::Kind;
  const T alpha = a.alpha, beta = a.beta;
  switch (a.kind) {
    case K::kNone: return x;
    case K::kRelu: return x > T(0) ? x : T(0);
    case K::kLeakyRelu: return x >= T(0) ? x : alpha * x;
    case K::kClip: return std::min(std::max(x, alpha), beta);
    case K::kSigmoid: return T(1) / (T(1) + Exp(-x));
    case K::kHardSigmoid: return std::min(T(1), std::max(T(0), alpha * x + beta));
    case K::kHardSwish: return x * std::min(T(1), std::max(T(0), x / T(6) + T(0.5)));
    case K::kTanh: return Tanh(x);
    case K::kGelu: return T(0.5) * x * (T(1) + Erf(x / std::sqrt(T(2))));
    case K::kGeluTanh:
      return T(0.5) * x * (T(1) + Tanh(std::sqrt(T(2) / T(M_PI)) * (x + T(0.044715) * x * x * x)));
    case K::kSwish: return x / (T(1) + Exp(-alpha * x));
  }
  return x;
}

template <typename T, FusedActivation::Kind kKind>
__attribute__((always_inline)) inline void ApplyKind(const FusedActivation& a, T* data, int64_t count) {
  const FusedActivation fixed{kKind, a.alpha, a.beta};  // the switch in Activate folds away per loop
  for (int64_t i = 0; i < count; ++i) data[i] = Activate(fixed, data[i]);
}

template <typename T>
__attribute__((always_inline)) inline void ApplyKindTo(const FusedActivation& a, T* data, int64_t count) {
  using K = FusedActivation::Kind;
  switch (a.kind) {
    case K::kNone: return;
    case K::kRelu: return ApplyKind<T, K::kRelu>(a, data, count);
    case K::kLeakyRelu: return ApplyKind<T, K::kLeakyRelu>(a, data, count);
    case K::kClip: return ApplyKind<T, K::kClip>(a, data, count);
    case K::kSigmoid: return ApplyKind<T, K::kSigmoid>(a, data, count);
    case K::kHardSigmoid: return ApplyKind<T, K::kHardSigmoid>(a, data, count);
    case K::kHardSwish: return ApplyKind<T, K::kHardSwish>(a, data, count);
    case K::kTanh: return ApplyKind<T, K::kTanh>(a, data, count);
    case K::kGelu: return ApplyKind<T, K::kGelu>(a, data, count);
    case K::kGeluTanh: return ApplyKind<T, K::kGeluTanh>(a, data, count);
    case K::kSwish: return ApplyKind<T, K::kSwish>(a, data, count);
  }
}

// The activation, then its activation_clip, over blocks small enough to stay in L1 between the two passes.
template <typename T>
__attribute__((always_inline)) inline void ApplyActivationTo(const FusedActivation& a, T* data, int64_t count) {
  if (!a.clamp || a.kind == FusedActivation::Kind::kNone) return ApplyKindTo(a, data, count);
  constexpr int64_t kBlock = 2048;
  const T lo = a.clamp_min, hi = a.clamp_max;
  for (int64_t begin = 0; begin < count; begin += kBlock) {
    const int64_t n = std::min(kBlock, count - begin);
    ApplyKindTo(a, data + begin, n);
    for (int64_t i = begin; i < begin + n; ++i) data[i] = std::min(std::max(data[i], lo), hi);
  }
}

}  // namespace


static void AppendActivationKind(dnnl::post_ops& ops, const FusedActivation& a) {
  using K = FusedActivation::Kind;
  using dnnl::algorithm;
  switch (a.kind) {
    case K::kNone: return;
    case K::kRelu: return ops.append_eltwise(1.0f, algorithm::eltwise_relu, 0.0f, 0.0f);
    case K::kLeakyRelu: return ops.append_eltwise(1.0f, algorithm::eltwise_relu, a.alpha, 0.0f);
    case K::kClip: return ops.append_eltwise(1.0f, algorithm::eltwise_clip, a.alpha, a.beta);
    case K::kSigmoid: return ops.append_eltwise(1.0f, algorithm::eltwise_logistic, 0.0f, 0.0f);
    case K::kHardSigmoid:  // oneDNN 2.6 has no hardsigmoid: alpha * x + beta, then clip to [0, 1]
      ops.append_eltwise(1.0f, algorithm::eltwise_linear, a.alpha, a.beta);
      return ops.append_eltwise(1.0f, algorithm::eltwise_clip, 0.0f, 1.0f);
    case K::kHardSwish: return ops.append_eltwise(1.0f, algorithm::eltwise_hardswish, 0.0f, 0.0f);
    case K::kTanh: return ops.append_eltwise(1.0f, algorithm::eltwise_tanh, 0.0f, 0.0f);
    case K::kGelu: return ops.append_eltwise(1.0f, algorithm::eltwise_gelu_erf, 0.0f, 0.0f);
    case K::kGeluTanh: return ops.append_eltwise(1.0f, algorithm::eltwise_gelu_tanh, 0.0f, 0.0f);
    case K::kSwish: return ops.append_eltwise(1.0f, algorithm::eltwise_swish, a.alpha, 0.0f);
  }
}

void AppendActivation(dnnl::post_ops& ops, const FusedActivation& a) {
  using K = FusedActivation::Kind;
  using dnnl::algorithm;
  if (!a.clamp || a.kind == K::kNone) return AppendActivationKind(ops, a);
  // The clamp after the activation. A clip post-op right after another clip came out with the first one's limits
  // only (oneDNN 2.6, FusedConvTest.ActivationClipClampsTheActivation), so where the activation ends with a clip the
  // clamp folds into it: clipping to [a, b] then to [c, d] is clipping to [clamp(a), clamp(b)] with clamp = [c, d].
  const auto clamp = [&](float v) { return std::min(std::max(v, a.clamp_min), a.clamp_max); };
  if (a.kind == K::kClip) return ops.append_eltwise(1.0f, algorithm::eltwise_clip, clamp(a.alpha), clamp(a.beta));
  if (a.kind == K::kHardSigmoid) {
    ops.append_eltwise(1.0f, algorithm::eltwise_linear, a.alpha, a.beta);
    return ops.append_eltwise(1.0f, algorithm::eltwise_clip, clamp(0.0f), clamp(1.0f));
  }
  AppendActivationKind(ops, a);
  ops.append_eltwise(1.0f, algorithm::eltwise_clip, a.clamp_min, a.clamp_max);
}

TESSERA_TARGET_CLONES("arch=x86-64-v4", "arch=x86-64-v3", "default")
void ApplyActivation(const FusedActivation& a, float* data, int64_t count) { ApplyActivationTo(a, data, count); }
void ApplyActivation(const FusedActivation& a, double* data, int64_t count) { ApplyActivationTo(a, data, count); }

std::optional<LayoutReorder> MakeReorder(const dnnl::memory::desc& from, const dnnl::memory::desc& to) {
  if (from == to) return std::nullopt;
  dnnl::reorder::primitive_desc pd(DnnlEngine(), from, DnnlEngine(), to, DnnlAttr());
  return LayoutReorder{pd, dnnl::reorder(pd)};
}

dnnl::memory ScratchMemory(KernelContext& ctx, const dnnl::memory::desc& desc, Tensor& storage) {
  storage = Tensor::Allocate(DataType::kUInt8, Shape{static_cast<int64_t>(desc.get_size())}, ctx.allocator());
  return dnnl::memory(desc, DnnlEngine(), storage.raw_data());
}

void RunReorder(KernelContext& ctx, const LayoutReorder& reorder, const dnnl::memory& from, const dnnl::memory& to) {
  const std::array<DnnlArg, 2> args = {DnnlArg{DNNL_ARG_FROM, &from}, DnnlArg{DNNL_ARG_TO, &to}};
  ExecuteDnnl(ctx, reorder.primitive, reorder.pd, std::span<const DnnlArg>(args));
}

dnnl::memory InLayout(KernelContext& ctx, const std::optional<LayoutReorder>& reorder, const dnnl::memory& from,
                      Tensor& storage) {
  if (!reorder) return from;
  dnnl::memory to = ScratchMemory(ctx, reorder->pd.dst_desc(), storage);
  RunReorder(ctx, *reorder, from, to);
  return to;
}

}  // namespace tessera::cpu
