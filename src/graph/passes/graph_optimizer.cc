#include "graph/passes/graph_optimizer.h"

#include "graph/passes/attention_fusion.h"
#include "graph/passes/cache_update_fusion.h"
#include "graph/passes/cast_elimination.h"
#include "graph/passes/conv_activation_fusion.h"
#include "graph/passes/conv_bn_folding.h"
#include "graph/passes/dead_node_elimination.h"
#include "graph/passes/float32_regions.h"
#include "graph/passes/gelu_fusion.h"
#include "graph/passes/gemm_to_matmul.h"
#include "graph/passes/hard_swish_fusion.h"
#include "graph/passes/layer_norm_fusion.h"
#include "graph/passes/matmul_epilogue_fusion.h"
#include "graph/passes/mha_lowering.h"
#include "graph/passes/nchwc_layout.h"
#include "graph/passes/shape_subgraph_elimination.h"
#include "graph/passes/skip_layer_norm_fusion.h"
#include "graph/passes/transpose_elimination.h"

namespace tessera {
namespace {

void RunBasic(Graph& graph, const OptimizerContext& context, std::vector<PassResult>& results) {
  results.push_back({"constant_folding", FoldConstants(graph, context.evaluator)});
  results.push_back({"dead_node_elimination", EliminateDeadNodes(graph)});
}

// Shape constants first, so that folding removes the shape chains before the fusions look at the graph;
// dead-node elimination last drops what the fusions left unread (e.g. the unfolded Conv weights).
void RunExtended(Graph& graph, const OptimizerContext& context, std::vector<PassResult>& results) {
  const size_t shapes = EliminateShapeSubgraphs(graph);
  results.push_back({"shape_subgraph_elimination", shapes});
  if (shapes > 0) RunBasic(graph, context, results);
  // Before the fusions: a Cast to the type a value already has would hide their patterns.
  results.push_back({"cast_elimination", EliminateNoOpCasts(graph)});
  results.push_back({"conv_bn_folding", FoldConvBatchNorm(graph)});
  results.push_back({"layer_norm_fusion", FuseLayerNorm(graph, context.can_fuse)});
  results.push_back({"gelu_fusion", FuseGelu(graph, context.can_fuse)});
  results.push_back({"hard_swish_fusion", FuseHardSwish(graph, context.can_fuse)});
  results.push_back({"transpose_elimination", EliminateTransposes(graph)});
  results.push_back({"dead_node_elimination", EliminateDeadNodes(graph)});
}

// Fusions into ai.tessera ops, after the standard ones (a folded BatchNorm leaves a Conv to fuse). The
// channel-inner layout pass runs on the main graph only: it reorders values across node boundaries, and a
// subgraph's values cross into its enclosing graph, which the pass does not see.
void RunAll(Graph& graph, const OptimizerContext& context, bool is_subgraph, std::vector<PassResult>& results) {
  // First, so that the fusions and the channel-inner layout below see float32 convolutions and products. The Casts
  // it adds for weights fold into float32 initializers; the model's Casts from 16-bit values inside a region
  // become no-ops.
  if (context.kernel_choice) {
    const size_t moved = ComputeHalfRegionsInFloat32(graph, context.kernel_choice);
    results.push_back({"float32_regions", moved});
    if (moved > 0) {
      results.push_back({"constant_folding", FoldConstants(graph, context.evaluator)});
      results.push_back({"cast_elimination", EliminateNoOpCasts(graph)});
      results.push_back({"dead_node_elimination", EliminateDeadNodes(graph)});
    }
  }
  results.push_back({"mha_lowering", LowerMultiHeadAttention(graph, context.fused_op_preferred)});
  // Before matmul_epilogue_fusion, which would take the attention's scalar Mul/Div and mask Add as epilogues.
  results.push_back({"attention_fusion", FuseAttention(graph, context.can_fuse)});
  results.push_back({"cache_update_fusion", FuseCacheUpdates(graph, context.can_fuse)});
  // Before matmul_epilogue_fusion: the residual Add (and a bias Add before it) go with the LayerNormalization.
  results.push_back({"skip_layer_norm_fusion", FuseSkipLayerNorm(graph, context.can_fuse)});
  results.push_back({"conv_activation_fusion", FuseConvActivation(graph, context.can_fuse)});
  results.push_back({"gemm_to_matmul", RewriteReshapedGemm(graph)});
  results.push_back({"matmul_epilogue_fusion", FuseMatMulEpilogue(graph, context.can_fuse)});
  if (!is_subgraph)
    results.push_back({"nchwc_layout", ConvertToBlockedLayout(graph, context.can_fuse, context.channel_block)});
}

}  // namespace

std::vector<PassResult> OptimizeGraph(Graph& graph, OptimizationLevel level, const OptimizerContext& context) {
  std::vector<PassResult> results;
  if (level == OptimizationLevel::kNone) return results;
  RunBasic(graph, context, results);
  if (level >= OptimizationLevel::kExtended) RunExtended(graph, context, results);
  if (level >= OptimizationLevel::kAll) RunAll(graph, context, graph.parent != nullptr, results);
  // Then every subgraph (If branches, Loop and Scan bodies, at any depth): exporters fill them with Constant
  // nodes and shape arithmetic that would otherwise run on every call. A value an enclosing graph defines
  // is not a constant there, and the passes keep whatever a nested subgraph reads.
  for (auto& node : graph.nodes)
    for (auto& [name, attribute] : node->attributes) {
      std::vector<Graph*> subgraphs;
      if (attribute.g) subgraphs.push_back(attribute.g.get());
      for (auto& g : attribute.graphs)
        if (g) subgraphs.push_back(g.get());
      for (Graph* subgraph : subgraphs)
        for (PassResult& r : OptimizeGraph(*subgraph, level, context))
          if (r.changes > 0) results.push_back({"subgraph " + r.pass, r.changes});
    }
  return results;
}

}  // namespace tessera
