// Kernels of the Vulkan EP: each records compute dispatches of the embedded shaders on the run's VulkanStream.
// Tensors in the EP's device memory carry buffer device addresses, which go to the shaders in push constants.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "tessera/ep/fused_activation.h"
#include "tessera/ep/kernel.h"
#include "vulkan_device.h"
#include "vulkan_stream.h"

namespace tessera::vulkan_ep {

// Activation codes of the shaders (shaders/common.glsl, Activate).
enum class Activation : uint32_t {
  kNone = 0, kRelu = 1, kSigmoid = 2, kTanh = 3, kLeakyRelu = 4, kClip = 5, kHardSigmoid = 6, kHardSwish = 7,
  kGelu = 8, kGeluTanh = 9, kExp = 10, kLog = 11, kSqrt = 12, kNeg = 13, kAbs = 14, kErf = 15, kReciprocal = 16,
  kFloor = 17, kCeil = 18, kElu = 19, kSoftplus = 20, kSoftsign = 21, kSin = 22, kCos = 23, kRound = 24, kSign = 25,
  kSelu = 26, kSwish = 27,
};

// The shader's activation code for a fused node's activation.
Activation ShaderActivation(const FusedActivation& a);

// The run's stream; throws kRuntime naming the node when the kernel was not given a Vulkan stream.
VulkanStream& StreamOf(const KernelContext& ctx);
// The device address of `t` (in the EP's device memory); throws kInvalidArgument naming the node and `what` when it
// lies in other memory (a missing copy).
uint64_t Address(const KernelContext& ctx, const Tensor& t, const char* what);
// "_f32" or "_f16" for the element type of a float tensor; throws kNotImplemented naming the node otherwise.
const char* FloatSuffix(const KernelContext& ctx, DataType type);
// Dispatches a one-dimensional shader (256 invocations per workgroup) over `n` invocations, as a 2-D grid of
// workgroups when there are more than 65535.
void DispatchLinear(VulkanStream& stream, const std::string& shader, const void* push, size_t push_bytes, uint64_t n);
// Copies `bytes` from device address `src` to device address `dst` with the strided-copy shader, for memory
// vkCmdCopyBuffer cannot reach (an application's buffer the EP knows only by its address): 32-bit words when both
// addresses and the size are multiples of 4, else bytes (which need the device's 8-bit storage). Throws
// kNotImplemented naming the copy when neither applies.
void RecordAddressCopy(VulkanStream& stream, uint64_t src, uint64_t dst, size_t bytes);
// Dispatches a row shader (one workgroup per row) over `rows` rows.
void DispatchRows(VulkanStream& stream, const std::string& shader, const void* push, size_t push_bytes, uint64_t rows);
// The shader of a tiled product (`base` "matmul" or "conv2d") for `suffix` ("_f32" / "_f16"): the float16 variant on
// cooperative matrices ("<base>_coop_f16", shaders/coop_tile.glsl) where the stream's device has them
// (PhysicalDeviceInfo::coop_f16), else "<base><suffix>".
std::string ProductShader(const VulkanStream& stream, const char* base, const char* suffix);
// Split-K: into how many depth chunks a matrix product or convolution of `workgroups` output tiles over `depth`
// is split, so that small grids (batch 1, late layers) still fill the GPU: 1 when the grid has 128 tiles or more;
// otherwise enough chunks for about 256 workgroups, each at least one 16-deep slice, at most 32. The shaders round
// chunks up to whole 16-deep slices (coop_tile.glsl). Chunks of one slice rather than at least four (64 deep) took
// MobileNetV2 fp16 from 0.64 to 0.57-0.59 ms recorded on an H200, ResNet-50 and BERT-base unchanged within noise
// (bench/results/gpu-2026-11-29-session34/, lease 7).
uint32_t SplitsFor(uint64_t workgroups, uint64_t depth);

// A uint32 push-constant value; throws kNotImplemented naming the node when `value` does not fit (tensors of 2^32
// elements or more).
uint32_t U32(const KernelContext& ctx, int64_t value);

// Element strides of an operand of shape `s` read over the broadcast shape `out` (0 along broadcast dimensions).
std::vector<int64_t> BroadcastStrides(const Shape& s, const Shape& out);
// Records c = a op b with numpy broadcasting through `shader`, a shader taking binary.comp's push constants (the
// operands' addresses, n, op, rank, dims and strides over at most 5 collapsed dimensions; more run as one dispatch
// per outer index). c is allocated with the broadcast shape; all three have elements of c's size.
void RecordBroadcastBinary(const KernelContext& ctx, const std::string& shader, uint32_t op, const Tensor& a,
                           const Tensor& b, Tensor& c);

// A kernel definition: op, domain, opsets (inclusive) and accepted element types per input.
KernelDef Def(const std::string& op, const std::string& domain, int since, int until,
              std::map<int, std::vector<DataType>> input_types);

// The float types a kernel registers for: float32, and float16 when the device has 16-bit storage and arithmetic.
std::vector<DataType> FloatTypes(const PhysicalDeviceInfo& device);

void RegisterElementwiseKernels(KernelRegistry& registry, const PhysicalDeviceInfo& device);
void RegisterMatMulKernels(KernelRegistry& registry, const PhysicalDeviceInfo& device);
void RegisterConvKernels(KernelRegistry& registry, const PhysicalDeviceInfo& device);
void RegisterNormalizationKernels(KernelRegistry& registry, const PhysicalDeviceInfo& device);
void RegisterTensorKernels(KernelRegistry& registry, const PhysicalDeviceInfo& device);
void RegisterLogicKernels(KernelRegistry& registry, const PhysicalDeviceInfo& device);
void RegisterAttentionKernels(KernelRegistry& registry, const PhysicalDeviceInfo& device);

inline void RegisterVulkanKernels(KernelRegistry& registry, const PhysicalDeviceInfo& device) {
  RegisterElementwiseKernels(registry, device);
  RegisterMatMulKernels(registry, device);
  RegisterConvKernels(registry, device);
  RegisterNormalizationKernels(registry, device);
  RegisterTensorKernels(registry, device);
  RegisterLogicKernels(registry, device);
  RegisterAttentionKernels(registry, device);
}

}  // namespace tessera::vulkan_ep
