// ai.tessera::ReorderFromBlocked(X) -> Y: a blocked-channel tensor [N, C/B, H, W, B] (nn/nchwc_shapes.h; NHWC
// when B = C)
// back to plain NCHW [N, C, H, W], C being attribute `channels` (default: all B * C/B channels; fewer drops the
// zero padding channels of the last block). The nchwc_layout graph pass puts one wherever a blocked value is read by
// an op that needs the plain layout (and in front of graph outputs). Runs as a cached oneDNN reorder.
#include <algorithm>
#include <optional>

#include "providers/cpu/common/dnnl_utils.h"
#include "providers/cpu/cpu_kernels.h"
#include "providers/cpu/nn/nchwc_shapes.h"

namespace tessera::cpu {
namespace {

class ReorderFromBlocked : public Kernel {
 public:
  explicit ReorderFromBlocked(const KernelInfo& info) : channels_(info.node().GetInt("channels", -1)) {}

  void Compute(KernelContext& ctx) const override {
    const Tensor& x = ctx.Input(0);
    const Shape plain = PlainShapeOfBlocked(ctx.node(), "X", x.shape(), channels_);
    Tensor& y = ctx.Output(0, x.type(), plain);
    if (y.NumElements() == 0) return;
    thread_local std::vector<int64_t> key;  // the thread's buffer: no allocation per step
    key.clear();
    AppendShapeKey(key, x.shape());
    key.push_back(plain[1]);
    std::shared_ptr<const std::optional<LayoutReorder>> reorder = reorders_.Get(ctx, key, [&] {
      const dnnl::memory::dims dims = ToDnnlDims(plain.dims());
      const int64_t block = x.shape()[1] == 1 && x.shape()[4] == plain[1] ? 0 : x.shape()[4];  // 0: NHWC
      return MakeReorder(BlockedF32Desc(dims, block), PlainF32Desc(dims));
    });
    if (!*reorder) {  // the layouts coincide (one full channel block of 1x1 images)
      std::copy_n(x.Data<float>(), x.NumElements(), y.Data<float>());
      return;
    }
    DnnlMemoryPool::Lease bound = (*reorder)->memories->Borrow();
    const LayoutReorder& r = **reorder;
    RunReorder(ctx, r, bound.Bind(0, [&] { return r.pd.src_desc(); }, x.Data<float>()),
               bound.Bind(1, [&] { return r.pd.dst_desc(); }, y.Data<float>()));
  }

 private:
  int64_t channels_;
  ShapeCache<std::optional<LayoutReorder>> reorders_;
};

}  // namespace

void RegisterNchwcReorderKernels(KernelRegistry& registry) {
  KernelDef def;
  def.op_type = "ReorderFromBlocked";
  def.domain = "ai.tessera";
  def.input_types = {{0, {DataType::kFloat}}};
  registry.Register<ReorderFromBlocked>(std::move(def));
}

}  // namespace tessera::cpu
