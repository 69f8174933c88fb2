#include "graph/passes/graph_optimizer.h"

#include <algorithm>

#include "graph/passes/attention_fusion.h"
#include "graph/passes/cache_update_fusion.h"
#include "graph/passes/attention_mask_narrowing.h"
#include "graph/passes/cast_elimination.h"
#include "graph/passes/conv_activation_fusion.h"
#include "graph/passes/conv_bn_folding.h"
#include "graph/passes/dead_node_elimination.h"
#include "graph/passes/depthwise_input_activation.h"
#include "graph/passes/float32_regions.h"
#include "graph/passes/gelu_fusion.h"
#include "graph/passes/integer_matmul_fusion.h"
#include "graph/passes/silu_fusion.h"
#include "graph/passes/gemm_to_matmul.h"
#include "graph/passes/hard_swish_fusion.h"
#include "graph/passes/layer_norm_fusion.h"
#include "graph/passes/matmul_epilogue_fusion.h"
#include "graph/passes/mha_lowering.h"
#include "graph/passes/nchwc_layout.h"
#include "graph/passes/packed_qkv_attention.h"
#include "graph/passes/shape_subgraph_elimination.h"
#include "graph/passes/shared_input_matmul_fusion.h"
#include "graph/passes/matmul_skip_layer_norm_fusion.h"
#include "graph/passes/scale_activation_motion.h"
#include "graph/passes/skip_layer_norm_fusion.h"
#include "graph/passes/split_concat_elimination.h"
#include "graph/passes/transpose_elimination.h"

namespace tessera {
namespace {

// Runs one pass unless the session disabled it (OptimizerContext::disabled_passes), recording its changes.
class PassRunner {
 public:
  PassRunner(const OptimizerContext& context, std::vector<PassResult>& results)
      : context_(context), results_(results) {}
  template <typename Pass>
  size_t operator()(const char* name, const Pass& pass) {
    const std::vector<std::string>& known = OptimizerPassNames();
    if (std::find(known.begin(), known.end(), name) == known.end())
      Fail(ErrorCode::kRuntime, "graph optimizer: pass '", name, "' is missing from OptimizerPassNames");
    if (context_.disabled_passes.count(name)) return 0;
    const size_t changes = pass();
    results_.push_back({name, changes});
    return changes;
  }
  const OptimizerContext& context() const { return context_; }

 private:
  const OptimizerContext& context_;
  std::vector<PassResult>& results_;
};

// As onnxruntime's level 1: constant folding and redundant nodes (a Cast to the type a value has is one there too).
void RunBasic(Graph& graph, PassRunner& run) {
  const OptimizerContext& context = run.context();
  run("constant_folding", [&] { return FoldConstants(graph, context.evaluator); });
  run("cast_elimination", [&] { return EliminateNoOpCasts(graph); });
  run("dead_node_elimination", [&] { return EliminateDeadNodes(graph); });
}

// Shape constants first, so that folding removes the shape chains before the fusions look at the graph;
// dead-node elimination last drops what the fusions left unread (e.g. the unfolded Conv weights).
void RunExtended(Graph& graph, PassRunner& run) {
  const OptimizerContext& context = run.context();
  if (run("shape_subgraph_elimination", [&] { return EliminateShapeSubgraphs(graph); }) > 0) RunBasic(graph, run);
  // A constant Add between a convolution and its BatchNormalization (PaddlePaddle's exports write ConvTranspose's
  // bias so) folds first and leaves the BatchNormalization to fold next: alternate until neither folds a node.
  size_t scales_moved = 0;
  for (size_t folded = 1; folded > 0;) {
    folded = run("conv_bn_folding", [&] { return FoldConvBatchNorm(graph); });
    folded += run("conv_affine_folding", [&] { return FoldConvAffine(graph); });
    // A positive gain after a convolution's activation moves before it, where conv_affine_folding takes it next.
    const size_t moved = run("scale_activation_motion", [&] { return MoveScalesBeforeActivations(graph); });
    scales_moved += moved;
    folded += moved;
  }
  // Residuals the motion scaled (a Mul of two constants each).
  if (scales_moved > 0) run("constant_folding", [&] { return FoldConstants(graph, context.evaluator); });
  run("layer_norm_fusion", [&] { return FuseLayerNorm(graph, context.can_fuse); });
  run("gelu_fusion", [&] { return FuseGelu(graph, context.can_fuse); });
  run("hard_swish_fusion", [&] { return FuseHardSwish(graph, context.can_fuse); });
  run("transpose_elimination", [&] { return EliminateTransposes(graph); });
  run("dead_node_elimination", [&] { return EliminateDeadNodes(graph); });
}

// Fusions into ai.tessera ops, after the standard ones (a folded BatchNorm leaves a Conv to fuse). The
// channel-inner layout pass runs on the main graph only: it reorders values across node boundaries, and a
// subgraph's values cross into its enclosing graph, which the pass does not see.
void RunAll(Graph& graph, bool is_subgraph, PassRunner& run) {
  const OptimizerContext& context = run.context();
  // First, so that the fusions and the channel-inner layout below see float32 convolutions and products. The Casts
  // it adds for weights fold into float32 initializers; the model's Casts from 16-bit values inside a region
  // become no-ops.
  if (context.kernel_choice) {
    if (run("float32_regions", [&] { return ComputeHalfRegionsInFloat32(graph, context.kernel_choice); }) > 0) {
      run("constant_folding", [&] { return FoldConstants(graph, context.evaluator); });
      run("cast_elimination", [&] { return EliminateNoOpCasts(graph); });
      run("dead_node_elimination", [&] { return EliminateDeadNodes(graph); });
    }
  }
  run("mha_lowering", [&] { return LowerMultiHeadAttention(graph, context.fused_op_preferred); });
  // Before matmul_epilogue_fusion, which would take the attention's scalar Mul/Div and mask Add as epilogues.
  run("attention_fusion", [&] { return FuseAttention(graph, context.can_fuse); });
  run("cache_update_fusion", [&] { return FuseCacheUpdates(graph, context.can_fuse); });
  // After attention_fusion: the fused nodes read their masks with broadcasting.
  run("attention_mask_narrowing", [&] { return NarrowAttentionMasks(graph); });
  // Before skip_layer_norm_fusion: a quantized projection's bias Add goes with its product, in the graph's order.
  run("integer_matmul_fusion", [&] { return FuseIntegerMatMulToFloat(graph, context.can_fuse); });
  // Before matmul_epilogue_fusion: the residual Add (and a bias Add before it) go with the LayerNormalization.
  run("skip_layer_norm_fusion", [&] { return FuseSkipLayerNorm(graph, context.can_fuse); });
  run("conv_activation_fusion", [&] { return FuseConvActivation(graph, context.can_fuse, context.can_run); });
  // After conv_activation_fusion, which takes a convolution's SiLU into its epilogue.
  run("silu_fusion", [&] { return FuseSilu(graph, context.can_fuse); });
  run("gemm_to_matmul", [&] { return RewriteReshapedGemm(graph); });
  run("matmul_epilogue_fusion", [&] { return FuseMatMulEpilogue(graph, context.can_fuse); });
  // After matmul_epilogue_fusion: products that read one input merge with their biases.
  run("shared_input_matmul_fusion", [&] { return FuseSharedInputMatMuls(graph, context.can_fuse); });
  // After matmul_epilogue_fusion and skip_layer_norm_fusion: a product whose bias and residual went into the
  // normalization.
  run("matmul_skip_layer_norm_fusion", [&] { return FuseMatMulSkipLayerNorm(graph, context.can_fuse); });
  // After shared_input_matmul_fusion: the attention reads its heads out of the merged projection.
  run("packed_qkv_attention", [&] { return PackAttentionProjections(graph, context.can_fuse); });
  if (!is_subgraph) {
    run("nchwc_layout", [&] { return ConvertToBlockedLayout(graph, context.can_fuse, context.channel_block); });
    // After nchwc_layout: it moves activations between the channel-inner convolutions that pass makes.
    run("depthwise_input_activation", [&] { return FuseDepthwiseInputActivation(graph, context.can_fuse); });
  }
  // Last: it sees the Splits and Concats the layout pass left (blocked or not).
  run("split_concat_elimination", [&] { return EliminateSplitConcat(graph); });
}

}  // namespace

std::vector<PassResult> OptimizeGraph(Graph& graph, OptimizationLevel level, const OptimizerContext& context) {
  std::vector<PassResult> results;
  if (level == OptimizationLevel::kNone) return results;
  PassRunner run(context, results);
  RunBasic(graph, run);
  if (level >= OptimizationLevel::kExtended) RunExtended(graph, run);
  if (level >= OptimizationLevel::kAll) RunAll(graph, graph.parent != nullptr, run);
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

const std::vector<std::string>& OptimizerPassNames() {
  static const std::vector<std::string> names = {
      "constant_folding",      "dead_node_elimination",   "shape_subgraph_elimination", "cast_elimination",
      "conv_bn_folding",       "conv_affine_folding",     "scale_activation_motion",     "layer_norm_fusion",       "gelu_fusion",                "hard_swish_fusion",
      "transpose_elimination", "float32_regions",         "mha_lowering",               "attention_fusion",
      "cache_update_fusion",   "attention_mask_narrowing", "integer_matmul_fusion",   "skip_layer_norm_fusion",     "conv_activation_fusion", "silu_fusion",
      "gemm_to_matmul",        "matmul_epilogue_fusion",  "shared_input_matmul_fusion", "matmul_skip_layer_norm_fusion",
      "packed_qkv_attention",  "nchwc_layout",
      "depthwise_input_activation", "split_concat_elimination"};
  return names;
}

}  // namespace tessera
