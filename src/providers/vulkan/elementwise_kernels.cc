// Elementwise kernels: activations and other unary math (shaders/unary.comp), binary arithmetic with numpy
// broadcasting (shaders/binary.comp), BatchNormalization in inference mode, and Cast between float32 and float16.
#include <algorithm>
#include <array>
#include <cmath>
#include <limits>
#include <set>
#include <string>

#include "tessera/ep/broadcast.h"
#include "tessera/status.h"
#include "vulkan_kernels.h"

namespace tessera::vulkan_ep {

namespace {

// ---- unary -----------------------------------------------------------------------------------------------------

struct UnaryPush {
  uint64_t x, y;
  uint32_t n, op;
  float a, b;
};

// The scalar value of an optional host input (Clip's min and max since opset 11), or `fallback`.
float HostScalar(const KernelContext& ctx, size_t input, float fallback) {
  const Tensor* t = ctx.OptionalInput(input);
  if (t == nullptr) return fallback;
  if (t->NumElements() != 1)
    Fail(ErrorCode::kInvalidArgument, ctx.node(), ": input ", input, " must hold one value, got ", t->shape().ToString());
  if (t->type() == DataType::kFloat) return t->Data<float>()[0];
  if (t->type() == DataType::kFloat16) return ToFloat(t->Data<Float16>()[0]);
  Fail(ErrorCode::kInvalidArgument, ctx.node(), ": input ", input, " has type ", DataTypeName(t->type()));
}

class UnaryKernel : public Kernel {
 public:
  UnaryKernel(const KernelInfo& info, Activation op) : op_(op) {
    const Node& node = info.node();
    const std::string& type = node.op_type;
    if (type == "LeakyRelu") a_ = node.GetFloat("alpha", 0.01f);
    if (type == "Elu") a_ = node.GetFloat("alpha", 1.0f);
    if (type == "HardSigmoid") {
      a_ = node.GetFloat("alpha", 0.2f);
      b_ = node.GetFloat("beta", 0.5f);
    }
    if (type == "Selu") {
      a_ = node.GetFloat("alpha", 1.67326319217681884765625f);
      b_ = node.GetFloat("gamma", 1.05070102214813232421875f);
    }
    if (type == "Gelu" && node.GetString("approximate", "none") == "tanh") op_ = Activation::kGeluTanh;
    if (type == "Clip") {
      clip_inputs_ = node.opset >= 11;
      a_ = node.GetFloat("min", -std::numeric_limits<float>::infinity());
      b_ = node.GetFloat("max", std::numeric_limits<float>::infinity());
    }
  }

  void Compute(KernelContext& ctx) const override {
    const Tensor& x = ctx.Input(0);
    Tensor& y = ctx.Output(0, x.type(), x.shape());
    UnaryPush push{Address(ctx, x, "input 0"), Address(ctx, y, "output 0"), U32(ctx, x.NumElements()),
                   static_cast<uint32_t>(op_), a_, b_};
    if (clip_inputs_) {
      push.a = HostScalar(ctx, 1, -std::numeric_limits<float>::infinity());
      push.b = HostScalar(ctx, 2, std::numeric_limits<float>::infinity());
    }
    DispatchLinear(StreamOf(ctx), std::string("unary") + FloatSuffix(ctx, x.type()), &push, sizeof(push),
                   x.NumElements());
  }

 private:
  Activation op_;
  float a_ = 0, b_ = 0;
  bool clip_inputs_ = false;
};

// ---- binary ----------------------------------------------------------------------------------------------------

enum class BinaryOp : uint32_t { kAdd = 0, kSub = 1, kMul = 2, kDiv = 3, kPow = 4, kMax = 5, kMin = 6, kPRelu = 7 };

constexpr size_t kMaxBinaryRank = 5;

struct BinaryPush {
  uint64_t a, b, c;
  uint32_t n, op, rank;
  uint32_t dims[kMaxBinaryRank];
  uint32_t a_strides[kMaxBinaryRank];
  uint32_t b_strides[kMaxBinaryRank];
};

// Output dims and per-operand element strides (0 where broadcast), with dims of size 1 dropped and neighbours that
// both operands traverse contiguously (or both broadcast) merged.
struct Collapsed {
  std::vector<int64_t> dims, a_strides, b_strides;
};

Collapsed Collapse(const Shape& out, const Shape& a, const Shape& b) {
  const size_t rank = out.rank();
  const std::vector<int64_t> as = BroadcastStrides(a, out), bs = BroadcastStrides(b, out);
  Collapsed c;
  for (size_t d = 0; d < rank; ++d) {
    if (out[d] == 1) continue;
    if (!c.dims.empty()) {
      const int64_t n = out[d];
      const bool a_merge = c.a_strides.back() == as[d] * n;
      const bool b_merge = c.b_strides.back() == bs[d] * n;
      if (a_merge && b_merge) {
        c.dims.back() *= n;
        c.a_strides.back() = as[d];
        c.b_strides.back() = bs[d];
        continue;
      }
    }
    c.dims.push_back(out[d]);
    c.a_strides.push_back(as[d]);
    c.b_strides.push_back(bs[d]);
  }
  if (c.dims.empty()) c = {{1}, {0}, {0}};
  return c;
}

}  // namespace

std::vector<int64_t> BroadcastStrides(const Shape& s, const Shape& out) {
  std::vector<int64_t> strides(out.rank(), 0);
  int64_t stride = 1;
  for (size_t i = 0; i < s.rank(); ++i) {
    const size_t d = s.rank() - 1 - i, o = out.rank() - 1 - i;
    strides[o] = s[d] == 1 ? 0 : stride;
    stride *= s[d];
  }
  return strides;
}

void RecordBroadcastBinary(const KernelContext& ctx, const std::string& shader, uint32_t op, const Tensor& a,
                           const Tensor& b, Tensor& c) {
  if (c.NumElements() == 0) return;
  const Collapsed k = Collapse(c.shape(), a.shape(), b.shape());
  const size_t rank = k.dims.size();
  const size_t outer_rank = rank > kMaxBinaryRank ? rank - kMaxBinaryRank : 0;
  int64_t outer = 1;
  for (size_t d = 0; d < outer_rank; ++d) outer *= k.dims[d];
  int64_t inner = 1;
  BinaryPush push{};
  push.op = op;
  push.rank = static_cast<uint32_t>(rank - outer_rank);
  for (size_t d = outer_rank; d < rank; ++d) {
    push.dims[d - outer_rank] = U32(ctx, k.dims[d]);
    push.a_strides[d - outer_rank] = U32(ctx, k.a_strides[d]);
    push.b_strides[d - outer_rank] = U32(ctx, k.b_strides[d]);
    inner *= k.dims[d];
  }
  push.n = U32(ctx, inner);
  const size_t element = SizeOf(c.type());
  VulkanStream& stream = StreamOf(ctx);
  const uint64_t a0 = Address(ctx, a, "input 0"), b0 = Address(ctx, b, "input 1"), c0 = Address(ctx, c, "output 0");
  for (int64_t o = 0; o < outer; ++o) {  // dimensions beyond the shader's five: one dispatch per outer index
    int64_t rest = o, a_off = 0, b_off = 0;
    for (size_t d = outer_rank; d-- > 0;) {
      const int64_t idx = rest % k.dims[d];
      rest /= k.dims[d];
      a_off += idx * k.a_strides[d];
      b_off += idx * k.b_strides[d];
    }
    push.a = a0 + a_off * element;
    push.b = b0 + b_off * element;
    push.c = c0 + o * inner * element;
    DispatchLinear(stream, shader, &push, sizeof(push), inner);
  }
}

namespace {

// Records c = a op b over tensors already allocated (c has the broadcast shape).
void RecordBinary(const KernelContext& ctx, BinaryOp op, const Tensor& a, const Tensor& b, Tensor& c) {
  RecordBroadcastBinary(ctx, std::string("binary") + FloatSuffix(ctx, c.type()), static_cast<uint32_t>(op), a, b, c);
}

class BinaryKernel : public Kernel {
 public:
  BinaryKernel(const KernelInfo& /*info*/, BinaryOp op) : op_(op) {}
  void Compute(KernelContext& ctx) const override {
    const Node& node = ctx.node();
    if ((op_ == BinaryOp::kMax || op_ == BinaryOp::kMin) && ctx.NumInputs() != 2) {
      ComputeVariadic(ctx);
      return;
    }
    const Tensor& a = ctx.Input(0);
    const Tensor& b = ctx.Input(1);
    if (a.type() != b.type())
      Fail(ErrorCode::kInvalidArgument, node, ": inputs have types ", DataTypeName(a.type()), " and ",
           DataTypeName(b.type()));
    if (op_ == BinaryOp::kPRelu) CheckUnidirectionalBroadcast(node, b.shape(), a.shape(), "slope");
    const Shape out = BroadcastShapes(node, a.shape(), b.shape());
    Tensor& c = ctx.Output(0, a.type(), out);
    RecordBinary(ctx, op_, a, b, c);
  }

 private:
  // Max / Min of one or more than two inputs: pairwise through temporaries.
  void ComputeVariadic(KernelContext& ctx) const {
    std::vector<Shape> shapes;
    for (size_t i = 0; i < ctx.NumInputs(); ++i) shapes.push_back(ctx.Input(i).shape());
    const Shape out = BroadcastShapes(ctx.node(), shapes);
    const Tensor& first = ctx.Input(0);
    Tensor& result = ctx.Output(0, first.type(), out);
    if (ctx.NumInputs() == 1) {
      const size_t bytes = first.SizeInBytes();
      VulkanStream& stream = StreamOf(ctx);
      const VulkanDevice& device = stream.device();
      stream.CopyBuffer(device.Resolve(first.raw_data(), bytes), device.Resolve(result.raw_data(), bytes), bytes);
      return;
    }
    Tensor acc = Tensor::Allocate(first.type(), out, ctx.allocator());
    RecordBinary(ctx, op_, first, ctx.Input(1), ctx.NumInputs() == 2 ? result : acc);
    for (size_t i = 2; i < ctx.NumInputs(); ++i) {
      Tensor& target = i + 1 == ctx.NumInputs() ? result : acc;
      RecordBinary(ctx, op_, acc, ctx.Input(i), target);
    }
    StreamOf(ctx).KeepAlive(acc.buffer());
  }

  BinaryOp op_;
};

// ---- BatchNormalization (inference) ----------------------------------------------------------------------------

struct BatchNormPush {
  uint64_t x, scale, bias, mean, var, y;
  uint32_t n, channels, spatial;
  float epsilon;
};

class BatchNormKernel : public Kernel {
 public:
  explicit BatchNormKernel(const KernelInfo& info) : epsilon_(info.node().GetFloat("epsilon", 1e-5f)) {
    if (info.node().GetInt("training_mode", 0) != 0)
      Fail(ErrorCode::kNotImplemented, info.node(), ": the Vulkan EP runs BatchNormalization in inference mode only");
  }
  void Compute(KernelContext& ctx) const override {
    const Tensor& x = ctx.Input(0);
    if (x.shape().rank() < 2)
      Fail(ErrorCode::kInvalidArgument, ctx.node(), ": X must have rank >= 2, got ", x.shape().ToString());
    const int64_t channels = x.shape()[1];
    for (size_t i = 1; i <= 4; ++i)
      if (ctx.Input(i).NumElements() != channels)
        Fail(ErrorCode::kInvalidArgument, ctx.node(), ": input ", i, " must hold ", channels, " values, got ",
             ctx.Input(i).shape().ToString());
    Tensor& y = ctx.Output(0, x.type(), x.shape());
    const int64_t spatial = channels == 0 ? 0 : x.NumElements() / std::max<int64_t>(1, x.shape()[0] * channels);
    BatchNormPush push{Address(ctx, x, "X"), Address(ctx, ctx.Input(1), "scale"), Address(ctx, ctx.Input(2), "B"),
                       Address(ctx, ctx.Input(3), "input_mean"), Address(ctx, ctx.Input(4), "input_var"),
                       Address(ctx, y, "Y"), U32(ctx, x.NumElements()), U32(ctx, channels),
                       U32(ctx, std::max<int64_t>(spatial, 1)), epsilon_};
    DispatchLinear(StreamOf(ctx), std::string("batch_norm") + FloatSuffix(ctx, x.type()), &push, sizeof(push),
                   x.NumElements());
  }

 private:
  float epsilon_;
};

// ---- Cast float32 <-> float16, int32 / int64 -> float32 / float16 ----------------------------------------------

struct CastPush {
  uint64_t x, y;
  uint32_t n;
};

// The shader-name code of a type: f32, f16, i32, i64, b8 (bool); "?" for others.
const char* TypeCode(DataType type) {
  switch (type) {
    case DataType::kFloat: return "f32";
    case DataType::kFloat16: return "f16";
    case DataType::kInt32: return "i32";
    case DataType::kInt64: return "i64";
    case DataType::kBool: return "b8";
    default: return "?";
  }
}

class CastKernel : public Kernel {
 public:
  explicit CastKernel(const KernelInfo& info) : to_(static_cast<DataType>(info.node().GetInt("to"))) {}
  void Compute(KernelContext& ctx) const override {
    const Tensor& x = ctx.Input(0);
    Tensor& y = ctx.Output(0, to_, x.shape());
    VulkanStream& stream = StreamOf(ctx);
    if (x.type() == to_) {
      const size_t bytes = x.SizeInBytes();
      if (bytes > 0)
        stream.CopyBuffer(stream.device().Resolve(x.raw_data(), bytes), stream.device().Resolve(y.raw_data(), bytes),
                          bytes);
      return;
    }
    // The compiled variants (CMakeLists.txt): cast_<from>_<to>.
    static const std::set<std::string> kVariants = {"cast_f32_f16", "cast_f16_f32", "cast_i32_f32", "cast_i64_f32",
                                                     "cast_i32_f16", "cast_i64_f16", "cast_b8_f32",  "cast_b8_f16",
                                                     "cast_f32_b8",  "cast_f16_b8",  "cast_i32_b8",  "cast_i64_b8"};
    const std::string shader = std::string("cast_") + TypeCode(x.type()) + "_" + TypeCode(to_);
    if (!kVariants.count(shader))
      Fail(ErrorCode::kNotImplemented, ctx.node(), ": the Vulkan EP casts between float and float16, from int32 ",
           "and int64 to those, and between bool and those, not ", DataTypeName(x.type()), " to ", DataTypeName(to_));
    CastPush push{Address(ctx, x, "input"), Address(ctx, y, "output"), U32(ctx, x.NumElements())};
    DispatchLinear(stream, shader, &push, sizeof(push), x.NumElements());
  }

 private:
  DataType to_;
};

}  // namespace

void RegisterElementwiseKernels(KernelRegistry& registry, const PhysicalDeviceInfo& device) {
  const std::vector<DataType> floats = FloatTypes(device);
  const std::vector<std::pair<const char*, Activation>> unary = {
      {"Relu", Activation::kRelu},           {"Sigmoid", Activation::kSigmoid},
      {"Tanh", Activation::kTanh},           {"LeakyRelu", Activation::kLeakyRelu},
      {"Clip", Activation::kClip},           {"HardSigmoid", Activation::kHardSigmoid},
      {"HardSwish", Activation::kHardSwish}, {"Gelu", Activation::kGelu},
      {"Exp", Activation::kExp},             {"Log", Activation::kLog},
      {"Sqrt", Activation::kSqrt},           {"Neg", Activation::kNeg},
      {"Abs", Activation::kAbs},             {"Erf", Activation::kErf},
      {"Reciprocal", Activation::kReciprocal}, {"Floor", Activation::kFloor},
      {"Ceil", Activation::kCeil},           {"Elu", Activation::kElu},
      {"Softplus", Activation::kSoftplus},   {"Softsign", Activation::kSoftsign},
      {"Sin", Activation::kSin},             {"Cos", Activation::kCos},
      {"Round", Activation::kRound},         {"Sign", Activation::kSign},
      {"Selu", Activation::kSelu},
  };
  for (const auto& [op, code] : unary) {
    KernelDef def = Def(op, "", 1, kLatestOnnxOpset, {{0, floats}});
    if (std::string(op) == "Clip") {
      def.host_inputs = {1, 2};
      def.input_types = {{0, floats}, {1, floats}, {2, floats}};
    }
    const Activation activation = code;
    registry.Register(def, [activation](const KernelInfo& info) { return std::make_unique<UnaryKernel>(info, activation); });
  }
  const std::vector<std::pair<const char*, BinaryOp>> binary = {
      {"Add", BinaryOp::kAdd}, {"Sub", BinaryOp::kSub}, {"Mul", BinaryOp::kMul}, {"Div", BinaryOp::kDiv},
      {"Pow", BinaryOp::kPow}, {"Max", BinaryOp::kMax}, {"Min", BinaryOp::kMin}, {"PRelu", BinaryOp::kPRelu},
  };
  for (const auto& [op, code] : binary) {
    // Opset 7 introduced numpy broadcasting (Max/Min: opset 8); earlier opsets run on the CPU.
    const int since = std::string(op) == "Max" || std::string(op) == "Min" ? 8 : 7;
    KernelDef def = Def(op, "", since, kLatestOnnxOpset, {{0, floats}, {1, floats}});
    const BinaryOp binary_op = code;
    registry.Register(def, [binary_op](const KernelInfo& info) { return std::make_unique<BinaryKernel>(info, binary_op); });
  }
  registry.Register<BatchNormKernel>(Def("BatchNormalization", "", 9, kLatestOnnxOpset, {{0, floats}}));
  // Cast: float <-> float16 where the device has float16, int32 / int64 -> float (and float16 there): attention
  // masks, indices; bool <-> those where the device has 8-bit storage (the targets: AttributesSupported, vulkan_ep.cc).
  std::vector<DataType> cast_from = {DataType::kFloat, DataType::kInt32, DataType::kInt64};
  if (device.float16) cast_from.push_back(DataType::kFloat16);
  if (device.storage8) cast_from.push_back(DataType::kBool);
  registry.Register<CastKernel>(Def("Cast", "", 6, kLatestOnnxOpset, {{0, cast_from}}));
}

}  // namespace tessera::vulkan_ep
