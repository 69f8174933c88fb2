#include "vulkan_kernels.h"

#include <algorithm>
#include <string_view>

#include "tessera/status.h"

namespace tessera::vulkan_ep {

VulkanStream& StreamOf(const KernelContext& ctx) {
  auto* stream = dynamic_cast<VulkanStream*>(ctx.stream());
  if (stream == nullptr) Fail(ErrorCode::kRuntime, ctx.node(), ": the Vulkan EP's kernel was not given a Vulkan stream");
  return *stream;
}

uint64_t Address(const KernelContext& ctx, const Tensor& t, const char* what) {
  const MemoryInfo& info = t.memory_info();
  if (info.address_space != kVulkanAddressSpace || info.memory_type != MemoryType::kDefault)
    Fail(ErrorCode::kInvalidArgument, ctx.node(), ": ", what, " is in ", info.ToString(),
         ", not in the Vulkan device's memory (a missing copy?)");
  return reinterpret_cast<uintptr_t>(t.raw_data());
}

const char* FloatSuffix(const KernelContext& ctx, DataType type) {
  if (type == DataType::kFloat) return "_f32";
  if (type == DataType::kFloat16) return "_f16";
  Fail(ErrorCode::kNotImplemented, ctx.node(), ": the Vulkan EP has no ", DataTypeName(type), " kernel for it");
}

void DispatchLinear(VulkanStream& stream, const std::string& shader, const void* push, size_t push_bytes, uint64_t n) {
  if (n == 0) return;
  const uint64_t groups = (n + 255) / 256;
  const uint32_t x = static_cast<uint32_t>(std::min<uint64_t>(groups, 65535));
  const uint32_t y = static_cast<uint32_t>((groups + x - 1) / x);
  stream.Dispatch(shader, push, push_bytes, x, y);
}

void DispatchRows(VulkanStream& stream, const std::string& shader, const void* push, size_t push_bytes, uint64_t rows) {
  if (rows == 0) return;
  const uint32_t x = static_cast<uint32_t>(std::min<uint64_t>(rows, 65535));
  const uint32_t y = static_cast<uint32_t>((rows + x - 1) / x);
  stream.Dispatch(shader, push, push_bytes, x, y);
}

Activation ShaderActivation(const FusedActivation& a) {
  switch (a.kind) {
    case FusedActivation::Kind::kNone: return Activation::kNone;
    case FusedActivation::Kind::kRelu: return Activation::kRelu;
    case FusedActivation::Kind::kLeakyRelu: return Activation::kLeakyRelu;
    case FusedActivation::Kind::kClip: return Activation::kClip;
    case FusedActivation::Kind::kSigmoid: return Activation::kSigmoid;
    case FusedActivation::Kind::kHardSigmoid: return Activation::kHardSigmoid;
    case FusedActivation::Kind::kHardSwish: return Activation::kHardSwish;
    case FusedActivation::Kind::kTanh: return Activation::kTanh;
    case FusedActivation::Kind::kGelu: return Activation::kGelu;
    case FusedActivation::Kind::kGeluTanh: return Activation::kGeluTanh;
    case FusedActivation::Kind::kSwish: return Activation::kSwish;
  }
  return Activation::kNone;
}

std::string ProductShader(const VulkanStream& stream, const char* base, const char* suffix) {
  if (std::string_view(suffix) == "_f16" && stream.device().info().coop_f16) return std::string(base) + "_coop_f16";
  return std::string(base) + suffix;
}

uint32_t SplitsFor(uint64_t workgroups, uint64_t depth) {
  if (workgroups == 0 || workgroups >= 128 || depth == 0) return 1;
  const uint64_t wanted = (256 + workgroups - 1) / workgroups;
  const uint64_t deepest = std::max<uint64_t>(depth / 16, 1);
  const uint64_t splits = std::clamp<uint64_t>(std::min(wanted, deepest), 1, 32);
  // The shaders give each split ceil(depth / (splits * 16)) * 16 of the depth; with that rounding fewer splits may
  // cover it (768 deep in 11 splits of 80: ten), and a split past the end would only add zeros.
  const uint64_t chunk = (depth + splits * 16 - 1) / (splits * 16) * 16;
  return static_cast<uint32_t>(std::max<uint64_t>((depth + chunk - 1) / chunk, 1));
}

uint32_t U32(const KernelContext& ctx, int64_t value) {
  if (value < 0 || value > UINT32_MAX)
    Fail(ErrorCode::kNotImplemented, ctx.node(), ": a size of ", value, " does not fit the Vulkan kernels' 32-bit indices");
  return static_cast<uint32_t>(value);
}

KernelDef Def(const std::string& op, const std::string& domain, int since, int until,
              std::map<int, std::vector<DataType>> input_types) {
  KernelDef def;
  def.op_type = op;
  def.domain = domain;
  def.since_version = since;
  def.until_version = until;
  def.input_types = std::move(input_types);
  return def;
}

std::vector<DataType> FloatTypes(const PhysicalDeviceInfo& device) {
  if (device.float16) return {DataType::kFloat, DataType::kFloat16};
  return {DataType::kFloat};
}

}  // namespace tessera::vulkan_ep
