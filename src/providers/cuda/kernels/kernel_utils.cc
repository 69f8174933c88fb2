#include "providers/cuda/kernels/kernel_utils.h"

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

cudaStream_t StreamOf(const KernelContext& ctx) { return NativeStream(ctx.stream(), ctx.node().Describe().c_str()); }

launch::ElementType FloatElementType(const KernelContext& ctx, DataType type) {
  if (type == DataType::kFloat) return launch::ElementType::kFloat;
  if (type == DataType::kFloat16) return launch::ElementType::kHalf;
  Fail(ErrorCode::kInvalidArgument, ctx.node().Describe(), ": the CUDA kernel supports float and float16, not ",
       DataTypeName(type));
}

void CheckLaunch(const KernelContext& ctx, cudaError_t status, const char* what) {
  CheckCuda(status, ctx.node().Describe(), ": ", what);
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

}  // namespace tessera::cuda
