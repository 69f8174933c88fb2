#include "providers/cuda/kernels/grouped_attention.h"

#include "providers/cuda/kernels/kernel_utils.h"

namespace tessera::cuda {

void LaunchGroupedAttention(KernelContext& ctx, launch::AttentionArgs args, int64_t group, size_t element,
                            size_t mask_element, cudaStream_t stream, const char* what) {
  const int64_t q_head = args.q_strides[1], out_head = args.out_strides[1], mask_head = args.mask_strides[1];
  args.q_strides[1] *= group;
  args.out_strides[1] *= group;
  args.mask_strides[1] *= group;
  for (int64_t member = 0; member < group; ++member) {
    launch::AttentionArgs one = args;
    one.q = static_cast<const char*>(args.q) + member * q_head * static_cast<int64_t>(element);
    one.out = static_cast<char*>(args.out) + member * out_head * static_cast<int64_t>(element);
    if (args.mask != nullptr)
      one.mask = static_cast<const char*>(args.mask) + member * mask_head * static_cast<int64_t>(mask_element);
    const cudaError_t status = launch::Attention(one, stream);
    if (status == cudaErrorInvalidConfiguration)
      Fail(ErrorCode::kNotImplemented, ctx.node(), ": head size ", args.head_size, " with ", args.batch * args.heads,
           " batch x heads and ", args.q_len, " queries does not fit the fused kernel's blocks");
    CheckLaunch(ctx, status, what);
  }
}

}  // namespace tessera::cuda
