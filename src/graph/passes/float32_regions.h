// Runs connected regions of float16 (or bfloat16) nodes in float32 when the EP that runs them computes 16-bit
// floats by widening them inside each kernel (level all; the CPU EP's float-compute adapters, KernelDef::
// computes_in_float32). Converting at every node costs a widening of each input and a rounding of each output per
// node, keeps oneDNN's float32 paths (the channel-inner layout, fused epilogues) out of reach, and re-widens the
// weights' copies per kernel; a region in float32 converts once where values enter it and once where they leave.
//
// A node joins a region when: its 16-bit float operands are all of one type H (float16 or bfloat16) and of known
// types; it carries no type-naming attribute (Cast from H is allowed; a Cast *to* H is a rounding the model asks
// for and stays, as do CastLike, ConstantOfShape, the random ops, EyeLike) and no subgraph; and the EP that runs it
// would run it with float32 in place of H (KernelChoice of the retyped node: same EP). Regions are the nodes
// connected through H values on the same EP; a region is converted only when one of its nodes widens inside its
// kernel (a region of, say, a lone Concat would only gain Casts). In a converted region every H value a node of the
// region writes becomes a float32 value "<name>_f32"; the original name stays the H value, written by a
// Cast(to = H) where something outside the region (another node, a subgraph, a graph output) still reads it; each
// H value the region reads from outside (graph inputs, other nodes, initializers) is read through one
// Cast(to = float), which constant folding turns into a float32 initializer for weights.
//
// Numerics: values inside a region are not rounded to H between nodes (as ONNX Runtime's CPU EP computes float16
// models: float32 between Casts); Casts to H that the model contains are kept, so their rounding stays.
#pragma once

#include <functional>
#include <optional>

#include "tessera/ep/graph.h"

namespace tessera {

// What the session tells about the EP that would run a node (OptimizerContext::kernel_choice).
struct KernelChoice {
  const void* ep = nullptr;               // identity of the EP, compared only
  bool computes_in_float32 = false;       // its kernel for the node widens 16-bit float operands inside
};
using KernelChoiceFor = std::function<std::optional<KernelChoice>(const Node& node, const Graph& graph)>;

// Returns the number of nodes moved to float32.
size_t ComputeHalfRegionsInFloat32(Graph& graph, const KernelChoiceFor& kernel_choice);

}  // namespace tessera
