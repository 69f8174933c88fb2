// oneDNN plumbing shared by the CPU kernels that run on oneDNN primitives (Conv, MatMul, Gemm).
//
// Contracts: one CPU engine serves the whole process (engines are thread-safe); each calling thread
// executes on its own dnnl::stream with its own scratchpad buffer (user scratchpad mode), so a primitive can run
// from many threads at once. Primitives are built per input shape and cached in the kernel (ShapeCache),
// for the intra-op thread count of the context that first needed them.
#pragma once

#include <oneapi/dnnl/dnnl.hpp>

#include <optional>

#include <array>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <span>
#include <type_traits>
#include <unordered_map>
#include <vector>

#include "graph/fused_activation.h"
#include "tessera/ep/kernel.h"

namespace tessera::cpu {

const dnnl::engine& DnnlEngine();

// Primitive attributes every Tessera primitive uses (user-managed scratchpad), plus `base`'s settings.
dnnl::primitive_attr DnnlAttr(dnnl::primitive_attr base = {});

dnnl::memory::dims ToDnnlDims(const std::vector<int64_t>& dims);

// A plain (row-major) f32 memory descriptor for `dims`.
dnnl::memory::desc PlainF32Desc(const dnnl::memory::dims& dims);

// The f32 descriptor (NCHW dims) of the channel-inner layouts of the ai.tessera Nchwc* kernels: memory
// [N, C/block, H, W, block] for block 8 or 16 (oneDNN nChw8c / nChw16c, the last block zero-padded), NHWC for 0.
dnnl::memory::desc BlockedF32Desc(const dnnl::memory::dims& dims, int64_t block);

// Makes oneDNN on the calling thread use the intra-op thread count of `ctx`. oneDNN reads OpenMP's count
// when it creates a primitive and runs that primitive with that many threads ever after, so this must
// precede primitive creation as well as execution (ShapeCache::Get and ExecuteDnnl call it).
void UseIntraOpThreads(const KernelContext& ctx);

// Runs `primitive` (built from `pd`) on the calling thread with the intra-op thread count of `ctx`.
// Allocates the scratchpad from the kernel's allocator and waits for completion. Runs through oneDNN's C API with
// the arguments on the stack: the C++ API's map copies cost several heap allocations per step.
void ExecuteDnnl(KernelContext& ctx, const dnnl::primitive& primitive, const dnnl::primitive_desc_base& pd,
                 const std::unordered_map<int, dnnl::memory>& args);
// The same with the arguments as (DNNL_ARG_*, memory) pairs, for kernels that run a primitive every step.
struct DnnlArg {
  int arg;
  const dnnl::memory* memory;
};
void ExecuteDnnl(KernelContext& ctx, const dnnl::primitive& primitive, const dnnl::primitive_desc_base& pd,
                 std::span<const DnnlArg> args);

// In a dry preparation run (KernelContext::preparing_only), whether a kernel whose primitive `pd` is built (and
// whose weights are packed) may skip computing and zero-fill its output `y` instead: it does so and returns true,
// unless `pd` is GEMM-based ("x64:gemm:jit"), whose GEMM generates its kernels on the first execution (RetinaFace's
// 64 -> 4 1x1 head: 24 ms) -- the work the preparation exists to take off the first run. Winograd kernels also do
// some work on their first execution (YOLO11s: ~6 ms over its 25 Winograd convs), less than computing them at
// creation costs (~20 ms), so they skip.
bool ZeroFilledForPreparation(const KernelContext& ctx, const dnnl::primitive_desc_base& pd, Tensor& y);

// oneDNN memory objects for the arguments of one cached primitive, made once per concurrent caller and rebound to
// each call's buffers (a dnnl::memory costs several heap allocations to make; rebinding costs none). An entry of a
// ShapeCache holds one pool (std::shared_ptr: entries are moved when built); a call borrows a set for its duration.
class DnnlMemoryPool {
 public:
  static constexpr size_t kSlots = 6;
  using Set = std::array<dnnl::memory, kSlots>;

  class Lease {
   public:
    Lease(DnnlMemoryPool& pool, std::unique_ptr<Set> set) : pool_(pool), set_(std::move(set)) {}
    ~Lease() { pool_.Return(std::move(set_)); }
    Lease(const Lease&) = delete;
    Lease& operator=(const Lease&) = delete;
    // Slot `slot` over `data`: made with `desc` on the set's first use, rebound to `data` (set_data_handle, which
    // zero-fills a blocked layout's padding as the constructor does) afterwards. A slot always gets the same desc.
    const dnnl::memory& Bind(size_t slot, const dnnl::memory::desc& desc, const void* data) {
      return Bind(slot, [&] { return desc; }, data);
    }
    // The same with the desc made by `make_desc()` on first use only (a primitive_desc query allocates).
    template <typename MakeDesc>
      requires std::is_invocable_r_v<dnnl::memory::desc, MakeDesc>
    const dnnl::memory& Bind(size_t slot, MakeDesc&& make_desc, const void* data) {
      dnnl::memory& memory = (*set_)[slot];
      if (!memory)
        memory = dnnl::memory(make_desc(), DnnlEngine(), const_cast<void*>(data));
      else
        memory.set_data_handle(const_cast<void*>(data));
      return memory;
    }

   private:
    DnnlMemoryPool& pool_;
    std::unique_ptr<Set> set_;
  };

  Lease Borrow();

 private:
  void Return(std::unique_ptr<Set> set);

  std::mutex mutex_;
  std::vector<std::unique_ptr<Set>> free_;
};

// Copies `from` into a new memory object in layout `to_desc` (owned by the returned memory).
dnnl::memory ReorderInto(const dnnl::memory& from, const dnnl::memory::desc& to_desc);

// A reorder between a plain and a blocked layout, built once per shape and cached with its primitive.
struct LayoutReorder {
  dnnl::reorder::primitive_desc pd;
  dnnl::reorder primitive;
  std::shared_ptr<DnnlMemoryPool> memories = std::make_shared<DnnlMemoryPool>();  // from, to per concurrent caller
};
// The reorder from `from` to `to`, or nullopt when the layouts are the same.
std::optional<LayoutReorder> MakeReorder(const dnnl::memory::desc& from, const dnnl::memory::desc& to);
// Memory in layout `desc` backed by a buffer from the kernel's allocator (kept alive by `storage`).
dnnl::memory ScratchMemory(KernelContext& ctx, const dnnl::memory::desc& desc, Tensor& storage);
// Runs `reorder` from `from` into `to`.
void RunReorder(KernelContext& ctx, const LayoutReorder& reorder, const dnnl::memory& from, const dnnl::memory& to);
// `from` in the reorder's destination layout: reordered into scratch memory (kept alive by `storage`), or
// `from` itself when there is no reorder.
dnnl::memory InLayout(KernelContext& ctx, const std::optional<LayoutReorder>& reorder, const dnnl::memory& from,
                      Tensor& storage);

// A bounded, thread-safe map from a shape key to an immutable entry built on first use.
// Entries are shared_ptrs so a caller keeps using one even if another thread evicts it.
template <typename Entry>
class ShapeCache {
 public:
  template <typename Make>
  std::shared_ptr<const Entry> Get(const KernelContext& ctx, const std::vector<int64_t>& key, Make&& make) const {
    UseIntraOpThreads(ctx);
    {
      std::lock_guard lock(mutex_);
      auto it = entries_.find(key);
      if (it != entries_.end()) return it->second;
    }
    // Built outside the lock: primitive creation can take milliseconds and must not serialize runs.
    std::shared_ptr<const Entry> entry = std::make_shared<const Entry>(make());
    std::lock_guard lock(mutex_);
    if (entries_.size() >= kMaxEntries) entries_.clear();  // dynamic shapes: keep memory bounded
    return entries_.emplace(key, std::move(entry)).first->second;
  }

 private:
  static constexpr size_t kMaxEntries = 64;
  mutable std::mutex mutex_;
  mutable std::map<std::vector<int64_t>, std::shared_ptr<const Entry>> entries_;
};

// Appends rank and dims of `shape` to `key` (cache keys made of several shapes stay unambiguous).
void AppendShapeKey(std::vector<int64_t>& key, const Shape& shape);

// The activation of a fused node (domain "ai.tessera": FusedConv, FusedMatMul): graph/fused_activation.h.
using tessera::FusedActivation;
using tessera::ReadFusedActivation;
// Appends the activation to `ops` as eltwise post-ops (nothing for kNone).
void AppendActivation(dnnl::post_ops& ops, const FusedActivation& activation);
// Applies the activation in place, for the paths that do not run on oneDNN.
void ApplyActivation(const FusedActivation& activation, float* data, int64_t count);
void ApplyActivation(const FusedActivation& activation, double* data, int64_t count);

}  // namespace tessera::cpu
