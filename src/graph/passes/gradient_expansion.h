// Expands Gradient nodes (domain ai.onnx.preview.training, opset 1) into explicit backward nodes.
//
// Gradient(xs, zs; y) outputs dy/dx for each x in `xs`, where y is computed from xs by the rest of the
// graph. This pass replaces each Gradient node by reverse-mode differentiation of the nodes between xs
// and y, seeded with ones shaped like y: every x is a leaf (its own producer is not differentiated), a
// gradient reaching an input through broadcasting is summed back to the input's shape by the helper op
// ai.tessera::ReduceToShapeOf(grad, like), and an x that y does not depend on gets zeros shaped like x.
//
// It is a semantic expansion, not an optimization: the session runs it right after loading, whatever
// the optimization level. Differentiable ops: Add, Sub, Mul, Div, Neg, Identity, Relu, Sigmoid, Tanh,
// Exp, Log, Sqrt, Sum, MatMul (2-D operands). Shape-valued ops (Shape, Size) carry no gradient. Any
// other op between xs and y fails with kNotImplemented naming the Gradient node and the op. Only the
// main graph is expanded (a Gradient inside a subgraph is left for partitioning to reject).
//
// New nodes have no element types: run InferElementTypes afterwards. Re-sorts the graph topologically.
#pragma once

#include <cstddef>

#include "tessera/ep/graph.h"

namespace tessera {

// Returns the number of Gradient nodes expanded.
size_t ExpandGradients(Graph& graph);

}  // namespace tessera
