// Kernels of bool tensors (one byte per element, 0 or 1; registered where the device has 8-bit storage): And, Or,
// Xor and Not (shaders/logic.comp), Where over a bool condition (shaders/where.comp), IsNaN (shaders/cast.comp). Transformer exports compute
// their attention masks this way (Cast to bool, And of the padding and causal masks, Where(mask, 0, -inf)); with these
// the whole mask stays on the device and the run can be recorded.
#include <string>
#include <vector>

#include "tessera/ep/broadcast.h"
#include "tessera/status.h"
#include "vulkan_kernels.h"

namespace tessera::vulkan_ep {

namespace {

enum class LogicOp : uint32_t { kAnd = 0, kOr = 1, kXor = 2, kNot = 3 };

void CheckBool(const KernelContext& ctx, const Tensor& t, const char* what) {
  if (t.type() != DataType::kBool)
    Fail(ErrorCode::kInvalidArgument, ctx.node(), ": ", what, " is ", t.Describe(), ", expected bool");
}

class LogicKernel : public Kernel {
 public:
  LogicKernel(const KernelInfo& /*info*/, LogicOp op) : op_(op) {}
  void Compute(KernelContext& ctx) const override {
    const Tensor& a = ctx.Input(0);
    CheckBool(ctx, a, "input 0");
    if (op_ == LogicOp::kNot) {
      Tensor& y = ctx.Output(0, DataType::kBool, a.shape());
      RecordBroadcastBinary(ctx, "logic_b8", static_cast<uint32_t>(op_), a, a, y);
      return;
    }
    const Tensor& b = ctx.Input(1);
    CheckBool(ctx, b, "input 1");
    Tensor& c = ctx.Output(0, DataType::kBool, BroadcastShapes(ctx.node(), a.shape(), b.shape()));
    RecordBroadcastBinary(ctx, "logic_b8", static_cast<uint32_t>(op_), a, b, c);
  }

 private:
  LogicOp op_;
};

struct IsNanPush {
  uint64_t x, y;
  uint32_t n;
};

// IsNaN of float32 / float16 (cast.comp's IS_NAN variants): the NaN guards exporters put after a Softmax.
class IsNanKernel : public Kernel {
 public:
  explicit IsNanKernel(const KernelInfo& /*info*/) {}
  void Compute(KernelContext& ctx) const override {
    const Tensor& x = ctx.Input(0);
    Tensor& y = ctx.Output(0, DataType::kBool, x.shape());
    if (y.NumElements() == 0) return;
    IsNanPush push{Address(ctx, x, "X"), Address(ctx, y, "Y"), U32(ctx, x.NumElements())};
    DispatchLinear(StreamOf(ctx), std::string("isnan") + FloatSuffix(ctx, x.type()), &push, sizeof(push),
                   x.NumElements());
  }
};

constexpr size_t kMaxWhereRank = 5;

struct WherePush {
  uint64_t c, x, y, out;
  uint32_t n, rank;
  uint32_t dims[kMaxWhereRank];
  uint32_t c_strides[kMaxWhereRank];
  uint32_t x_strides[kMaxWhereRank];
  uint32_t y_strides[kMaxWhereRank];
};
static_assert(sizeof(WherePush) <= kPushConstantBytes);

class WhereKernel : public Kernel {
 public:
  explicit WhereKernel(const KernelInfo& /*info*/) {}
  void Compute(KernelContext& ctx) const override {
    const Tensor& condition = ctx.Input(0);
    const Tensor& x = ctx.Input(1);
    const Tensor& y = ctx.Input(2);
    CheckBool(ctx, condition, "condition");
    if (x.type() != y.type())
      Fail(ErrorCode::kInvalidArgument, ctx.node(), ": X is ", x.Describe(), " and Y ", y.Describe());
    const std::vector<Shape> shapes = {condition.shape(), x.shape(), y.shape()};
    const Shape out_shape = BroadcastShapes(ctx.node(), shapes);
    Tensor& out = ctx.Output(0, x.type(), out_shape);
    if (out.NumElements() == 0) return;
    const std::string shader = std::string("where") + FloatSuffix(ctx, x.type());
    // Dimensions of size 1 dropped; beyond five, the leading ones run as one dispatch per outer index.
    std::vector<int64_t> dims;
    std::vector<std::vector<int64_t>> strides(3);
    const std::vector<int64_t> full[3] = {BroadcastStrides(condition.shape(), out_shape),
                                          BroadcastStrides(x.shape(), out_shape), BroadcastStrides(y.shape(), out_shape)};
    for (size_t d = 0; d < out_shape.rank(); ++d) {
      if (out_shape[d] == 1) continue;
      dims.push_back(out_shape[d]);
      for (int k = 0; k < 3; ++k) strides[k].push_back(full[k][d]);
    }
    if (dims.empty()) dims = {1}, strides = {{0}, {0}, {0}};
    const size_t rank = dims.size();
    const size_t outer_rank = rank > kMaxWhereRank ? rank - kMaxWhereRank : 0;
    int64_t outer = 1, inner = 1;
    for (size_t d = 0; d < outer_rank; ++d) outer *= dims[d];
    WherePush push{};
    push.rank = static_cast<uint32_t>(rank - outer_rank);
    for (size_t d = outer_rank; d < rank; ++d) {
      push.dims[d - outer_rank] = U32(ctx, dims[d]);
      push.c_strides[d - outer_rank] = U32(ctx, strides[0][d]);
      push.x_strides[d - outer_rank] = U32(ctx, strides[1][d]);
      push.y_strides[d - outer_rank] = U32(ctx, strides[2][d]);
      inner *= dims[d];
    }
    push.n = U32(ctx, inner);
    const size_t element = SizeOf(x.type());
    const uint64_t c0 = Address(ctx, condition, "condition"), x0 = Address(ctx, x, "X"), y0 = Address(ctx, y, "Y");
    const uint64_t out0 = Address(ctx, out, "output");
    VulkanStream& stream = StreamOf(ctx);
    for (int64_t o = 0; o < outer; ++o) {
      int64_t rest = o, offsets[3] = {0, 0, 0};
      for (size_t d = outer_rank; d-- > 0;) {
        const int64_t idx = rest % dims[d];
        rest /= dims[d];
        for (int k = 0; k < 3; ++k) offsets[k] += idx * strides[k][d];
      }
      push.c = c0 + offsets[0];
      push.x = x0 + offsets[1] * element;
      push.y = y0 + offsets[2] * element;
      push.out = out0 + o * inner * element;
      DispatchLinear(stream, shader, &push, sizeof(push), inner);
    }
  }
};

}  // namespace

void RegisterLogicKernels(KernelRegistry& registry, const PhysicalDeviceInfo& device) {
  if (!device.storage8) return;
  const std::vector<DataType> bools = {DataType::kBool};
  const std::pair<const char*, LogicOp> binary[] = {{"And", LogicOp::kAnd}, {"Or", LogicOp::kOr}, {"Xor", LogicOp::kXor}};
  for (const auto& [op, code] : binary) {
    const LogicOp logic = code;
    registry.Register(Def(op, "", 7, kLatestOnnxOpset, {{0, bools}, {1, bools}}),
                      [logic](const KernelInfo& info) { return std::make_unique<LogicKernel>(info, logic); });
  }
  registry.Register(Def("Not", "", 1, kLatestOnnxOpset, {{0, bools}}),
                    [](const KernelInfo& info) { return std::make_unique<LogicKernel>(info, LogicOp::kNot); });
  registry.Register<WhereKernel>(Def("Where", "", 9, kLatestOnnxOpset, {{0, bools}, {1, FloatTypes(device)}}));
  registry.Register<IsNanKernel>(Def("IsNaN", "", 9, kLatestOnnxOpset, {{0, FloatTypes(device)}}));
}

}  // namespace tessera::vulkan_ep
