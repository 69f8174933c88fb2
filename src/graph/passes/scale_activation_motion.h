// Moves a positive constant scale in front of the activation of a convolution (level extended, in the folding loop
// with conv_bn_folding and conv_affine_folding, which then folds it into the convolution's weights):
//
//   y = Conv(...) -> a = Relu / LeakyRelu / PRelu(y) -> Mul(a, s)   ->   Conv(...) -> Mul(y, s) -> Relu / ... -> .
//
// Exact for s > 0: those activations are positively homogeneous, act(s * y) = s * act(y) (the rounding of the two
// products may differ in the last bit). StyleGAN-style generators scale every activation by a gain (MI-GAN's
// lrelu_agc: LeakyRelu(0.2) -> Mul(sqrt 2) -> Clip): the Mul, a pass over a whole feature map, goes into the weights.
//
// With a constant residual between the convolution and the activation (MI-GAN's noise maps), the residual is scaled
// too, as a Mul of two constants that constant_folding folds after the loop:
//
//   Conv -> Add(y, z) -> act -> Mul(a, s)   ->   Conv -> Mul(y, s) -> Add(., Mul(z, s)) -> act -> .
//
// Conditions: s is a float32 / float16 constant of the activation's type, every value > 0, that does not widen the
// activation's output (a scalar, or a shape of at most the output's rank whose dims other than 1 are the channel
// axis's, the convolution's output channels: its W is a constant); the activation reads a Conv / ConvTranspose output
// (or the Add of one and a constant z of the same type) that nothing else reads, and only the Mul reads the
// activation's output; a PRelu's slope is a constant.
#pragma once

#include "tessera/ep/graph.h"

namespace tessera {

// Returns the number of Mul nodes moved.
size_t MoveScalesBeforeActivations(Graph& graph);

}  // namespace tessera
