// Kernel registration for the CPU EP: one function per kernel file, called from cpu_ep.cc.
// Kernel files live by category (math/, nn/, tensor/, reduction/, controlflow/) and each defines
// exactly one Register*Kernels function declared here.
#pragma once

#include "tessera/ep/kernel.h"

namespace tessera::cpu {

void RegisterElementwiseKernels(KernelRegistry& registry);     // math/elementwise.cc
void RegisterActivationKernels(KernelRegistry& registry);      // math/activations.cc
void RegisterMatMulKernels(KernelRegistry& registry);          // math/matmul.cc (MatMul, Gemm)
void RegisterConvKernels(KernelRegistry& registry);            // nn/conv.cc
void RegisterPoolKernels(KernelRegistry& registry);            // nn/pool.cc
void RegisterNchwcPoolKernels(KernelRegistry& registry);       // nn/nchwc_pool.cc (ai.tessera, blocked layout)
void RegisterNchwcReorderKernels(KernelRegistry& registry);    // nn/nchwc_reorder.cc (ai.tessera)
void RegisterNormalizationKernels(KernelRegistry& registry);   // nn/normalization.cc
void RegisterAttentionKernels(KernelRegistry& registry);        // nn/attention.cc (ai.tessera)
void RegisterOnnxAttentionKernels(KernelRegistry& registry);     // nn/onnx_attention.cc (ai.onnx opset 23)
void RegisterMultiHeadAttentionKernels(KernelRegistry& registry);  // nn/multi_head_attention.cc (com.microsoft)
void RegisterGroupQueryAttentionKernels(KernelRegistry& registry);  // nn/group_query_attention.cc (com.microsoft)
void RegisterRmsNormalizationKernels(KernelRegistry& registry);  // nn/rms_normalization.cc (+ com.microsoft)
void RegisterRotaryEmbeddingKernels(KernelRegistry& registry);   // nn/rotary_embedding.cc (+ com.microsoft)
void RegisterEmbedLayerNormKernels(KernelRegistry& registry);  // nn/embed_layer_norm.cc (com.microsoft)
void RegisterSkipLayerNormKernels(KernelRegistry& registry);   // nn/skip_layer_norm.cc (ai.tessera, com.microsoft)
void RegisterSoftmaxKernels(KernelRegistry& registry);         // nn/softmax.cc
void RegisterReductionKernels(KernelRegistry& registry);       // reduction/reduce.cc
void RegisterShapeKernels(KernelRegistry& registry);           // tensor/shape_ops.cc
void RegisterTensorKernels(KernelRegistry& registry);          // tensor/tensor_ops.cc
void RegisterGatherKernels(KernelRegistry& registry);          // tensor/gather.cc
void RegisterTensorScatterKernels(KernelRegistry& registry);   // tensor/tensor_scatter.cc
void RegisterCastKernels(KernelRegistry& registry);            // tensor/cast.cc
void RegisterLossKernels(KernelRegistry& registry);            // nn/losses.cc
void RegisterDropoutKernels(KernelRegistry& registry);         // nn/dropout.cc
void RegisterMeanVarianceNormalizationKernels(KernelRegistry& registry);  // nn/mvn.cc
void RegisterRandomKernels(KernelRegistry& registry);          // random/random_ops.cc
void RegisterTrainingKernels(KernelRegistry& registry);        // training/optimizers.cc (ai.onnx.preview.training)
void RegisterReduceToShapeKernels(KernelRegistry& registry);   // training/reduce_to_shape.cc (ai.tessera)
void RegisterResizeKernels(KernelRegistry& registry);          // tensor/resize.cc
void RegisterConvTransposeKernels(KernelRegistry& registry);   // nn/conv_transpose.cc
void RegisterIfKernels(KernelRegistry& registry);              // controlflow/if.cc
void RegisterLoopKernels(KernelRegistry& registry);            // controlflow/loop.cc
void RegisterScanKernels(KernelRegistry& registry);            // controlflow/scan.cc
void RegisterSequenceKernels(KernelRegistry& registry);        // sequence/sequence_ops.cc
void RegisterOptionalKernels(KernelRegistry& registry);        // sequence/optional_ops.cc
void RegisterSortKernels(KernelRegistry& registry);            // tensor/sort_ops.cc (TopK, Unique)
void RegisterSelectionKernels(KernelRegistry& registry);       // tensor/selection_ops.cc (Compress, ReverseSequence)
void RegisterCumSumKernels(KernelRegistry& registry);          // math/cumsum.cc
void RegisterWindowKernels(KernelRegistry& registry);          // signal/windows.cc
void RegisterNonMaxSuppressionKernels(KernelRegistry& registry);  // nn/non_max_suppression.cc
void RegisterGridSampleKernels(KernelRegistry& registry);      // nn/grid_sample.cc
void RegisterEinsumKernels(KernelRegistry& registry);          // math/einsum.cc
void RegisterDetKernels(KernelRegistry& registry);             // math/det.cc
void RegisterLrnKernels(KernelRegistry& registry);             // nn/lrn.cc
void RegisterDftKernels(KernelRegistry& registry);             // signal/dft.cc (DFT, STFT)
void RegisterMaxUnpoolKernels(KernelRegistry& registry);       // nn/max_unpool.cc
void RegisterRoiAlignKernels(KernelRegistry& registry);        // nn/roi_align.cc
void RegisterLpKernels(KernelRegistry& registry);              // nn/lp_ops.cc (LpNormalization, LpPool, GlobalLpPool)
void RegisterQuantizeKernels(KernelRegistry& registry);        // quantization/quantize_linear.cc
void RegisterIntegerConvKernels(KernelRegistry& registry);     // quantization/integer_conv.cc
void RegisterIntegerMatMulKernels(KernelRegistry& registry);   // quantization/integer_matmul.cc
void RegisterStringKernels(KernelRegistry& registry);          // text/string_ops.cc
void RegisterRnnKernels(KernelRegistry& registry);             // rnn/rnn.cc
void RegisterGruKernels(KernelRegistry& registry);             // rnn/gru.cc
void RegisterLstmKernels(KernelRegistry& registry);            // rnn/lstm.cc

}  // namespace tessera::cpu
