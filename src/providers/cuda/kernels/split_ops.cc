// Split (any element type): the input cut along one axis into consecutive parts, one per output, all
// written by one launch (one per launch::kMaxSplitOutputs outputs); views of the input, without a launch, when
// nothing precedes the axis.
#include <algorithm>
#include <climits>
#include <memory>
#include <vector>

#include "providers/cuda/kernels/cuda_kernels.h"
#include "providers/cuda/kernels/kernel_utils.h"
#include "tessera/ep/split_lengths.h"

namespace tessera::cuda {

namespace {


// Part lengths come from the `split` attribute (opset < 13) or host input 1 (opsets 1 and 13+), else from
// `num_outputs` (opset 18+), else equal parts: the EP SDK's SplitLengths, as on every EP.
class SplitKernel : public Kernel {
 public:
  explicit SplitKernel(const KernelInfo& info) : ep_(CudaEpOf(info)), rule_(SplitRule::Of(info.node())) {}

  void Compute(KernelContext& ctx) const override {
    DeviceGuard guard(ep_.ordinal());
    const Tensor& x = ctx.Input(0);
    const Shape& shape = x.shape();
    const int64_t rank = static_cast<int64_t>(shape.rank());
    const int64_t requested = rule_.axis;
    if (requested < -rank || requested >= rank)
      Fail(ErrorCode::kInvalidArgument, ctx.node().Describe(), ": axis ", requested, " is out of range for input ",
           shape.ToString());
    const size_t axis = static_cast<size_t>(requested < 0 ? requested + rank : requested);
    const Tensor* split = rule_.input_lengths ? ctx.OptionalInput(1) : nullptr;
    const std::vector<int64_t> given = split != nullptr ? HostInt64s(ctx, *split, "split") : std::vector<int64_t>{};
    const std::vector<int64_t> lengths = SplitLengths(ctx.node(), shape, axis, static_cast<int64_t>(ctx.NumOutputs()),
                                                      rule_, split != nullptr ? &given : nullptr);
    if (shape.SizeTo(axis) == 1 && x.NumElements() > 0) {
      // Nothing before the axis (a decoding step's [1, 1, 3 x width] Q/K/V): every part is a contiguous range of the
      // input, so the outputs are views of it, without a launch.
      const auto owner = std::make_shared<Tensor>(x);  // keeps the input's buffer while a view lives
      const size_t element = SizeOf(x.type());
      const int64_t inner = shape.SizeFrom(axis + 1);
      int64_t begin = 0;
      for (size_t i = 0; i < lengths.size(); ++i) {
        std::vector<int64_t> dims = shape.dims();
        dims[axis] = lengths[i];
        const size_t bytes = static_cast<size_t>(lengths[i] * inner) * element;
        char* data = static_cast<char*>(owner->raw_data()) + static_cast<size_t>(begin * inner) * element;
        ctx.SetOutput(i, Value(Tensor::Share(x.type(), Shape(dims), owner, data, bytes, x.memory_info())));
        begin += lengths[i];
      }
      return;
    }
    std::vector<void*> outputs(lengths.size());
    for (size_t i = 0; i < lengths.size(); ++i) {
      std::vector<int64_t> dims = shape.dims();
      dims[axis] = lengths[i];
      outputs[i] = ctx.Output(i, x.type(), Shape(dims)).raw_data();
    }
    if (x.NumElements() == 0) return;
    const int element_size = static_cast<int>(SizeOf(x.type()));
    const int64_t outer = shape.SizeTo(axis), inner = shape.SizeFrom(axis + 1);
    int64_t begin = 0;
    for (size_t first = 0; first < lengths.size(); first += launch::kMaxSplitOutputs) {
      launch::SplitParts parts;
      parts.count = static_cast<int>(std::min<size_t>(launch::kMaxSplitOutputs, lengths.size() - first));
      parts.begin[0] = begin;
      for (int j = 0; j < parts.count; ++j) {
        parts.data[j] = outputs[first + j];
        begin += lengths[first + j];
        parts.begin[j + 1] = begin;
      }
      CheckLaunch(ctx, launch::Split(element_size, x.raw_data(), outer, shape[axis], inner, parts, StreamOf(ctx)),
                  "Split launch");
    }
  }

 private:
  const CudaExecutionProvider& ep_;
  SplitRule rule_;
};

}  // namespace

void RegisterSplitKernels(KernelRegistry& registry) {
  KernelDef split = MakeDef("Split", 1, INT_MAX, AllDeviceTypes());
  split.host_inputs = {1};  // the lengths (opsets 1 and 13+)
  registry.Register<SplitKernel>(std::move(split));
}

}  // namespace tessera::cuda
