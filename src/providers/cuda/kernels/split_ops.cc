// Split (any element type): the input cut along one axis into consecutive parts, one per output, all
// written by one launch (one per launch::kMaxSplitOutputs outputs); views of the input, without a launch, when
// nothing precedes the axis.
#include <algorithm>
#include <climits>
#include <memory>
#include <numeric>
#include <string>
#include <vector>

#include "providers/cuda/kernels/cuda_kernels.h"
#include "providers/cuda/kernels/kernel_utils.h"

namespace tessera::cuda {

namespace {

std::string ListString(const std::vector<int64_t>& values) { return Shape(values).ToString(); }

// Part lengths come from the `split` attribute (opset < 13) or host input 1 (opsets 1 and 13+), else from
// `num_outputs` (opset 18+: ceil(dim / num_outputs) each, the last ones smaller), else equal parts, one per
// output. The same rules as the CPU EP, with errors that say which rule failed.
class SplitKernel : public Kernel {
 public:
  explicit SplitKernel(const KernelInfo& info) : ep_(CudaEpOf(info)) {
    const Node& node = info.node();
    axis_ = node.GetInt("axis", 0);
    if (node.opset < 13) attribute_split_ = node.GetInts("split");
    if (node.opset >= 18) num_outputs_ = node.GetInt("num_outputs", 0);
  }

  void Compute(KernelContext& ctx) const override {
    DeviceGuard guard(ep_.ordinal());
    const Tensor& x = ctx.Input(0);
    const Shape& shape = x.shape();
    const int64_t rank = static_cast<int64_t>(shape.rank());
    if (axis_ < -rank || axis_ >= rank)
      Fail(ErrorCode::kInvalidArgument, ctx.node().Describe(), ": axis ", axis_, " is out of range for input ",
           shape.ToString());
    const size_t axis = static_cast<size_t>(axis_ < 0 ? axis_ + rank : axis_);
    const std::vector<int64_t> lengths = PartLengths(ctx, shape, axis);
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
  std::vector<int64_t> PartLengths(const KernelContext& ctx, const Shape& shape, size_t axis) const {
    const Node& node = ctx.node();
    const int64_t dim = shape[axis];
    const int64_t outputs = static_cast<int64_t>(ctx.NumOutputs());
    std::vector<int64_t> lengths = attribute_split_;
    const bool split_input = node.opset >= 13 || node.opset < 2;
    if (const Tensor* given = split_input ? ctx.OptionalInput(1) : nullptr; given != nullptr)
      lengths = HostInt64s(ctx, *given, "split");
    if (!lengths.empty() && num_outputs_ > 0)
      Fail(ErrorCode::kInvalidArgument, node.Describe(), ": both the split input and num_outputs are given");
    if (lengths.empty()) return DefaultLengths(ctx, shape, axis, outputs);
    if (static_cast<int64_t>(lengths.size()) != outputs)
      Fail(ErrorCode::kInvalidArgument, node.Describe(), ": split ", ListString(lengths), " has ", lengths.size(),
           " lengths for ", outputs, " outputs");
    for (size_t i = 0; i < lengths.size(); ++i)
      if (lengths[i] < 0)
        Fail(ErrorCode::kInvalidArgument, node.Describe(), ": split ", ListString(lengths), " gives output ", i,
             " the negative length ", lengths[i]);
    const int64_t total = std::accumulate(lengths.begin(), lengths.end(), int64_t{0});
    if (total != dim)
      Fail(ErrorCode::kInvalidArgument, node.Describe(), ": split ", ListString(lengths), " sums to ", total,
           ", but axis ", axis, " of input ", shape.ToString(), " has ", dim);
    return lengths;
  }

  std::vector<int64_t> DefaultLengths(const KernelContext& ctx, const Shape& shape, size_t axis,
                                      int64_t outputs) const {
    const Node& node = ctx.node();
    const int64_t dim = shape[axis];
    if (num_outputs_ > 0 && num_outputs_ != outputs)
      Fail(ErrorCode::kInvalidArgument, node.Describe(), ": num_outputs is ", num_outputs_, " but the node has ",
           outputs, " outputs");
    if (num_outputs_ == 0 && (outputs == 0 || dim % outputs != 0))
      Fail(ErrorCode::kInvalidArgument, node.Describe(), ": axis ", axis, " of input ", shape.ToString(),
           " cannot be split into ", outputs, " equal parts");
    const int64_t part = (dim + outputs - 1) / outputs;
    std::vector<int64_t> lengths;
    for (int64_t i = 0, left = dim; i < outputs; ++i, left -= part)
      lengths.push_back(std::clamp<int64_t>(left, 0, part));
    return lengths;
  }

  const CudaExecutionProvider& ep_;
  int64_t axis_ = 0;
  std::vector<int64_t> attribute_split_;
  int64_t num_outputs_ = 0;
};

}  // namespace

void RegisterSplitKernels(KernelRegistry& registry) {
  KernelDef split = MakeDef("Split", 1, INT_MAX, AllDeviceTypes());
  split.host_inputs = {1};  // the lengths (opsets 1 and 13+)
  registry.Register<SplitKernel>(std::move(split));
}

}  // namespace tessera::cuda
