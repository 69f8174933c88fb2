// Static shapes of intermediate values, propagated at load from the graph inputs' and initializers' shapes.
//
// Exporters such as PyTorch's state the shapes of graph inputs and outputs only, so the session would learn the
// shapes of intermediate values only by running. This fills Graph::value_infos[v].shape for the outputs of the
// operators that make up the convolutional parts of models, where every input shape is concrete: Conv, the
// pools, BatchNormalization, element-wise unary ops, broadcasting binary ops, Concat, Flatten. Kernels read them
// when they are created (KernelInfo::InputShape: the CUDA convolutions start building their cuDNN plans), and the
// layout pass gives the blocked values it creates their shapes.
//
// A shape the model states is kept. A node whose inputs or attributes do not fit (a malformed model) gets no
// shape: its kernel reports the error when it runs. Shapes are hints; runs bring the shapes that count.
#pragma once

#include "tessera/ep/graph.h"

namespace tessera {

// Fills the shapes it can in `graph` (nodes in topological order; subgraphs are left alone). Returns how many
// values got a shape. Never throws for the model's content.
size_t PropagateStaticShapes(Graph& graph);

}  // namespace tessera
