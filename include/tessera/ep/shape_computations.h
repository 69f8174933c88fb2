// EP SDK: the nodes of a graph that compute shapes, which a device EP leaves to the CPU in GetCapability.
#pragma once

#include <cstddef>
#include <set>

#include "tessera/ep/graph.h"

namespace tessera {

// Nodes that compute shapes: every node other than Shape whose inputs are all outputs of Shape (or of such nodes) or
// initializers, at least one of them not an initializer, and whose outputs are not floating point (a Gather of
// embeddings by indices computed from shapes makes data). Their values are small int64 tensors the host reads
// (Reshape's shape, Slice's bounds, ...); on a device they would be copied there and back, so a device EP leaves them
// to the CPU. Shape itself may run on the device EP: it reads only its input's shape (KernelDef::host_outputs and
// host_or_device_inputs). ConstantOfShape and Range make data (a fill, position ids over a sequence length), so they
// are not among them. (Shapes the optimizer knows
// statically are folded before partitioning.)
std::set<size_t> ShapeComputations(const Graph& graph);

}  // namespace tessera
