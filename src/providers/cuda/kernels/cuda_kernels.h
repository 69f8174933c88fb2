// Kernel registration of the CUDA EP, by category.
#pragma once

#include "tessera/ep/graph.h"
#include "tessera/ep/kernel.h"

namespace tessera::cuda {

void RegisterElementwiseKernels(KernelRegistry& registry);  // Add Sub Mul Div Relu Sigmoid Tanh Clip
void RegisterConvKernels(KernelRegistry& registry);         // Conv, ai.tessera FusedConv NchwcConv (cuDNN)
void RegisterNormalizationKernels(KernelRegistry& registry);  // BatchNormalization (inference), LayerNormalization,
                                                              // RMSNormalization, (Skip)SimplifiedLayerNormalization
void RegisterContribActivationKernels(KernelRegistry& registry);  // com.microsoft Gelu BiasGelu FastGelu QuickGelu
void RegisterPoolKernels(KernelRegistry& registry);         // MaxPool AveragePool GlobalAveragePool, Nchwc* forms
void RegisterGemmKernels(KernelRegistry& registry);         // Gemm MatMul (cuBLAS)
void RegisterShapeKernels(KernelRegistry& registry);        // Reshape Flatten Identity Squeeze Unsqueeze
void RegisterSoftmaxKernels(KernelRegistry& registry);      // Softmax LogSoftmax
void RegisterTensorKernels(KernelRegistry& registry);       // Concat Transpose
void RegisterLogicKernels(KernelRegistry& registry);        // comparisons, And Or Xor Not, Where, Cast
void RegisterIndexingKernels(KernelRegistry& registry);     // Gather Slice Expand Shape ConstantOfShape
void RegisterReorderKernels(KernelRegistry& registry);      // ai.tessera::ReorderFromBlocked (NHWC -> NCHW)
void RegisterReductionKernels(KernelRegistry& registry);    // ReduceSum ReduceMean ReduceMax ReduceMin ArgMax ArgMin
void RegisterAttentionKernels(KernelRegistry& registry);  // Attention (ai.tessera)
void RegisterSkipLayerNormKernels(KernelRegistry& registry);  // SkipLayerNormalization (ai.tessera, com.microsoft)
void RegisterSplitKernels(KernelRegistry& registry);        // Split
void RegisterScatterKernels(KernelRegistry& registry);      // ScatterElements ScatterND (reduction "none")
void RegisterRotaryEmbeddingKernels(KernelRegistry& registry);  // RotaryEmbedding (ai.onnx 23, com.microsoft)
void RegisterOnnxAttentionKernels(KernelRegistry& registry);    // Attention (ai.onnx 23-24)
void RegisterGroupQueryAttentionKernels(KernelRegistry& registry);  // GroupQueryAttention (com.microsoft)
void RegisterMultiHeadAttentionKernels(KernelRegistry& registry);   // MultiHeadAttention (com.microsoft)
void RegisterResizeKernels(KernelRegistry& registry);               // Resize Upsample
void RegisterConvTransposeKernels(KernelRegistry& registry);        // ConvTranspose (cuDNN backward data)

void RegisterCudaKernels(KernelRegistry& registry);

// Whether the CUDA kernel for `node` handles its attributes (e.g. MaxPool without the Indices output,
// Conv with symmetric padding); nodes it rejects stay for the next EP (normally the CPU).
bool NodeIsSupported(const Node& node);
// Whether Cast's `to` is a type the CUDA Cast produces.
bool CastTargetIsSupported(const Node& node);

}  // namespace tessera::cuda
