// Index-driven operators of the CPU EP: Gather, GatherElements, GatherND, ScatterElements (and the
// deprecated Scatter), ScatterND, NonZero.
//
// Indices may be int32 or int64 and negative (counting from the back of their axis). Every index is
// checked: one out of range is an error naming the node, the index and the valid range, never a read
// or write out of bounds. Gathers copy with storage types (any element type, strings included);
// scatter reductions other than "none" need numeric types.
#include <algorithm>
#include <string>
#include <string_view>
#include <tuple>
#include <vector>

#include "providers/cpu/cpu_kernels.h"
#include "providers/cpu/tensor/numeric_dispatch.h"
#include "providers/cpu/tensor/strided_copy.h"

namespace tessera::cpu {
namespace {

constexpr int kLastOpset = kLatestOnnxOpset;
constexpr int64_t kElementsPerTask = 1 << 15;

// The indices input as int64; other element types fail naming the node.
std::vector<int64_t> ReadIndices(const Node& node, const Tensor& indices) {
  return ReadIntParameter(node, indices, "indices");
}

// Maps a possibly negative index into [0, dim); out of range fails naming the node.
int64_t CheckedIndex(const Node& node, int64_t index, int64_t dim, int64_t axis) {
  if (index < -dim || index >= dim)
    Fail(ErrorCode::kInvalidArgument, node.Describe(), ": index ", index, " is out of range [", -dim, ", ", dim - 1,
         "] for axis ", axis, " of size ", dim);
  return index < 0 ? index + dim : index;
}

int64_t AxisFor(const Node& node, int64_t axis, const Shape& shape) {
  const int64_t rank = static_cast<int64_t>(shape.rank());
  if (axis < -rank || axis >= rank)
    Fail(ErrorCode::kInvalidArgument, node.Describe(), ": axis ", axis, " is out of range for input ",
         shape.ToString());
  return axis < 0 ? axis + rank : axis;
}

class GatherKernel : public Kernel {
 public:
  explicit GatherKernel(const KernelInfo& info) : axis_(info.node().GetInt("axis", 0)) {}
  void Compute(KernelContext& ctx) const override {
    const Node& node = ctx.node();
    const Tensor& data = ctx.Input(0);
    const Tensor& indices_t = ctx.Input(1);
    const Shape& shape = data.shape();
    const size_t axis = static_cast<size_t>(AxisFor(node, axis_, shape));
    const int64_t dim = shape[axis];
    std::vector<int64_t> indices = ReadIndices(node, indices_t);
    for (int64_t& index : indices) index = CheckedIndex(node, index, dim, static_cast<int64_t>(axis));
    std::vector<int64_t> out_dims(shape.dims().begin(), shape.dims().begin() + static_cast<std::ptrdiff_t>(axis));
    out_dims.insert(out_dims.end(), indices_t.shape().dims().begin(), indices_t.shape().dims().end());
    out_dims.insert(out_dims.end(), shape.dims().begin() + static_cast<std::ptrdiff_t>(axis) + 1, shape.dims().end());
    Tensor& out = ctx.Output(0, data.type(), Shape(out_dims));
    const int64_t outer = shape.SizeTo(axis), inner = shape.SizeFrom(axis + 1);
    const int64_t count = static_cast<int64_t>(indices.size());
    VisitStorageType(data.type(), [&]<typename S>() {
      const S* src = StorageData<S>(data);
      S* dst = StorageData<S>(out);
      // Piece p = (outer row o, index j) is one contiguous run of `inner` elements.
      const auto copy_pieces = [&](int64_t begin, int64_t end) {
        for (int64_t p = begin; p < end; ++p) {
          const S* from = src + ((p / count) * dim + indices[static_cast<size_t>(p % count)]) * inner;
          if (inner == 1) {
            dst[p] = *from;
          } else {
            std::copy_n(from, inner, dst + p * inner);
          }
        }
      };
      ctx.thread_pool().ParallelFor(outer * count, std::max<int64_t>(1, kElementsPerTask / std::max<int64_t>(inner, 1)),
                                    copy_pieces);
    });
  }

 private:
  int64_t axis_;
};

// Element-wise index addressing shared by GatherElements and ScatterElements: position p of the
// indices tensor addresses data[i0, ..., indices[p], ..., in-1] where (i0, ..., in-1) is p's own index.
class ElementAddressing {
 public:
  ElementAddressing(const Node& node, const Shape& data, const Shape& indices, size_t axis)
      : node_(node), dims_(indices.dims()), strides_(DenseStrides(data.dims())), axis_(axis) {
    bool valid = indices.rank() == data.rank();
    for (size_t k = 0; valid && k < data.rank(); ++k) valid = k == axis || indices[k] <= data[k];
    if (!valid)
      Fail(ErrorCode::kInvalidArgument, node.Describe(), ": indices ", indices.ToString(), " do not fit data ",
           data.ToString(), " along axis ", axis);
    axis_dim_ = data[axis];
    axis_stride_ = strides_[axis];
    strides_[axis] = 0;
  }
  // Calls fn(p, data_offset) for positions [begin, end) of the indices tensor.
  template <typename Fn>
  void ForEach(const std::vector<int64_t>& indices, int64_t begin, int64_t end, Fn&& fn) const {
    Odometer position(dims_, strides_, begin);
    for (int64_t p = begin; p < end; ++p, position.Next()) {
      const int64_t index =
          CheckedIndex(node_, indices[static_cast<size_t>(p)], axis_dim_, static_cast<int64_t>(axis_));
      fn(p, position.offset() + index * axis_stride_);
    }
  }

 private:
  const Node& node_;
  std::vector<int64_t> dims_, strides_;
  size_t axis_;
  int64_t axis_dim_ = 0, axis_stride_ = 0;
};

class GatherElementsKernel : public Kernel {
 public:
  explicit GatherElementsKernel(const KernelInfo& info) : axis_(info.node().GetInt("axis", 0)) {}
  void Compute(KernelContext& ctx) const override {
    const Node& node = ctx.node();
    const Tensor& data = ctx.Input(0);
    const Tensor& indices_t = ctx.Input(1);
    const size_t axis = static_cast<size_t>(AxisFor(node, axis_, data.shape()));
    const ElementAddressing addressing(node, data.shape(), indices_t.shape(), axis);
    const std::vector<int64_t> indices = ReadIndices(node, indices_t);
    Tensor& out = ctx.Output(0, data.type(), indices_t.shape());
    VisitStorageType(data.type(), [&]<typename S>() {
      const S* src = StorageData<S>(data);
      S* dst = StorageData<S>(out);
      ctx.thread_pool().ParallelFor(out.NumElements(), kElementsPerTask, [&](int64_t begin, int64_t end) {
        addressing.ForEach(indices, begin, end, [&](int64_t p, int64_t offset) { dst[p] = src[offset]; });
      });
    });
  }

 private:
  int64_t axis_;
};

// Index tuples shared by GatherND and ScatterND: the last dim of `indices` holds k-tuples addressing the
// leading k dims (after `batch_dims`) of data; each tuple selects a slice of the remaining dims.
struct TupleAddressing {
  int64_t batches = 1;           // product of the batch dims
  int64_t tuples_per_batch = 0;  // index tuples in each batch
  int64_t slice = 1;             // elements per addressed slice
  int64_t batch_stride = 0;      // data elements per batch
  std::vector<int64_t> offsets;  // data offset (within its batch) of each tuple's slice

  TupleAddressing(const Node& node, const Shape& data, const Shape& indices, const std::vector<int64_t>& values,
                  size_t batch_dims) {
    const size_t k = indices.rank() == 0 ? 0 : static_cast<size_t>(indices[indices.rank() - 1]);
    bool valid = indices.rank() >= 1 && data.rank() >= 1 && batch_dims < std::min(indices.rank(), data.rank()) &&
                 k >= 1 && batch_dims + k <= data.rank();
    for (size_t d = 0; valid && d < batch_dims; ++d) valid = indices[d] == data[d];
    if (!valid)
      Fail(ErrorCode::kInvalidArgument, node.Describe(), ": indices ", indices.ToString(), " do not fit data ",
           data.ToString(), " with batch_dims ", batch_dims);
    const std::vector<int64_t> strides = DenseStrides(data.dims());
    batches = data.SizeTo(batch_dims);
    batch_stride = data.SizeFrom(batch_dims);
    slice = data.SizeFrom(batch_dims + k);
    tuples_per_batch = batches == 0 ? 0 : static_cast<int64_t>(values.size() / k) / batches;
    offsets.resize(values.size() / k);
    for (size_t t = 0; t < offsets.size(); ++t) {
      int64_t offset = 0;
      for (size_t j = 0; j < k; ++j) {
        const size_t axis = batch_dims + j;
        offset += CheckedIndex(node, values[t * k + j], data[axis], static_cast<int64_t>(axis)) * strides[axis];
      }
      offsets[t] = offset;
    }
  }
  // Data offset of tuple t's slice.
  int64_t DataOffset(int64_t t) const {
    return (t / std::max<int64_t>(tuples_per_batch, 1)) * batch_stride + offsets[static_cast<size_t>(t)];
  }
};

class GatherNDKernel : public Kernel {
 public:
  explicit GatherNDKernel(const KernelInfo& info) : batch_dims_(info.node().GetInt("batch_dims", 0)) {}
  void Compute(KernelContext& ctx) const override {
    const Node& node = ctx.node();
    const Tensor& data = ctx.Input(0);
    const Tensor& indices_t = ctx.Input(1);
    if (batch_dims_ < 0) Fail(ErrorCode::kInvalidArgument, node.Describe(), ": batch_dims must be >= 0");
    const TupleAddressing tuples(node, data.shape(), indices_t.shape(), ReadIndices(node, indices_t),
                                 static_cast<size_t>(batch_dims_));
    const std::vector<int64_t>& index_dims = indices_t.shape().dims();
    std::vector<int64_t> out_dims(index_dims.begin(), index_dims.end() - 1);
    const size_t sliced = static_cast<size_t>(batch_dims_) + static_cast<size_t>(index_dims.back());
    out_dims.insert(out_dims.end(), data.shape().dims().begin() + static_cast<std::ptrdiff_t>(sliced),
                    data.shape().dims().end());
    Tensor& out = ctx.Output(0, data.type(), Shape(out_dims));
    const int64_t slice = tuples.slice;
    VisitStorageType(data.type(), [&]<typename S>() {
      const S* src = StorageData<S>(data);
      S* dst = StorageData<S>(out);
      const auto copy_slices = [&](int64_t begin, int64_t end) {
        for (int64_t t = begin; t < end; ++t) std::copy_n(src + tuples.DataOffset(t), slice, dst + t * slice);
      };
      ctx.thread_pool().ParallelFor(static_cast<int64_t>(tuples.offsets.size()),
                                    std::max<int64_t>(1, kElementsPerTask / std::max<int64_t>(slice, 1)), copy_slices);
    });
  }

 private:
  int64_t batch_dims_;
};

enum class Reduction { kNone, kAdd, kMul, kMax, kMin };

Reduction ParseReduction(const Node& node) {
  const std::string name = node.GetString("reduction", "none");
  if (name == "none") return Reduction::kNone;
  if (name == "add") return Reduction::kAdd;
  if (name == "mul") return Reduction::kMul;
  if (name == "max" && node.opset >= 18) return Reduction::kMax;
  if (name == "min" && node.opset >= 18) return Reduction::kMin;
  Fail(ErrorCode::kInvalidModel, node.Describe(), ": unknown reduction '", name, "'");
}

template <typename T>
T Combine(Reduction reduction, T current, T update) {
  const auto a = Widen(current), b = Widen(update);
  if constexpr (std::is_same_v<T, bool>) {
    switch (reduction) {
      case Reduction::kAdd:
      case Reduction::kMax:
        return a || b;
      case Reduction::kMul:
      case Reduction::kMin:
        return a && b;
      case Reduction::kNone:
        break;
    }
  } else {
    switch (reduction) {
      case Reduction::kAdd:
        return Narrow<T>(a + b);
      case Reduction::kMul:
        return Narrow<T>(a * b);
      case Reduction::kMax:
        return Narrow<T>(std::max(a, b));
      case Reduction::kMin:
        return Narrow<T>(std::min(a, b));
      case Reduction::kNone:
        break;
    }
  }
  return update;
}

// Runs apply(E* out, const E* updates) with E the storage type (reduction none: any element type) or
// the numeric type (other reductions), and a combine(E& target, E update) for the reduction. Scatters
// run sequentially: with reductions, updates to one element must be applied in order.
template <typename Apply>
void VisitScatter(const Node& node, Reduction reduction, DataType type, Apply&& apply) {
  if (reduction == Reduction::kNone) {
    VisitStorageType(type,
                     [&]<typename S>() { apply.template operator()<S>([](S& target, const S& u) { target = u; }); });
    return;
  }
  VisitNumericType(node, type, [&]<typename T>() {
    apply.template operator()<T>([reduction](T& target, const T& u) { target = Combine(reduction, target, u); });
  });
}

void CheckSameType(const Node& node, const Tensor& data, const Tensor& updates) {
  if (updates.type() != data.type())
    Fail(ErrorCode::kInvalidArgument, node.Describe(), ": updates ", updates.Describe(),
         " do not have the type of data ", data.Describe());
}

class ScatterElementsKernel : public Kernel {
 public:
  explicit ScatterElementsKernel(const KernelInfo& info)
      : axis_(info.node().GetInt("axis", 0)), reduction_(ParseReduction(info.node())) {}
  void Compute(KernelContext& ctx) const override {
    const Node& node = ctx.node();
    const Tensor& data = ctx.Input(0);
    const Tensor& indices_t = ctx.Input(1);
    const Tensor& updates = ctx.Input(2);
    CheckSameType(node, data, updates);
    if (updates.shape() != indices_t.shape())
      Fail(ErrorCode::kInvalidArgument, node.Describe(), ": updates ", updates.shape().ToString(),
           " must have the shape of indices ", indices_t.shape().ToString());
    const size_t axis = static_cast<size_t>(AxisFor(node, axis_, data.shape()));
    const ElementAddressing addressing(node, data.shape(), indices_t.shape(), axis);
    const std::vector<int64_t> indices = ReadIndices(node, indices_t);
    Tensor& out = ctx.Output(0, data.type(), data.shape());
    if (out.raw_data() != data.raw_data()) CopyStrided(data, DenseView(data.shape().dims()), out, ctx.thread_pool());
    VisitScatter(node, reduction_, data.type(), [&]<typename E>(auto combine) {
      E* dst = static_cast<E*>(out.raw_data());
      const E* src = static_cast<const E*>(updates.raw_data());
      addressing.ForEach(indices, 0, updates.NumElements(),
                         [&](int64_t p, int64_t offset) { combine(dst[offset], src[p]); });
    });
  }

 private:
  int64_t axis_;
  Reduction reduction_;
};

class ScatterNDKernel : public Kernel {
 public:
  explicit ScatterNDKernel(const KernelInfo& info) : reduction_(ParseReduction(info.node())) {}
  void Compute(KernelContext& ctx) const override {
    const Node& node = ctx.node();
    const Tensor& data = ctx.Input(0);
    const Tensor& indices_t = ctx.Input(1);
    const Tensor& updates = ctx.Input(2);
    CheckSameType(node, data, updates);
    const TupleAddressing tuples(node, data.shape(), indices_t.shape(), ReadIndices(node, indices_t), 0);
    const std::vector<int64_t>& index_dims = indices_t.shape().dims();
    std::vector<int64_t> expected(index_dims.begin(), index_dims.end() - 1);
    expected.insert(expected.end(), data.shape().dims().begin() + static_cast<std::ptrdiff_t>(index_dims.back()),
                    data.shape().dims().end());
    if (updates.shape() != Shape(expected))
      Fail(ErrorCode::kInvalidArgument, node.Describe(), ": updates ", updates.shape().ToString(),
           " should have shape ", Shape(expected).ToString());
    Tensor& out = ctx.Output(0, data.type(), data.shape());
    if (out.raw_data() != data.raw_data()) CopyStrided(data, DenseView(data.shape().dims()), out, ctx.thread_pool());
    const int64_t slice = tuples.slice;
    VisitScatter(node, reduction_, data.type(), [&]<typename E>(auto combine) {
      E* dst = static_cast<E*>(out.raw_data());
      const E* src = static_cast<const E*>(updates.raw_data());
      for (size_t t = 0; t < tuples.offsets.size(); ++t) {
        E* target = dst + tuples.offsets[t];
        const E* from = src + static_cast<int64_t>(t) * slice;
        for (int64_t i = 0; i < slice; ++i) combine(target[i], from[i]);
      }
    });
  }

 private:
  Reduction reduction_;
};

class NonZeroKernel : public Kernel {
 public:
  explicit NonZeroKernel(const KernelInfo&) {}
  void Compute(KernelContext& ctx) const override {
    const Tensor& input = ctx.Input(0);
    const std::vector<int64_t>& dims = input.shape().dims();
    // A scalar is treated as a one-element vector, as numpy does.
    const std::vector<int64_t> coordinate_dims = dims.empty() ? std::vector<int64_t>{1} : dims;
    std::vector<int64_t> positions;
    VisitNumericType(ctx.node(), input.type(), [&]<typename T>() {
      const T* data = static_cast<const T*>(input.raw_data());
      for (int64_t i = 0; i < input.NumElements(); ++i)
        if (Widen(data[i]) != Widen(T{})) positions.push_back(i);
    });
    const int64_t count = static_cast<int64_t>(positions.size());
    const int64_t rank = static_cast<int64_t>(coordinate_dims.size());
    int64_t* out = ctx.Output(0, DataType::kInt64, Shape{rank, count}).Data<int64_t>();
    for (int64_t j = 0; j < count; ++j) {
      int64_t rest = positions[static_cast<size_t>(j)];
      for (int64_t k = rank; k-- > 0;) {
        out[k * count + j] = rest % coordinate_dims[static_cast<size_t>(k)];
        rest /= coordinate_dims[static_cast<size_t>(k)];
      }
    }
  }
};

KernelDef Def(const char* op, int since, int until = kLastOpset) {
  KernelDef def;
  def.op_type = op;
  def.since_version = since;
  def.until_version = until;
  return def;
}

}  // namespace

void RegisterGatherKernels(KernelRegistry& registry) {
  registry.Register<GatherKernel>(Def("Gather", 1));
  registry.Register<GatherElementsKernel>(Def("GatherElements", 11));
  registry.Register<GatherNDKernel>(Def("GatherND", 11));
  // The scatters may update their data input in place (KernelDef::in_place_inputs): the copy is then skipped.
  for (auto [op, since, until] : {std::tuple{"ScatterElements", 11, kLastOpset}, std::tuple{"Scatter", 9, 10},
                                  std::tuple{"ScatterND", 11, kLastOpset}}) {
    KernelDef def = Def(op, since, until);
    def.in_place_inputs = {0};
    if (std::string_view(op) == "ScatterND")
      registry.Register<ScatterNDKernel>(std::move(def));
    else
      registry.Register<ScatterElementsKernel>(std::move(def));
  }
  registry.Register<NonZeroKernel>(Def("NonZero", 9));
}

}  // namespace tessera::cpu
