// The fused attention kernel (attention.h) for the attention ops whose query heads share key/value heads (ai.onnx
// Attention, GroupQueryAttention, MultiHeadAttention with group 1): one launch per query head of a group.
#pragma once

#include "providers/cuda/kernels/attention.h"
#include "tessera/ep/kernel.h"

namespace tessera::cuda {

// `args` describes one query head per key/value head (args.heads = key/value heads; the query, output and mask head
// strides those of consecutive query heads); launch g of `group` reads query head kv * group + g and writes its
// output (and mask) rows. `element` / `mask_element` are the bytes of one query / mask element. A head size the
// kernel's blocks cannot hold is kNotImplemented naming the node; other launch failures name `what`.
void LaunchGroupedAttention(KernelContext& ctx, launch::AttentionArgs args, int64_t group, size_t element,
                            size_t mask_element, cudaStream_t stream, const char* what);

}  // namespace tessera::cuda
