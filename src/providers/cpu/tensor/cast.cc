// Cast and CastLike between all numeric types, bool, 16-bit floats and strings.
//
// Numbers convert like static_cast (to bool: non-zero is true). Strings parse plain and scientific
// notation plus "INF", "+INF", "-INF" and "NaN" in any case; numbers format as the shortest text that
// reads back to the same value ("0.1", "1e-05"), infinities as "INF" / "-INF", NaN as "NaN", bool as
// "1" / "0".
#include <cstring>
#include <algorithm>
#include <charconv>
#include <cmath>
#include <map>
#include <string>
#include <type_traits>

#include "providers/cpu/common/elementwise_kernel.h"
#include "providers/cpu/common/half_conversion.h"
#include "providers/cpu/cpu_kernels.h"

namespace tessera::cpu {
namespace {

using CastTypes = TypeList<float, double, int8_t, int16_t, int32_t, int64_t, uint8_t, uint16_t, uint32_t, uint64_t, bool,
                           Float16, BFloat16, std::string>;

template <typename T>
constexpr bool kIsFloat16Like = std::is_same_v<T, Float16> || std::is_same_v<T, BFloat16>;

template <typename S>
std::string FormatNumber(S value) {
  if constexpr (std::is_same_v<S, bool>) {
    return value ? "1" : "0";
  } else {
    const auto v = Load(value);
    if constexpr (std::is_floating_point_v<decltype(v)>) {
      if (std::isnan(v)) return "NaN";
      if (std::isinf(v)) return v > 0 ? "INF" : "-INF";
    }
    char buffer[64];
    const auto result = std::to_chars(buffer, buffer + sizeof(buffer), v);
    return std::string(buffer, result.ptr);
  }
}

bool EqualsIgnoringCase(const std::string& a, const char* b) {
  const std::string_view sb(b);
  return a.size() == sb.size() && std::equal(a.begin(), a.end(), sb.begin(), [](char x, char y) {
           return std::tolower(static_cast<unsigned char>(x)) == std::tolower(static_cast<unsigned char>(y));
         });
}

// Parses the whole of `text` as a double (from_chars: locale-independent); accepts a leading '+'.
bool ParseDouble(const std::string& text, double& value) {
  const char* begin = text.data();
  const char* end = begin + text.size();
  if (begin != end && *begin == '+') ++begin;
  const auto result = std::from_chars(begin, end, value);
  return result.ec == std::errc() && result.ptr == end;
}

template <typename D>
D ParseNumber(const Node& node, const std::string& text) {
  if constexpr (std::is_same_v<D, bool>) {
    if (EqualsIgnoringCase(text, "true")) return true;
    if (EqualsIgnoringCase(text, "false")) return false;
  }
  if constexpr (std::is_integral_v<D> && !std::is_same_v<D, bool>) {
    D exact{};
    const auto result = std::from_chars(text.data(), text.data() + text.size(), exact);
    if (result.ec == std::errc() && result.ptr == text.data() + text.size()) return exact;
  }
  double value = 0;
  if (!ParseDouble(text, value)) {
    Fail(ErrorCode::kInvalidArgument, node.Describe(), ": cannot convert string '", text, "' to ",
         DataTypeName(DataTypeOf<D>()));
  }
  if constexpr (std::is_same_v<D, bool>) {
    return value != 0;
  } else {
    return Store<D>(value);
  }
}

// One element from S to D (neither is a string).
template <typename D, typename S>
D ConvertNumber(S value) {
  if constexpr (std::is_same_v<D, S>) {
    return value;
  } else if constexpr (std::is_same_v<D, bool>) {
    return Load(value) != 0;
  } else if constexpr (kIsFloat16Like<D>) {
    return Store<D>(static_cast<float>(Load(value)));
  } else {
    return static_cast<D>(Load(value));
  }
}

template <typename S, typename D>
void ConvertAll(KernelContext& ctx, const Tensor& x, Tensor& y) {
  const S* in = x.Data<S>();
  D* out = y.Data<D>();
  const int64_t n = x.NumElements();
  const Node& node = ctx.node();
  if constexpr (std::is_same_v<S, D>) {
    std::copy(in, in + n, out);
  } else if constexpr ((std::is_same_v<S, float> && kIsFloat16Like<D>) || (kIsFloat16Like<S> && std::is_same_v<D, float>)) {
    ConvertHalfTensor(x, y, &ctx.thread_pool());  // F16C where the CPU has it (a float16 model's input and output Casts)
  } else if constexpr (std::is_same_v<S, std::string>) {
    UnaryMap(ctx.thread_pool(), in, out, n, [&node](const std::string& s) { return ParseNumber<D>(node, s); });
  } else if constexpr (std::is_same_v<D, std::string>) {
    UnaryMap(ctx.thread_pool(), in, out, n, [](S v) { return FormatNumber(v); });
  } else {
    UnaryMap(ctx.thread_pool(), in, out, n, [](S v) { return ConvertNumber<D>(v); });
  }
}

void ConvertTensor(KernelContext& ctx, const Tensor& x, Tensor& y) {
  DispatchType(x.type(), CastTypes{}, ctx.node(), [&](auto source) {
    DispatchType(y.type(), CastTypes{}, ctx.node(), [&](auto target) {
      ConvertAll<typename decltype(source)::type, typename decltype(target)::type>(ctx, x, y);
    });
  });
}

bool IsCastType(DataType type) {
  const std::vector<DataType> types = DataTypesOf(CastTypes{});
  return std::find(types.begin(), types.end(), type) != types.end();
}

// Cast opset 1 names the target type as a string: the TensorProto.DataType enum name ("FLOAT").
int64_t TypeFromEnumName(const Node& node, const std::string& name) {
  static const std::map<std::string, DataType> kNames = {
      {"FLOAT", DataType::kFloat},   {"UINT8", DataType::kUInt8},     {"INT8", DataType::kInt8},
      {"UINT16", DataType::kUInt16}, {"INT16", DataType::kInt16},     {"INT32", DataType::kInt32},
      {"INT64", DataType::kInt64},   {"STRING", DataType::kString},   {"BOOL", DataType::kBool},
      {"FLOAT16", DataType::kFloat16}, {"DOUBLE", DataType::kDouble}, {"UINT32", DataType::kUInt32},
      {"UINT64", DataType::kUInt64}, {"BFLOAT16", DataType::kBFloat16}};
  const auto it = kNames.find(name);
  if (it == kNames.end())
    Fail(ErrorCode::kNotImplemented, node.Describe(), ": casting to data type ", name, " is not supported");
  return static_cast<int64_t>(it->second);
}

// Cast: the target type comes from attribute `to` (an int, or before opset 6 a type name).
class CastKernel : public Kernel {
 public:
  explicit CastKernel(const KernelInfo& info) : to_(TargetType(info.node())) {}

  void Compute(KernelContext& ctx) const override {
    const Tensor& x = ctx.Input(0);
    ConvertTensor(ctx, x, ctx.Output(0, to_, x.shape()));
  }

 private:
  static DataType TargetType(const Node& node) {
    const auto attribute = node.attributes.find("to");
    const bool named = attribute != node.attributes.end() && attribute->second.type == Attribute::Type::kString;
    const int64_t to = named ? TypeFromEnumName(node, attribute->second.s) : node.GetInt("to");
    const auto type = static_cast<DataType>(to);
    if (to < INT32_MIN || to > INT32_MAX || !IsKnownDataType(static_cast<int32_t>(to)) || !IsCastType(type))
      Fail(ErrorCode::kNotImplemented, node.Describe(), ": casting to data type ", to, " is not supported");
    return type;
  }

  DataType to_;
};

// CastLike: the target type is the type of input 1.
class CastLikeKernel : public Kernel {
 public:
  explicit CastLikeKernel(const KernelInfo&) {}

  void Compute(KernelContext& ctx) const override {
    const Tensor& x = ctx.Input(0);
    ConvertTensor(ctx, x, ctx.Output(0, ctx.Input(1).type(), x.shape()));
  }
};

// BitCast (opset 26): the input's bytes as elements of type `to`, of the same width (little endian, as this host).
class BitCastKernel : public Kernel {
 public:
  explicit BitCastKernel(const KernelInfo& info) {
    const Node& node = info.node();
    const int64_t to = node.GetInt("to");
    if (to <= 0 || to > static_cast<int64_t>(DataType::kBFloat16) || to == static_cast<int64_t>(DataType::kString))
      Fail(ErrorCode::kNotImplemented, node.Describe(), ": attribute to = ", to,
           " is not an element type Tessera has (or is string, which BitCast excludes)");
    to_ = static_cast<DataType>(to);
  }
  void Compute(KernelContext& ctx) const override {
    const Tensor& x = ctx.Input(0);
    if (x.type() == DataType::kString || SizeOf(x.type()) != SizeOf(to_))
      Fail(ErrorCode::kInvalidArgument, ctx.node().Describe(), ": ", DataTypeName(x.type()), " (",
           x.type() == DataType::kString ? 0 : SizeOf(x.type()) * 8, " bits) cannot be reinterpreted as ",
           DataTypeName(to_), " (", SizeOf(to_) * 8, " bits): the widths must match");
    Tensor& y = ctx.Output(0, to_, x.shape());
    if (x.NumElements() > 0) std::memcpy(y.raw_data(), x.raw_data(), x.SizeInBytes());
  }

 private:
  DataType to_ = DataType::kUndefined;
};

}  // namespace

void RegisterCastKernels(KernelRegistry& registry) {
  const std::vector<DataType> types = DataTypesOf(CastTypes{});
  KernelDef cast;
  cast.op_type = "Cast";
  cast.since_version = 1;
  cast.until_version = kLatestOpset;
  cast.input_types = {{0, types}};
  registry.Register<CastKernel>(std::move(cast));

  KernelDef cast_like;
  cast_like.op_type = "CastLike";
  cast_like.since_version = 15;
  cast_like.until_version = kLatestOpset;
  cast_like.input_types = {{0, types}, {1, types}};
  registry.Register<CastLikeKernel>(std::move(cast_like));

  KernelDef bit_cast;
  bit_cast.op_type = "BitCast";
  bit_cast.since_version = 26;
  bit_cast.until_version = kLatestOpset;
  registry.Register<BitCastKernel>(std::move(bit_cast));
}

}  // namespace tessera::cpu
