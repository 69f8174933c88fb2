// Tensor-sequence operators of the CPU EP: SequenceEmpty, SequenceConstruct, SequenceInsert,
// SequenceErase, SequenceAt, SequenceLength, SplitToSequence, ConcatFromSequence, SequenceMap.
//
// A sequence is a Value holding a TensorSequence. Tensors are immutable once produced, so sequence
// edits copy the list of tensors, never their data: SequenceAt, SequenceInsert and SequenceConstruct
// share buffers with their inputs. Positions may be negative (counting from the back) and are checked
// against the sequence's length. An empty sequence carries no element type at run time.
#include <algorithm>
#include <string>
#include <vector>

#include "providers/cpu/cpu_kernels.h"
#include "providers/cpu/tensor/numeric_dispatch.h"
#include "providers/cpu/tensor/strided_copy.h"

namespace tessera::cpu {
namespace {

constexpr int kLastOpset = kLatestOnnxOpset;

const TensorSequence& SequenceInput(const KernelContext& ctx, size_t i) {
  const Value* v = ctx.InputValue(i);
  if (v == nullptr || !v->is_sequence())
    Fail(ErrorCode::kInvalidArgument, ctx.node().Describe(), ": input ", i, " must be a tensor sequence");
  return v->sequence();
}

// A position input (int32/int64 scalar) resolved against [-size, size - 1 + extra] (extra = 1 lets
// SequenceInsert append at `size`).
size_t ReadPosition(const KernelContext& ctx, size_t input, int64_t size, int64_t extra) {
  const Node& node = ctx.node();
  const std::vector<int64_t> value = ReadIntParameter(node, ctx.Input(input), "position");
  if (value.size() != 1)
    Fail(ErrorCode::kInvalidArgument, node.Describe(), ": position must be a scalar, got ", value.size(), " values");
  const int64_t position = value[0];
  if (position < -size || position > size - 1 + extra)
    Fail(ErrorCode::kInvalidArgument, node.Describe(), ": position ", position, " is out of range [", -size, ", ",
         size - 1 + extra, "] for a sequence of ", size);
  return static_cast<size_t>(position < 0 ? position + size : position);
}

void CheckElementType(const Node& node, const TensorSequence& sequence, const Tensor& t) {
  if (!sequence.empty() && sequence.front().type() != t.type())
    Fail(ErrorCode::kInvalidArgument, node.Describe(), ": cannot put a ", DataTypeName(t.type()),
         " tensor into a sequence of ", DataTypeName(sequence.front().type()));
}

class SequenceEmptyKernel : public Kernel {
 public:
  explicit SequenceEmptyKernel(const KernelInfo&) {}
  void Compute(KernelContext& ctx) const override { ctx.SetOutput(0, Value(TensorSequence{})); }
};

class SequenceConstructKernel : public Kernel {
 public:
  explicit SequenceConstructKernel(const KernelInfo&) {}
  void Compute(KernelContext& ctx) const override {
    TensorSequence sequence;
    for (size_t i = 0; i < ctx.NumInputs(); ++i) {
      const Tensor& t = ctx.Input(i);
      CheckElementType(ctx.node(), sequence, t);
      sequence.push_back(t);
    }
    if (sequence.empty()) Fail(ErrorCode::kInvalidArgument, ctx.node().Describe(), ": needs at least one input");
    ctx.SetOutput(0, Value(std::move(sequence)));
  }
};

class SequenceInsertKernel : public Kernel {
 public:
  explicit SequenceInsertKernel(const KernelInfo&) {}
  void Compute(KernelContext& ctx) const override {
    TensorSequence sequence = SequenceInput(ctx, 0);
    const Tensor& t = ctx.Input(1);
    CheckElementType(ctx.node(), sequence, t);
    const int64_t size = static_cast<int64_t>(sequence.size());
    const size_t position = ctx.HasInput(2) ? ReadPosition(ctx, 2, size, 1) : sequence.size();
    sequence.insert(sequence.begin() + static_cast<std::ptrdiff_t>(position), t);
    ctx.SetOutput(0, Value(std::move(sequence)));
  }
};

class SequenceEraseKernel : public Kernel {
 public:
  explicit SequenceEraseKernel(const KernelInfo&) {}
  void Compute(KernelContext& ctx) const override {
    TensorSequence sequence = SequenceInput(ctx, 0);
    if (sequence.empty())
      Fail(ErrorCode::kInvalidArgument, ctx.node().Describe(), ": cannot erase from an empty sequence");
    const int64_t size = static_cast<int64_t>(sequence.size());
    const size_t position = ctx.HasInput(1) ? ReadPosition(ctx, 1, size, 0) : sequence.size() - 1;
    sequence.erase(sequence.begin() + static_cast<std::ptrdiff_t>(position));
    ctx.SetOutput(0, Value(std::move(sequence)));
  }
};

class SequenceAtKernel : public Kernel {
 public:
  explicit SequenceAtKernel(const KernelInfo&) {}
  void Compute(KernelContext& ctx) const override {
    const TensorSequence& sequence = SequenceInput(ctx, 0);
    ctx.SetOutput(0, Value(sequence[ReadPosition(ctx, 1, static_cast<int64_t>(sequence.size()), 0)]));
  }
};

class SequenceLengthKernel : public Kernel {
 public:
  explicit SequenceLengthKernel(const KernelInfo&) {}
  void Compute(KernelContext& ctx) const override {
    const int64_t size = static_cast<int64_t>(SequenceInput(ctx, 0).size());
    ctx.Output(0, DataType::kInt64, Shape{}).Data<int64_t>()[0] = size;
  }
};

// Chunk lengths along a dim of size `dim`: the split input (a scalar chunk size, the last chunk may be
// shorter, or a 1-D list of lengths summing to dim), else chunks of 1.
std::vector<int64_t> ChunkLengths(const KernelContext& ctx, int64_t dim) {
  const Node& node = ctx.node();
  const Tensor* split = ctx.OptionalInput(1);
  if (split == nullptr) return std::vector<int64_t>(static_cast<size_t>(dim), 1);
  const std::vector<int64_t> given = ReadIntParameter(node, *split, "split");
  if (split->shape().rank() == 0) {
    if (given[0] <= 0) Fail(ErrorCode::kInvalidArgument, node.Describe(), ": split must be positive, got ", given[0]);
    std::vector<int64_t> lengths;
    for (int64_t start = 0; start < dim; start += given[0]) lengths.push_back(std::min(given[0], dim - start));
    return lengths;
  }
  int64_t total = 0;
  for (int64_t length : given) {
    if (length < 0) Fail(ErrorCode::kInvalidArgument, node.Describe(), ": split has a negative length ", length);
    total += length;
  }
  if (total != dim)
    Fail(ErrorCode::kInvalidArgument, node.Describe(), ": split lengths sum to ", total, " but the axis has size ",
         dim);
  return given;
}

class SplitToSequenceKernel : public Kernel {
 public:
  explicit SplitToSequenceKernel(const KernelInfo& info)
      : axis_(info.node().GetInt("axis", 0)), keep_dims_(info.node().GetInt("keepdims", 1) != 0) {}
  void Compute(KernelContext& ctx) const override {
    const Tensor& input = ctx.Input(0);
    const std::vector<int64_t>& dims = input.shape().dims();
    const size_t axis = static_cast<size_t>(NormalizeAxis(axis_, static_cast<int64_t>(dims.size()), "axis"));
    const std::vector<int64_t> strides = DenseStrides(dims);
    const bool squeeze = !keep_dims_ && !ctx.HasInput(1);
    TensorSequence sequence;
    int64_t start = 0;
    for (int64_t length : ChunkLengths(ctx, dims[axis])) {
      StridedView view{dims, strides, start * strides[axis]};
      view.dims[axis] = length;
      Tensor chunk = Tensor::Allocate(input.type(), Shape(view.dims), ctx.allocator());
      CopyStrided(input, view, chunk, ctx.thread_pool());
      if (squeeze) {
        std::vector<int64_t> squeezed = view.dims;
        squeezed.erase(squeezed.begin() + static_cast<std::ptrdiff_t>(axis));
        chunk = chunk.Reshaped(Shape(std::move(squeezed)));
      }
      sequence.push_back(std::move(chunk));
      start += length;
    }
    ctx.SetOutput(0, Value(std::move(sequence)));
  }

 private:
  int64_t axis_;
  bool keep_dims_;
};

class ConcatFromSequenceKernel : public Kernel {
 public:
  explicit ConcatFromSequenceKernel(const KernelInfo& info)
      : axis_(info.node().GetInt("axis")), new_axis_(info.node().GetInt("new_axis", 0) != 0) {}
  void Compute(KernelContext& ctx) const override {
    const Node& node = ctx.node();
    const TensorSequence& parts = SequenceInput(ctx, 0);
    if (parts.empty()) Fail(ErrorCode::kInvalidArgument, node.Describe(), ": the input sequence is empty");
    const Tensor& first = parts.front();
    const int64_t rank = static_cast<int64_t>(first.shape().rank());
    const size_t axis = static_cast<size_t>(NormalizeAxis(axis_, new_axis_ ? rank + 1 : rank, "axis"));
    std::vector<int64_t> dims = first.shape().dims();
    if (new_axis_) dims.insert(dims.begin() + static_cast<std::ptrdiff_t>(axis), 1);
    const int64_t outer = Shape(dims).SizeTo(axis), inner = Shape(dims).SizeFrom(axis + 1);
    int64_t total = 0;
    for (const Tensor& part : parts) {
      std::vector<int64_t> part_dims = part.shape().dims();
      if (new_axis_) part_dims.insert(part_dims.begin() + static_cast<std::ptrdiff_t>(axis), 1);
      part_dims[axis] = dims[axis];
      if (part.type() != first.type() || part_dims != dims)
        Fail(ErrorCode::kInvalidArgument, node.Describe(), ": cannot concatenate ", first.Describe(), " and ",
             part.Describe(), " along axis ", axis_);
      total += new_axis_ ? 1 : part.shape()[axis];
    }
    dims[axis] = total;
    Tensor& out = ctx.Output(0, first.type(), Shape(dims));
    VisitStorageType(first.type(), [&]<typename S>() {
      S* dst = StorageData<S>(out);
      int64_t column = 0;
      for (const Tensor& part : parts) {
        const int64_t width = part.NumElements() / std::max<int64_t>(outer, 1);  // part's [outer, width] rows
        const S* src = StorageData<S>(part);
        for (int64_t o = 0; o < outer && width > 0; ++o)
          std::copy_n(src + o * width, width, dst + o * total * inner + column);
        column += width;
      }
    });
  }

 private:
  int64_t axis_;
  bool new_axis_;
};

// Runs the body once per element of the first input (a sequence). Sequence inputs contribute their
// i-th element, tensor inputs the whole tensor; every output collects the body's values in a sequence.
class SequenceMapKernel : public Kernel {
 public:
  explicit SequenceMapKernel(const KernelInfo& info) : body_(info.Subgraph("body")) {
    const Node& node = info.node();
    if (body_.graph().inputs.size() != node.inputs.size() || body_.graph().outputs.size() != node.outputs.size())
      Fail(ErrorCode::kInvalidModel, node.Describe(), ": the body takes ", body_.graph().inputs.size(),
           " inputs and has ", body_.graph().outputs.size(), " outputs; the node has ", node.inputs.size(), " and ",
           node.outputs.size());
  }
  void Compute(KernelContext& ctx) const override {
    const Node& node = ctx.node();
    const size_t count = SequenceInput(ctx, 0).size();
    for (size_t j = 1; j < ctx.NumInputs(); ++j) {
      const Value* v = ctx.InputValue(j);
      if (v == nullptr) Fail(ErrorCode::kInvalidArgument, node.Describe(), ": input ", j, " is missing");
      if (v->is_sequence() && v->sequence().size() != count)
        Fail(ErrorCode::kInvalidArgument, node.Describe(), ": input sequences differ in length (", count, " and ",
             v->sequence().size(), " for input ", j, ")");
    }
    std::vector<TensorSequence> results(ctx.NumOutputs());
    for (size_t i = 0; i < count; ++i) {
      std::vector<Value> inputs;
      for (size_t j = 0; j < ctx.NumInputs(); ++j) {
        const Value& v = *ctx.InputValue(j);
        inputs.push_back(v.is_sequence() ? Value(v.sequence()[i]) : v);
      }
      std::vector<Value> outputs = body_.Run(ctx, std::move(inputs));
      for (size_t k = 0; k < results.size(); ++k) {
        if (!outputs[k].is_tensor())
          Fail(ErrorCode::kInvalidArgument, node.Describe(), ": body output ", k, " must be a tensor");
        results[k].push_back(outputs[k].tensor());
      }
    }
    for (size_t k = 0; k < results.size(); ++k) ctx.SetOutput(k, Value(std::move(results[k])));
  }

 private:
  const SubgraphRunner& body_;
};

KernelDef Def(const char* op, int since, std::vector<int> host_inputs = {}) {
  KernelDef def;
  def.op_type = op;
  def.since_version = since;
  def.until_version = kLastOpset;
  def.host_inputs = std::move(host_inputs);
  return def;
}

}  // namespace

void RegisterSequenceKernels(KernelRegistry& registry) {
  registry.Register<SequenceEmptyKernel>(Def("SequenceEmpty", 11));
  registry.Register<SequenceConstructKernel>(Def("SequenceConstruct", 11));
  registry.Register<SequenceInsertKernel>(Def("SequenceInsert", 11, {2}));
  registry.Register<SequenceEraseKernel>(Def("SequenceErase", 11, {1}));
  registry.Register<SequenceAtKernel>(Def("SequenceAt", 11, {1}));
  registry.Register<SequenceLengthKernel>(Def("SequenceLength", 11));
  registry.Register<SplitToSequenceKernel>(Def("SplitToSequence", 11, {1}));
  registry.Register<ConcatFromSequenceKernel>(Def("ConcatFromSequence", 11));
  registry.Register<SequenceMapKernel>(Def("SequenceMap", 17));
}

}  // namespace tessera::cpu
