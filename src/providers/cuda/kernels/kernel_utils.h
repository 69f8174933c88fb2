// Helpers shared by the CUDA EP's kernel classes (host code).
#pragma once

#include <string>
#include <vector>

#include "graph/fused_activation.h"
#include "providers/cuda/cuda_common.h"
#include "providers/cuda/cuda_ep.h"
#include "providers/cuda/cuda_stream.h"
#include "providers/cuda/kernels/launch.h"
#include "tessera/ep/kernel.h"

namespace tessera::cuda {

// The element types of the float kernels.
inline std::vector<DataType> FloatTypes() { return {DataType::kFloat, DataType::kFloat16}; }
// Every type CUDA memory can hold (not strings), for type-agnostic kernels (reshapes, copies).
std::vector<DataType> AllDeviceTypes();

// A KernelDef for op (default domain) from opset `since` to `until`, with input 0 restricted to `types`.
KernelDef MakeDef(const char* op, int since, int until, std::vector<DataType> types);

// The EP a CUDA kernel was created for.
CudaExecutionProvider& CudaEpOf(const KernelInfo& info);

// The cudaStream_t the kernel runs on (nullptr, CUDA's default stream, when run without a stream).
cudaStream_t StreamOf(const KernelContext& ctx);

// Waits until the work queued so far on `stream` is done, unless the stream is being captured into a graph. For
// data a kernel prepares once on one run's stream and caches for every run: runs on other streams
// (kEpRunStreams) read it without any device-side ordering, so it must be complete before it is shared.
void CompleteBeforeSharing(const KernelContext& ctx, cudaStream_t stream);

// float or half; throws kInvalidArgument naming the node for any other type.
launch::ElementType FloatElementType(const KernelContext& ctx, DataType type);

// The launch type of any numeric or bool element type; throws kInvalidArgument naming the node otherwise.
launch::ScalarType ScalarTypeOf(const KernelContext& ctx, DataType type);
// Numeric and bool element types the typed kernels (Cast, comparisons) handle.
std::vector<DataType> ScalarTypes();

// The values of a host tensor of a numeric type (float, float16, double, int8/uint8, int32, int64) as doubles;
// throws kInvalidArgument naming the node for other types.
std::vector<double> HostNumbers(const KernelContext& ctx, const Tensor& t);
// The single value of a host tensor of any numeric type, as a double (shape inputs, Pow exponents).
double ScalarAsDouble(const KernelContext& ctx, const Tensor& t);
// A host int64 (or int32) tensor's values; throws kInvalidArgument naming the node and `what` otherwise.
std::vector<int64_t> HostInt64s(const KernelContext& ctx, const Tensor& t, const char* what);

// A fused node's activation (FusedConv, FusedMatMul) in the launchers' terms.
launch::EpilogueActivation ToLaunchActivation(const FusedActivation& activation);

// Throws kRuntime naming the node when a launch failed.
void CheckLaunch(const KernelContext& ctx, cudaError_t status, const char* what);

// Queues a copy of the 4-D tensor `x` [A, B, C, D] (any element type) into `out` as [A, C, D, B]: NCHW -> NHWC
// for activations, KCRS -> KRSC for convolution filters.
void LaunchToChannelsLast(const KernelContext& ctx, const Tensor& x, void* out, cudaStream_t stream);

// Row-major broadcast offsets of `a` and `b` into `out` (throws kNotImplemented past launch::kMaxRank).
launch::BroadcastIndex MakeBroadcastIndex(const KernelContext& ctx, const Shape& out, const Shape& a, const Shape& b);

}  // namespace tessera::cuda
