// Fuses the key/value cache writes of a decoding step into the attention that reads the caches (level all, after
// attention_fusion):
//
//   present_k = ScatterElements(past_k, k_indices, k_updates, axis = K's sequence axis)    (reduction "none")
//   present_v = ScatterElements(past_v, v_indices, v_updates, axis = V's sequence axis)
//   y = ai.tessera::Attention(q, present_k, present_v, mask?)
//   ->  y, present_k, present_v = ai.tessera::Attention(q, past_k, past_v, mask?, k_indices, k_updates,
//                                                       v_indices, v_updates)
//
// Either write may be fused alone. ai.tessera::Attention's cache-update form: inputs 4-5 (and 6-7), when present,
// scatter k_updates into K (v_updates into V) along the sequence axis exactly as ScatterElements does; outputs 1
// (and 2) are the updated K (V), and the attention reads the updated tensors. A decoding step then writes its key
// and value rows in the launch that reads them (the CUDA EP's one-query kernel), and with an IoBinding that binds
// the updated caches to the past ones the kernel updates them in place (KernelDef::in_place_inputs).
//
// Conditions: the ScatterElements' output is read by the Attention alone (as K or V, not also as Q or the mask) and
// may be a graph output; its axis, taken modulo 4, is the Attention's sequence axis of that operand
// (k_axes[2] / v_axes[2]); the Attention has no cache-update inputs yet; the EP that runs the scatter has the
// fused op (`can_fuse`).
#pragma once

#include "graph/passes/graph_rewrite.h"

namespace tessera {

// Returns the number of cache writes fused (0, 1 or 2 per Attention).
size_t FuseCacheUpdates(Graph& graph, const CanFuse& can_fuse);

}  // namespace tessera
