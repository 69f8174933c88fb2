#include "providers/cuda/kernels/kernel_utils.h"

#include <type_traits>

namespace tessera::cuda {

namespace {

// Strides of `dims` right-aligned to an output of `rank` dims, 0 along broadcast dimensions.
void FillBroadcastStrides(const Shape& dims, const Shape& out, int64_t* strides) {
  const size_t rank = out.rank();
  int64_t stride = 1;
  for (size_t k = 0; k < rank; ++k) {
    const size_t o = rank - 1 - k;
    if (k >= dims.rank()) {
      strides[o] = 0;
      continue;
    }
    const int64_t d = dims[dims.rank() - 1 - k];
    strides[o] = d == 1 ? 0 : stride;
    stride *= d;
  }
}

}  // namespace

std::vector<DataType> AllDeviceTypes() {
  return {DataType::kFloat,  DataType::kFloat16, DataType::kBFloat16, DataType::kDouble, DataType::kInt8,
          DataType::kInt16,  DataType::kInt32,   DataType::kInt64,    DataType::kUInt8,  DataType::kUInt16,
          DataType::kUInt32, DataType::kUInt64,  DataType::kBool};
}

KernelDef MakeDef(const char* op, int since, int until, std::vector<DataType> types) {
  KernelDef def;
  def.op_type = op;
  def.since_version = since;
  def.until_version = until;
  def.input_types[0] = std::move(types);
  return def;
}

CudaExecutionProvider& CudaEpOf(const KernelInfo& info) {
  auto* ep = dynamic_cast<CudaExecutionProvider*>(&info.ep());
  if (ep == nullptr)
    Fail(ErrorCode::kInvalidArgument, info.node().Describe(), ": a CUDA kernel was created for ", info.ep().type());
  return *ep;
}

cudaStream_t StreamOf(const KernelContext& ctx) {
  Stream* stream = ctx.stream();
  if (stream == nullptr) return nullptr;
  if (!IsCudaDeviceMemory(stream->memory_info()))
    Fail(ErrorCode::kInvalidArgument, ctx.node(), ": a ", stream->memory_info().ToString(),
         " stream cannot order CUDA work (a CUDA stream is needed)");
  return static_cast<cudaStream_t>(stream->native_handle());
}

void CompleteBeforeSharing(const KernelContext& ctx, cudaStream_t stream) {
  cudaStreamCaptureStatus capture = cudaStreamCaptureStatusNone;
  CheckCuda(cudaStreamIsCapturing(stream, &capture), ctx.node(), ": cudaStreamIsCapturing");
  if (capture == cudaStreamCaptureStatusNone)
    CheckCuda(cudaStreamSynchronize(stream), ctx.node(), ": cudaStreamSynchronize (cached data)");
}

launch::ElementType FloatElementType(const KernelContext& ctx, DataType type) {
  if (type == DataType::kFloat) return launch::ElementType::kFloat;
  if (type == DataType::kFloat16) return launch::ElementType::kHalf;
  Fail(ErrorCode::kInvalidArgument, ctx.node().Describe(), ": the CUDA kernel supports float and float16, not ",
       DataTypeName(type));
}

launch::ScalarType ScalarTypeOf(const KernelContext& ctx, DataType type) {
  switch (type) {
    case DataType::kFloat: return launch::ScalarType::kFloat;
    case DataType::kFloat16: return launch::ScalarType::kHalf;
    case DataType::kDouble: return launch::ScalarType::kDouble;
    case DataType::kInt8: return launch::ScalarType::kInt8;
    case DataType::kUInt8: return launch::ScalarType::kUInt8;
    case DataType::kInt16: return launch::ScalarType::kInt16;
    case DataType::kInt32: return launch::ScalarType::kInt32;
    case DataType::kInt64: return launch::ScalarType::kInt64;
    case DataType::kBool: return launch::ScalarType::kBool;
    default: break;
  }
  Fail(ErrorCode::kInvalidArgument, ctx.node().Describe(), ": the CUDA kernel does not handle ", DataTypeName(type));
}

std::vector<DataType> ScalarTypes() {
  return {DataType::kFloat, DataType::kFloat16, DataType::kDouble, DataType::kInt8, DataType::kUInt8,
          DataType::kInt16, DataType::kInt32,   DataType::kInt64,  DataType::kBool};
}

std::vector<double> HostNumbers(const KernelContext& ctx, const Tensor& t) {
  std::vector<double> values(static_cast<size_t>(t.NumElements()));
  const auto read = [&]<typename T>() {
    const T* data = t.Data<T>();
    for (size_t i = 0; i < values.size(); ++i) {
      if constexpr (std::is_same_v<T, Float16>) values[i] = ToFloat(data[i]);
      else values[i] = static_cast<double>(data[i]);
    }
  };
  switch (t.type()) {
    case DataType::kFloat: read.template operator()<float>(); return values;
    case DataType::kFloat16: read.template operator()<Float16>(); return values;
    case DataType::kDouble: read.template operator()<double>(); return values;
    case DataType::kInt32: read.template operator()<int32_t>(); return values;
    case DataType::kInt64: read.template operator()<int64_t>(); return values;
    case DataType::kInt8: read.template operator()<int8_t>(); return values;
    case DataType::kUInt8: read.template operator()<uint8_t>(); return values;
    default: break;
  }
  Fail(ErrorCode::kInvalidArgument, ctx.node().Describe(), ": cannot read a ", DataTypeName(t.type()),
       " tensor as numbers");
}

double ScalarAsDouble(const KernelContext& ctx, const Tensor& t) {
  if (t.NumElements() != 1)
    Fail(ErrorCode::kInvalidArgument, ctx.node().Describe(), ": expected one value, got ", t.shape().ToString());
  return HostNumbers(ctx, t)[0];
}

std::vector<int64_t> HostInt64s(const KernelContext& ctx, const Tensor& t, const char* what) {
  if (t.type() == DataType::kInt64) return t.ToVector<int64_t>();
  if (t.type() == DataType::kInt32) {
    std::vector<int64_t> values;
    for (int32_t v : t.Span<int32_t>()) values.push_back(v);
    return values;
  }
  Fail(ErrorCode::kInvalidArgument, ctx.node().Describe(), ": ", what, " must be int64 or int32, got ",
       DataTypeName(t.type()));
}

launch::EpilogueActivation ToLaunchActivation(const FusedActivation& activation) {
  static_assert(static_cast<int>(FusedActivation::Kind::kSwish) ==
                static_cast<int>(launch::EpilogueActivation::Kind::kSwish));
  launch::EpilogueActivation e;
  e.kind = static_cast<launch::EpilogueActivation::Kind>(static_cast<int>(activation.kind));
  e.alpha = activation.alpha;
  e.beta = activation.beta;
  return e;
}

void CheckLaunch(const KernelContext& ctx, cudaError_t status, const char* what) {
  CheckCuda(status, ctx.node(), ": ", what);
}

launch::BroadcastIndex MakeBroadcastIndex(const KernelContext& ctx, const Shape& out, const Shape& a, const Shape& b) {
  if (out.rank() > static_cast<size_t>(launch::kMaxRank))
    Fail(ErrorCode::kNotImplemented, ctx.node().Describe(), ": rank ", out.rank(), " exceeds the CUDA kernel's ",
         launch::kMaxRank);
  launch::BroadcastIndex index;
  index.rank = static_cast<int>(out.rank());
  for (size_t d = 0; d < out.rank(); ++d) index.out_dims[d] = out[d];
  FillBroadcastStrides(a, out, index.a_strides);
  FillBroadcastStrides(b, out, index.b_strides);
  return index;
}

void LaunchToChannelsLast(const KernelContext& ctx, const Tensor& x, void* out, cudaStream_t stream) {
  const Shape& s = x.shape();
  if (s.rank() != 4)
    Fail(ErrorCode::kInvalidArgument, ctx.node().Describe(), ": ", s.ToString(), " is not a 4-D tensor to make NHWC");
  const int64_t out_dims[4] = {s[0], s[2], s[3], s[1]};
  const int64_t in_strides[4] = {s[1] * s[2] * s[3], s[3], 1, s[2] * s[3]};  // input strides in output order
  CheckLaunch(ctx,
              launch::Transpose(static_cast<int>(SizeOf(x.type())), x.raw_data(), out, 4, out_dims, in_strides,
                                x.NumElements(), stream),
              "NCHW -> NHWC launch");
}

}  // namespace tessera::cuda
