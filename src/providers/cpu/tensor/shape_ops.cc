// Shape-only and generator operators of the CPU EP: Shape, Size, Reshape, Flatten, Squeeze, Unsqueeze,
// Identity, Expand, ConstantOfShape, Constant, Range, EyeLike.
//
// Reshape, Flatten, Squeeze, Unsqueeze and Identity never copy: their output is a view of the input's
// buffer (KernelDef::may_alias); the executor copies only when the caller bound a preallocated output.
// Shape-like inputs (Reshape's shape, axes, Expand's shape, ...) are host inputs so that device EPs
// running these kernels' counterparts receive them where they can be read.
#include <algorithm>
#include <cmath>
#include <optional>
#include <string>
#include <vector>

#include "providers/cpu/common/range_count.h"
#include "providers/cpu/cpu_kernels.h"
#include "providers/cpu/tensor/numeric_dispatch.h"
#include "providers/cpu/tensor/strided_copy.h"
#include "tessera/ep/reshape_target.h"
#include "tessera/ep/shape_kernel.h"

namespace tessera::cpu {
namespace {

constexpr int kLastOpset = kLatestOnnxOpset;

std::string DimsString(const std::vector<int64_t>& dims) { return Shape(dims).ToString(); }

// Axes for Squeeze/Unsqueeze: the `axes` attribute before opset 13, the optional input 1 from 13.
std::vector<int64_t> AxesFromAttributeOrInput(const KernelContext& ctx, bool& given) {
  const Node& node = ctx.node();
  if (node.opset < 13) {
    given = node.HasAttribute("axes");
    return node.GetInts("axes");
  }
  const Tensor* axes = ctx.OptionalInput(1);
  given = axes != nullptr;
  return given ? ReadIntParameter(node, *axes, "axes") : std::vector<int64_t>{};
}

void SetAliasOutput(KernelContext& ctx, std::vector<int64_t> dims) {
  ctx.SetOutput(0, Value(ctx.Input(0).Reshaped(Shape(std::move(dims)))));
}

class SizeKernel : public Kernel {
 public:
  explicit SizeKernel(const KernelInfo&) {}
  void Compute(KernelContext& ctx) const override {
    const int64_t count = ctx.Input(0).NumElements();
    ctx.Output(0, DataType::kInt64, Shape{}).Data<int64_t>()[0] = count;
  }
};

class ReshapeKernel : public Kernel {
 public:
  explicit ReshapeKernel(const KernelInfo& info) {
    const Node& node = info.node();
    allow_zero_ = node.opset >= 14 && node.GetInt("allowzero", 0) != 0;
    if (node.opset < 5) attribute_shape_ = node.GetInts("shape");
  }
  void Compute(KernelContext& ctx) const override {
    const Node& node = ctx.node();
    std::vector<int64_t> requested = node.opset < 5 ? attribute_shape_ : ReadIntParameter(node, ctx.Input(1), "shape");
    if (allow_zero_ && std::count(requested.begin(), requested.end(), 0) > 0 &&
        std::count(requested.begin(), requested.end(), -1) > 0)
      Fail(ErrorCode::kInvalidArgument, node.Describe(), ": shape ", DimsString(requested),
           " has both 0 and -1, which allowzero=1 forbids");
    SetAliasOutput(ctx, ReshapeTarget(node, ctx.Input(0).shape(), std::move(requested), allow_zero_));
  }

 private:
  bool allow_zero_ = false;
  std::vector<int64_t> attribute_shape_;
};

class FlattenKernel : public Kernel {
 public:
  explicit FlattenKernel(const KernelInfo& info) : axis_(info.node().GetInt("axis", 1)) {}
  void Compute(KernelContext& ctx) const override {
    const Shape& shape = ctx.Input(0).shape();
    const int64_t rank = static_cast<int64_t>(shape.rank());
    const int64_t axis = axis_ < 0 ? axis_ + rank : axis_;
    if (axis < 0 || axis > rank)
      Fail(ErrorCode::kInvalidArgument, ctx.node().Describe(), ": axis ", axis_, " is out of range for input ",
           shape.ToString());
    SetAliasOutput(ctx, {shape.SizeTo(axis), shape.SizeFrom(axis)});
  }

 private:
  int64_t axis_;
};

class SqueezeKernel : public Kernel {
 public:
  explicit SqueezeKernel(const KernelInfo&) {}
  void Compute(KernelContext& ctx) const override {
    const Node& node = ctx.node();
    const Shape& shape = ctx.Input(0).shape();
    const int64_t rank = static_cast<int64_t>(shape.rank());
    bool given = false;
    const std::vector<int64_t> axes = AxesFromAttributeOrInput(ctx, given);
    std::vector<bool> squeeze(shape.rank(), false);
    if (!given) {
      for (size_t i = 0; i < shape.rank(); ++i) squeeze[i] = shape[i] == 1;
    }
    for (int64_t a : axes) {
      if (a < -rank || a >= rank)
        Fail(ErrorCode::kInvalidArgument, node.Describe(), ": axis ", a, " is out of range for input ",
             shape.ToString());
      const size_t axis = static_cast<size_t>(a < 0 ? a + rank : a);
      if (shape[axis] != 1)
        Fail(ErrorCode::kInvalidArgument, node.Describe(), ": cannot squeeze axis ", a, " of input ", shape.ToString(),
             ": its size is ", shape[axis], ", not 1");
      squeeze[axis] = true;
    }
    std::vector<int64_t> dims;
    for (size_t i = 0; i < shape.rank(); ++i)
      if (!squeeze[i]) dims.push_back(shape[i]);
    SetAliasOutput(ctx, std::move(dims));
  }
};

class UnsqueezeKernel : public Kernel {
 public:
  explicit UnsqueezeKernel(const KernelInfo&) {}
  void Compute(KernelContext& ctx) const override {
    const Node& node = ctx.node();
    const Shape& shape = ctx.Input(0).shape();
    bool given = false;
    const std::vector<int64_t> axes = AxesFromAttributeOrInput(ctx, given);
    if (!given) Fail(ErrorCode::kInvalidArgument, node.Describe(), ": axes are required");
    const int64_t out_rank = static_cast<int64_t>(shape.rank() + axes.size());
    std::vector<bool> inserted(static_cast<size_t>(out_rank), false);
    for (int64_t a : axes) {
      if (a < -out_rank || a >= out_rank)
        Fail(ErrorCode::kInvalidArgument, node.Describe(), ": axis ", a, " is out of range for output rank ", out_rank);
      const size_t axis = static_cast<size_t>(a < 0 ? a + out_rank : a);
      if (inserted[axis]) Fail(ErrorCode::kInvalidArgument, node.Describe(), ": axis ", a, " appears twice in axes");
      inserted[axis] = true;
    }
    std::vector<int64_t> dims;
    size_t next_input_dim = 0;
    for (bool one : inserted) dims.push_back(one ? 1 : shape[next_input_dim++]);
    SetAliasOutput(ctx, std::move(dims));
  }
};

// Passes any value through (tensors, sequences, optionals) without copying. The input is required, so
// a missing value is an empty optional, passed on as one.
class IdentityKernel : public Kernel {
 public:
  explicit IdentityKernel(const KernelInfo&) {}
  void Compute(KernelContext& ctx) const override {
    const Value* input = ctx.InputValue(0);
    ctx.SetOutput(0, input != nullptr ? *input : Value());
  }
};

class ExpandKernel : public Kernel {
 public:
  explicit ExpandKernel(const KernelInfo&) {}
  void Compute(KernelContext& ctx) const override {
    const Node& node = ctx.node();
    const Tensor& input = ctx.Input(0);
    const std::vector<int64_t> target = ReadIntParameter(node, ctx.Input(1), "shape");
    const std::vector<int64_t>& in_dims = input.shape().dims();
    const size_t rank = std::max(in_dims.size(), target.size());
    const std::vector<int64_t> in_strides = DenseStrides(in_dims);
    StridedView view;
    view.dims.assign(rank, 1);
    view.strides.assign(rank, 0);
    for (size_t k = 0; k < rank; ++k) {
      const int64_t in_dim = k + in_dims.size() >= rank ? in_dims[k + in_dims.size() - rank] : 1;
      const int64_t to_dim = k + target.size() >= rank ? target[k + target.size() - rank] : 1;
      if (in_dim != to_dim && in_dim != 1 && to_dim != 1)
        Fail(ErrorCode::kInvalidArgument, node.Describe(), ": cannot expand input ", input.shape().ToString(),
             " to shape ", DimsString(target), ": dim ", k, " is ", in_dim, " vs ", to_dim);
      if (to_dim < 0) Fail(ErrorCode::kInvalidArgument, node.Describe(), ": invalid shape ", DimsString(target));
      view.dims[k] = in_dim == 1 ? to_dim : in_dim;
      if (in_dim != 1) view.strides[k] = in_strides[k + in_dims.size() - rank];
    }
    Tensor& out = ctx.Output(0, input.type(), Shape(view.dims));
    CopyStrided(input, view, out, ctx.thread_pool());
  }
};

// The output shape held in a host int64 input; negative dims are errors naming the node.
Shape ShapeFromInput(const Node& node, const Tensor& t) {
  std::vector<int64_t> dims = ReadIntParameter(node, t, "shape");
  for (int64_t d : dims)
    if (d < 0) Fail(ErrorCode::kInvalidArgument, node.Describe(), ": invalid shape ", DimsString(dims));
  return Shape(std::move(dims));
}

void FillWithElement(const Tensor& element, Tensor& out) {
  VisitStorageType(element.type(), [&]<typename S>() {
    std::fill_n(StorageData<S>(out), out.NumElements(), StorageData<S>(element)[0]);
  });
}

class ConstantOfShapeKernel : public Kernel {
 public:
  explicit ConstantOfShapeKernel(const KernelInfo& info) {
    const Node& node = info.node();
    value_ = node.HasAttribute("value") ? node.GetTensor("value") : Tensor::FromVector<float>(Shape{1}, {0.0f});
    if (value_.NumElements() != 1)
      Fail(ErrorCode::kInvalidModel, node.Describe(), ": value must have one element, got ", value_.shape().ToString());
  }
  void Compute(KernelContext& ctx) const override {
    Tensor& out = ctx.Output(0, value_.type(), ShapeFromInput(ctx.node(), ctx.Input(0)));
    FillWithElement(value_, out);
  }

 private:
  Tensor value_;
};

// The tensor a Constant node's value* attribute describes.
Tensor ConstantValue(const Node& node) {
  if (node.HasAttribute("value")) return node.GetTensor("value");
  if (node.HasAttribute("value_float")) return Tensor::FromVector<float>(Shape{}, {node.GetFloat("value_float")});
  if (node.HasAttribute("value_int")) return Tensor::FromVector<int64_t>(Shape{}, {node.GetInt("value_int")});
  if (node.HasAttribute("value_string"))
    return Tensor::FromVector<std::string>(Shape{}, {node.GetString("value_string")});
  if (node.HasAttribute("value_floats")) {
    std::vector<float> v = node.GetFloats("value_floats");
    return Tensor::FromVector<float>(Shape{static_cast<int64_t>(v.size())}, v);
  }
  if (node.HasAttribute("value_ints")) {
    std::vector<int64_t> v = node.GetInts("value_ints");
    return Tensor::FromVector<int64_t>(Shape{static_cast<int64_t>(v.size())}, v);
  }
  if (node.HasAttribute("value_strings")) {
    std::vector<std::string> v = node.GetStrings("value_strings");
    return Tensor::FromVector<std::string>(Shape{static_cast<int64_t>(v.size())}, v);
  }
  if (node.HasAttribute("sparse_value"))
    Fail(ErrorCode::kNotImplemented, node.Describe(), ": sparse_value is not supported");
  Fail(ErrorCode::kInvalidModel, node.Describe(), ": has no value attribute");
}

// Copies the value into the output on every run: outputs may be written by later in-place consumers,
// so the node's attribute must not be shared.
class ConstantKernel : public Kernel {
 public:
  explicit ConstantKernel(const KernelInfo& info) : value_(ConstantValue(info.node())) {}
  void Compute(KernelContext& ctx) const override {
    Tensor& out = ctx.Output(0, value_.type(), value_.shape());
    CopyStrided(value_, DenseView(value_.shape().dims()), out, ctx.thread_pool());
  }

 private:
  Tensor value_;
};

template <typename T>
void FillRange(const Node& node, const Tensor& start_t, const Tensor& limit_t, const Tensor& delta_t,
               KernelContext& ctx) {
  const T start = start_t.Data<T>()[0], limit = limit_t.Data<T>()[0], delta = delta_t.Data<T>()[0];
  if (delta == T{0}) Fail(ErrorCode::kInvalidArgument, node.Describe(), ": delta must not be zero");
  const int64_t count = RangeCount(start, limit, delta);
  T* out = ctx.Output(0, DataTypeOf<T>(), Shape{count}).template Data<T>();
  for (int64_t i = 0; i < count; ++i) out[i] = static_cast<T>(start + static_cast<T>(i) * delta);
}

// Range-27's float16 and bfloat16: with stash_type 1 (float, the default) the values are computed in float and rounded
// once; with stash_type the input's own type, every product and sum is rounded to it, as in that type's arithmetic.
template <typename Half>
void FillHalfRange(const Node& node, const Tensor& start_t, const Tensor& limit_t, const Tensor& delta_t,
                   KernelContext& ctx, bool stash_in_float) {
  const auto round = [](float v) {
    if constexpr (std::is_same_v<Half, Float16>) return ToFloat(ToFloat16(v));
    else return ToFloat(ToBFloat16(v));
  };
  const float start = ToFloat(start_t.Data<Half>()[0]), limit = ToFloat(limit_t.Data<Half>()[0]);
  const float delta = ToFloat(delta_t.Data<Half>()[0]);
  if (delta == 0.0f) Fail(ErrorCode::kInvalidArgument, node.Describe(), ": delta must not be zero");
  const int64_t count = RangeCount(start, limit, delta);
  Half* out = ctx.Output(0, DataTypeOf<Half>(), Shape{count}).template Data<Half>();
  for (int64_t i = 0; i < count; ++i) {
    const float v = stash_in_float ? start + static_cast<float>(i) * delta
                                   : round(start + round(round(static_cast<float>(i)) * delta));
    if constexpr (std::is_same_v<Half, Float16>) out[i] = ToFloat16(v);
    else out[i] = ToBFloat16(v);
  }
}

class RangeKernel : public Kernel {
 public:
  explicit RangeKernel(const KernelInfo& info) : stash_type_(info.node().GetInt("stash_type", 1)) {}
  void Compute(KernelContext& ctx) const override {
    const Node& node = ctx.node();
    const Tensor &start = ctx.Input(0), &limit = ctx.Input(1), &delta = ctx.Input(2);
    for (const Tensor* t : {&start, &limit, &delta}) {
      if (t->type() != start.type() || t->NumElements() != 1)
        Fail(ErrorCode::kInvalidArgument, node.Describe(), ": start, limit and delta must be scalars of one type, got ",
             start.Describe(), ", ", limit.Describe(), ", ", delta.Describe());
    }
    switch (start.type()) {
      case DataType::kFloat:
        return FillRange<float>(node, start, limit, delta, ctx);
      case DataType::kDouble:
        return FillRange<double>(node, start, limit, delta, ctx);
      case DataType::kInt16:
        return FillRange<int16_t>(node, start, limit, delta, ctx);
      case DataType::kInt32:
        return FillRange<int32_t>(node, start, limit, delta, ctx);
      case DataType::kInt64:
        return FillRange<int64_t>(node, start, limit, delta, ctx);
      case DataType::kFloat16:
      case DataType::kBFloat16: {
        const auto stash = static_cast<DataType>(stash_type_);
        if (stash != DataType::kFloat && stash != start.type())
          Fail(ErrorCode::kInvalidModel, node.Describe(), ": stash_type ", stash_type_, " must be 1 (float) or the ",
               "inputs' type (", static_cast<int>(start.type()), ")");
        if (start.type() == DataType::kFloat16)
          return FillHalfRange<Float16>(node, start, limit, delta, ctx, stash == DataType::kFloat);
        return FillHalfRange<BFloat16>(node, start, limit, delta, ctx, stash == DataType::kFloat);
      }
      default:
        Fail(ErrorCode::kNotImplemented, node.Describe(), ": element type ", DataTypeName(start.type()),
             " is not supported");
    }
  }

 private:
  int64_t stash_type_;
};

class EyeLikeKernel : public Kernel {
 public:
  explicit EyeLikeKernel(const KernelInfo& info)
      : dtype_(static_cast<DataType>(info.node().GetInt("dtype", 0))), k_(info.node().GetInt("k", 0)) {}
  void Compute(KernelContext& ctx) const override {
    const Node& node = ctx.node();
    const Tensor& input = ctx.Input(0);
    if (input.shape().rank() != 2)
      Fail(ErrorCode::kInvalidArgument, node.Describe(), ": input must be 2-D, got ", input.shape().ToString());
    const DataType type = dtype_ == DataType::kUndefined ? input.type() : dtype_;
    Tensor& out = ctx.Output(0, type, input.shape());
    const int64_t rows = input.shape()[0], cols = input.shape()[1];
    VisitNumericType(node, type, [&]<typename T>() {
      T* data = static_cast<T*>(out.raw_data());
      std::fill_n(data, rows * cols, Narrow<T>(0));
      for (int64_t r = std::max<int64_t>(0, -k_); r < rows && r + k_ < cols; ++r)
        data[r * cols + r + k_] = Narrow<T>(1);
    });
  }

 private:
  DataType dtype_;
  int64_t k_;
};

KernelDef Def(const char* op, int since) {
  KernelDef def;
  def.op_type = op;
  def.since_version = since;
  def.until_version = kLastOpset;
  return def;
}

KernelDef AliasDef(const char* op, int since, std::vector<int> host_inputs = {}) {
  KernelDef def = Def(op, since);
  def.host_inputs = std::move(host_inputs);
  def.may_alias = true;
  return def;
}

KernelDef HostDef(const char* op, int since, std::vector<int> host_inputs, std::vector<int> host_outputs = {}) {
  KernelDef def = Def(op, since);
  def.host_inputs = std::move(host_inputs);
  def.host_outputs = std::move(host_outputs);
  return def;
}

}  // namespace

void RegisterShapeKernels(KernelRegistry& registry) {
  registry.Register<ShapeOfInputKernel>(HostDef("Shape", 1, {}, {0}));
  registry.Register<SizeKernel>(HostDef("Size", 1, {}, {0}));
  registry.Register<ReshapeKernel>(AliasDef("Reshape", 1, {1}));
  registry.Register<FlattenKernel>(AliasDef("Flatten", 1));
  registry.Register<SqueezeKernel>(AliasDef("Squeeze", 1, {1}));
  registry.Register<UnsqueezeKernel>(AliasDef("Unsqueeze", 1, {1}));
  registry.Register<IdentityKernel>(AliasDef("Identity", 1));
  registry.Register<ExpandKernel>(HostDef("Expand", 8, {1}));
  registry.Register<ConstantOfShapeKernel>(HostDef("ConstantOfShape", 9, {0}));
  registry.Register<ConstantKernel>(Def("Constant", 1));
  registry.Register<RangeKernel>(HostDef("Range", 11, {0, 1, 2}));
  registry.Register<EyeLikeKernel>(Def("EyeLike", 9));
}

}  // namespace tessera::cpu
