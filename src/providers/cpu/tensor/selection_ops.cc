// Selection ops that move whole slices: Compress (opset 9, 11) keeps the slices whose condition is true,
// ReverseSequence (opset 10) reverses the first seq_len[b] steps of every batch entry. Both copy
// contiguous runs of `inner` elements of any type (strings included).
#include <algorithm>
#include <cstring>
#include <string>

#include "providers/cpu/cpu_kernels.h"
#include "providers/cpu/tensor/numeric_dispatch.h"

namespace tessera::cpu {
namespace {

// Copies `count` elements of a tensor of `type` from src to dst (element offsets).
class ElementCopier {
 public:
  explicit ElementCopier(DataType type) : is_string_(type == DataType::kString), size_(SizeOf(type)) {}
  void operator()(const void* src, int64_t src_offset, void* dst, int64_t dst_offset, int64_t count) const {
    if (is_string_) {
      const std::string* s = static_cast<const std::string*>(src) + src_offset;
      std::copy(s, s + count, static_cast<std::string*>(dst) + dst_offset);
    } else if (count > 0) {
      std::memcpy(static_cast<char*>(dst) + dst_offset * static_cast<int64_t>(size_),
                  static_cast<const char*>(src) + src_offset * static_cast<int64_t>(size_),
                  static_cast<size_t>(count) * size_);
    }
  }

 private:
  bool is_string_;
  size_t size_;
};

class Compress : public Kernel {
 public:
  explicit Compress(const KernelInfo& info)
      : has_axis_(info.node().HasAttribute("axis")), axis_(info.node().GetInt("axis", 0)) {}

  void Compute(KernelContext& ctx) const override {
    const Tensor& x = ctx.Input(0);
    const Tensor& condition = ctx.Input(1);
    if (condition.type() != DataType::kBool || condition.shape().rank() != 1)
      Fail(ErrorCode::kInvalidArgument, ctx.node().Describe(), ": condition must be a 1-D bool tensor, got ",
           condition.Describe());
    int64_t outer = 1, n = x.NumElements(), inner = 1;
    size_t axis = 0;
    if (has_axis_) {
      axis = static_cast<size_t>(NormalizeAxis(axis_, static_cast<int64_t>(x.shape().rank())));
      outer = x.shape().SizeTo(axis);
      n = x.shape()[axis];
      inner = x.shape().SizeFrom(axis + 1);
    }
    if (condition.NumElements() > n)
      Fail(ErrorCode::kInvalidArgument, ctx.node().Describe(), ": condition has ", condition.NumElements(),
           " entries but the compressed dimension has ", n);
    const bool* keep = condition.Data<bool>();
    std::vector<int64_t> kept;
    for (int64_t i = 0; i < condition.NumElements(); ++i)
      if (keep[i]) kept.push_back(i);
    const int64_t m = static_cast<int64_t>(kept.size());
    Shape out_shape = has_axis_ ? x.shape() : Shape{m};
    if (has_axis_) out_shape[axis] = m;
    Tensor& y = ctx.Output(0, x.type(), out_shape);
    const ElementCopier copy(x.type());
    for (int64_t o = 0; o < outer; ++o)
      for (int64_t i = 0; i < m; ++i)
        copy(x.raw_data(), (o * n + kept[static_cast<size_t>(i)]) * inner, y.raw_data(), (o * m + i) * inner, inner);
  }

 private:
  bool has_axis_;
  int64_t axis_;
};

class ReverseSequence : public Kernel {
 public:
  explicit ReverseSequence(const KernelInfo& info)
      : batch_axis_(info.node().GetInt("batch_axis", 1)), time_axis_(info.node().GetInt("time_axis", 0)) {}

  void Compute(KernelContext& ctx) const override {
    const Tensor& x = ctx.Input(0);
    const std::vector<int64_t> lengths = ReadIntParameter(ctx.node(), ctx.Input(1), "sequence_lens");
    const Shape& shape = x.shape();
    if (shape.rank() < 2 || !((batch_axis_ == 0 && time_axis_ == 1) || (batch_axis_ == 1 && time_axis_ == 0)))
      Fail(ErrorCode::kInvalidArgument, ctx.node().Describe(), ": needs rank >= 2 and batch/time axes {0,1}, got ",
           shape.ToString(), " batch_axis=", batch_axis_, " time_axis=", time_axis_);
    const int64_t batch = shape[static_cast<size_t>(batch_axis_)], steps = shape[static_cast<size_t>(time_axis_)];
    if (static_cast<int64_t>(lengths.size()) != batch)
      Fail(ErrorCode::kInvalidArgument, ctx.node().Describe(), ": sequence_lens has ", lengths.size(),
           " entries for a batch of ", batch);
    const int64_t inner = shape.SizeFrom(2);
    // Element offset of (b, t) in the [.., .., inner] layout.
    auto offset = [&](int64_t b, int64_t t) {
      return (batch_axis_ == 0 ? b * steps + t : t * batch + b) * inner;
    };
    Tensor& y = ctx.Output(0, x.type(), shape);
    const ElementCopier copy(x.type());
    for (int64_t b = 0; b < batch; ++b) {
      const int64_t len = lengths[static_cast<size_t>(b)];
      if (len < 0 || len > steps)
        Fail(ErrorCode::kInvalidArgument, ctx.node().Describe(), ": sequence_lens[", b, "]=", len,
             " is outside [0, ", steps, "]");
      for (int64_t t = 0; t < steps; ++t) {
        const int64_t src_t = t < len ? len - 1 - t : t;
        copy(x.raw_data(), offset(b, src_t), y.raw_data(), offset(b, t), inner);
      }
    }
  }

 private:
  int64_t batch_axis_;
  int64_t time_axis_;
};

}  // namespace

void RegisterSelectionKernels(KernelRegistry& registry) {
  KernelDef compress;
  compress.op_type = "Compress";
  compress.since_version = 9;
  compress.host_inputs = {1};
  registry.Register<Compress>(std::move(compress));

  KernelDef reverse;
  reverse.op_type = "ReverseSequence";
  reverse.since_version = 10;
  reverse.host_inputs = {1};
  registry.Register<ReverseSequence>(std::move(reverse));
}

}  // namespace tessera::cpu
