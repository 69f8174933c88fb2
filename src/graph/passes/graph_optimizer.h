// The graph optimization pipeline run at session creation. Each pass is its own file with its own
// tests; this file only decides which passes run at which OptimizationLevel and in what order.
//
//   kNone      nothing
//   kBasic     constant folding, dead-node elimination (semantics-preserving, EP-independent)
//   kExtended  + fusions into standard ONNX ops (Conv+BatchNormalization folding, LayerNormalization and
//              Gelu pattern fusion, shape-subgraph elimination, transpose elimination)
//   kAll       + float16/bfloat16 regions computed in float32 where their EP widens per node, then fusions
//              into Tessera's own ops (domain "ai.tessera"), which only EPs that register those
//              kernels run: scaled dot-product attention (Attention), residual Add + LayerNormalization
//              (SkipLayerNormalization), Conv/MatMul with bias,
//              residual and activation, and the channel-inner convolution layout each conv's EP prefers
#pragma once

#include <functional>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "graph/passes/constant_folding.h"
#include "graph/passes/float32_regions.h"
#include "graph/passes/graph_rewrite.h"
#include "tessera/session_options.h"

namespace tessera {

// What passes may ask of the session.
struct OptimizerContext {
  ConstantEvaluator evaluator;
  // Whether the EP that will run `anchor` (the first EP in priority order with a kernel for it) also has
  // a kernel for the fused op: fusions into non-standard ops check this so a fused node never lands on
  // an EP that cannot run it. `num_inputs` > 0: a kernel that takes a node of that many inputs (KernelDef::max_inputs).
  CanFuse can_fuse;
  // Whether that EP has a kernel for exactly the fused node (extension attributes included: FusedConv's
  // activation_clip); unset: no.
  CanRun can_run;
  // The channel-inner layout the EP that will run the convolution `conv` prefers for it
  // (ExecutionProvider::PreferredChannelBlock); nullopt keeps it NCHW.
  std::function<std::optional<int64_t>(const Node& conv, const Graph& graph)> channel_block;
  // Whether the first EP in priority order with a kernel for op_type (domain) prefers that fused op
  // (ExecutionProvider::PrefersFusion), for rewrites whose new node an EP other than the old node's may run.
  std::function<bool(const std::string& op_type, const std::string& domain)> fused_op_preferred;
  // The EP that will run a node and whether its kernel widens 16-bit floats inside (float32_regions.h); unset:
  // 16-bit regions stay as they are (session config "session.float16_in_float32" = "0").
  KernelChoiceFor kernel_choice;
  // Passes not to run, by name (session config "session.disabled_optimizers"; OptimizerPassNames lists them).
  std::set<std::string> disabled_passes;
};

struct PassResult {
  std::string pass;
  size_t changes = 0;  // nodes rewritten, folded or removed
};

std::vector<PassResult> OptimizeGraph(Graph& graph, OptimizationLevel level, const OptimizerContext& context);

// The name of every pass OptimizeGraph may run (as PassResult::pass and OptimizerContext::disabled_passes name them).
const std::vector<std::string>& OptimizerPassNames();

}  // namespace tessera
