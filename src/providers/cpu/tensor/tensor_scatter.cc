// TensorScatter (opset 24): a key/value cache written in place at each batch item's own position.
//   present_cache = past_cache, then for every batch item b (axis 0) and every position s of `update` along `axis`
//   (default -2, the sequence axis of [batch, heads, sequence, head_size]):
//     present_cache[b, ..., w_b + s, ...] = update[b, ..., s, ...]
//   with w_b = write_indices[b] (int64, [batch]; zeros when absent). mode "linear": w_b + s must fall inside the
//   cache; "circular": the position wraps modulo the cache's length along `axis`.
// `update` has the cache's shape except along `axis`, where it is at most as long. Any element type (bytes are
// moved). The output may be the cache's own buffer (KernelDef::in_place_inputs, as the scatters): only the updated
// rows are then written.
#include <cstring>
#include <string>
#include <vector>

#include "providers/cpu/cpu_kernels.h"

namespace tessera::cpu {

namespace {

class TensorScatterKernel : public Kernel {
 public:
  explicit TensorScatterKernel(const KernelInfo& info)
      : axis_(info.node().GetInt("axis", -2)), circular_(ReadMode(info.node())) {}

  void Compute(KernelContext& ctx) const override {
    const Node& node = ctx.node();
    const Tensor& cache = ctx.Input(0);
    const Tensor& update = ctx.Input(1);
    const Tensor* write_indices = ctx.OptionalInput(2);
    const Shape& shape = cache.shape();
    const int64_t rank = static_cast<int64_t>(shape.rank());
    if (update.type() != cache.type())
      Fail(ErrorCode::kInvalidArgument, node.Describe(), ": update is ", update.Describe(), ", expected the type of ",
           cache.Describe());
    const int64_t axis = axis_ < 0 ? axis_ + rank : axis_;
    if (rank < 2 || axis < 1 || axis >= rank)
      Fail(ErrorCode::kInvalidArgument, node.Describe(), ": axis ", axis_, " must name a dim of ", cache.Describe(),
           " other than the batch axis 0");
    bool same = update.shape().rank() == shape.rank();
    for (int64_t d = 0; same && d < rank; ++d)
      same = d == axis ? update.shape()[d] <= shape[d] : update.shape()[d] == shape[d];
    if (!same)
      Fail(ErrorCode::kInvalidArgument, node.Describe(), ": update ", update.Describe(), " must have the shape of ",
           cache.Describe(), " except along axis ", axis, ", where it may be shorter");
    const int64_t batch = shape[0], length = shape[axis], count = update.shape()[axis];
    std::vector<int64_t> starts(static_cast<size_t>(batch), 0);
    if (write_indices != nullptr) {
      if (write_indices->type() != DataType::kInt64 || write_indices->shape().rank() != 1 ||
          write_indices->NumElements() != batch)
        Fail(ErrorCode::kInvalidArgument, node.Describe(), ": write_indices is ", write_indices->Describe(),
             ", expected int64 [", batch, "]");
      for (int64_t b = 0; b < batch; ++b) starts[static_cast<size_t>(b)] = write_indices->Data<int64_t>()[b];
    }
    for (int64_t b = 0; b < batch; ++b) {
      const int64_t w = starts[static_cast<size_t>(b)];
      if (!circular_ && (w < 0 || w + count > length))
        Fail(ErrorCode::kInvalidArgument, node.Describe(), ": batch item ", b, " writes ", count, " positions from ",
             w, " along axis ", axis, " of ", cache.Describe(), " (linear mode: they must fit)");
    }
    Tensor& out = ctx.Output(0, cache.type(), shape);
    if (out.raw_data() != cache.raw_data() && cache.SizeInBytes() > 0)
      std::memcpy(out.raw_data(), cache.raw_data(), cache.SizeInBytes());
    // Rows of `inner` elements along `axis`, `outer` blocks of them per batch item.
    int64_t inner = 1, outer = 1;
    for (int64_t d = axis + 1; d < rank; ++d) inner *= shape[d];
    for (int64_t d = 1; d < axis; ++d) outer *= shape[d];
    const size_t row = static_cast<size_t>(inner) * SizeOf(cache.type());
    auto* dst = static_cast<char*>(out.raw_data());
    const auto* src = static_cast<const char*>(update.raw_data());
    for (int64_t b = 0; b < batch; ++b)
      for (int64_t o = 0; o < outer; ++o)
        for (int64_t s = 0; s < count; ++s) {
          int64_t p = starts[static_cast<size_t>(b)] + s;
          if (circular_) p = ((p % length) + length) % length;
          std::memcpy(dst + static_cast<size_t>((b * outer + o) * length + p) * row,
                      src + static_cast<size_t>((b * outer + o) * count + s) * row, row);
        }
  }

 private:
  static bool ReadMode(const Node& node) {
    const std::string mode = node.GetString("mode", "linear");
    if (mode != "linear" && mode != "circular")
      Fail(ErrorCode::kInvalidArgument, node.Describe(), ": mode '", mode, "' is not linear or circular");
    return mode == "circular";
  }

  int64_t axis_;
  bool circular_;
};

}  // namespace

void RegisterTensorScatterKernels(KernelRegistry& registry) {
  KernelDef def;
  def.op_type = "TensorScatter";
  def.since_version = 24;
  def.in_place_inputs = {0};
  registry.Register<TensorScatterKernel>(std::move(def));
}

}  // namespace tessera::cpu
