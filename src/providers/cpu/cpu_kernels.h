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
void RegisterNormalizationKernels(KernelRegistry& registry);   // nn/normalization.cc
void RegisterSoftmaxKernels(KernelRegistry& registry);         // nn/softmax.cc
void RegisterReductionKernels(KernelRegistry& registry);       // reduction/reduce.cc
void RegisterShapeKernels(KernelRegistry& registry);           // tensor/shape_ops.cc
void RegisterTensorKernels(KernelRegistry& registry);          // tensor/tensor_ops.cc
void RegisterGatherKernels(KernelRegistry& registry);          // tensor/gather.cc
void RegisterCastKernels(KernelRegistry& registry);            // tensor/cast.cc
void RegisterResizeKernels(KernelRegistry& registry);          // tensor/resize.cc
void RegisterConvTransposeKernels(KernelRegistry& registry);   // nn/conv_transpose.cc

}  // namespace tessera::cpu
