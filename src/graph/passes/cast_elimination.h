// Removes Casts that change nothing (level basic, as onnxruntime's CastElimination; again after float32_regions): Cast(to = T) of a value already of type T. PyTorch's
// exporter writes them for `.type(dtype)` / `.to(dtype)` on tensors that already have that type (Hugging Face's
// eager attention casts the float16 probabilities to the value's float16 type), and they hide patterns from
// the fusions that follow. The readers read the Cast's input directly; a Cast whose output is a graph output or
// an outer-scope value of a subgraph becomes an Identity instead. Casts whose input type is unknown stay.
#pragma once

#include "tessera/ep/graph.h"

namespace tessera {

// Returns the number of Cast nodes removed or turned into Identity.
size_t EliminateNoOpCasts(Graph& graph);

}  // namespace tessera
