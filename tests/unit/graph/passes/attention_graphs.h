// Attention subgraphs as exporters write them, for the fusion's pass test (CPU) and the CUDA kernel's test:
// projections Q, K, V as inputs [N, seq, heads, head], head-splitting Transposes, scaled scores, a mask,
// Softmax, the product with V and the Transpose that merges the heads. `half` computes in float16 between
// Casts of the (float) inputs and output.
#pragma once

#include <cmath>
#include <limits>
#include <set>
#include <string>
#include <vector>

#include "unit/graph/passes/pass_test_graph.h"

namespace tessera::test {

struct AttentionSpec {
  int64_t seq = 5, heads = 3, head = 8;
  int64_t q_seq = 0;   // queries; 0: seq (self-attention). 1 with seq > 1: one decoding step over cached keys
  bool sdpa = false;   // torch SDPA export: pre-scaled Q and K, Boolean mask via Where, IsNaN guard; else Div + Add
  bool mask = true;
  bool query_mask = false;  // eager: an additive mask [N, 1, queries, seq] (one row per query), not [N, 1, 1, seq]
  bool half = false;
  bool cast_probabilities = false;  // Cast of the probabilities to their own type (Hugging Face's eager attention)
};

inline PassTestGraph AttentionGraph(const AttentionSpec& c) {
  PassTestGraph g;
  const int64_t s = c.seq, h = c.heads, d = c.head, qs = c.q_seq > 0 ? c.q_seq : c.seq;
  g.Input("q_in", {-1, qs, h, d}).Input("k_in", {-1, s, h, d}).Input("v_in", {-1, s, h, d});
  if (c.mask) g.Input("m", {-1, 1, c.sdpa || c.query_mask ? qs : 1, s});
  g.Output("y");
  std::set<std::string> cast;
  const auto typed = [&](const std::string& name) {  // float16 copy of a float value when `half`
    if (!c.half) return name;
    if (cast.insert(name).second) SetInt(g.Node("Cast", {name}, {name + "_h"}), "to", 10);
    return name + "_h";
  };
  const std::string q = typed("q_in"), k = typed("k_in"), v = typed("v_in");
  SetInts(g.Node("Transpose", {q}, {"q"}), "perm", {0, 2, 1, 3});
  SetInts(g.Node("Transpose", {v}, {"v"}), "perm", {0, 2, 1, 3});
  std::string scores;
  if (c.sdpa) {
    g.Scalar("root_scale", std::sqrt(1.0f / std::sqrt(static_cast<float>(d))));
    SetInts(g.Node("Transpose", {k}, {"k"}), "perm", {0, 2, 1, 3});
    SetInts(g.Node("Transpose", {"k"}, {"kt"}), "perm", {0, 1, 3, 2});
    g.Node("Mul", {"q", typed("root_scale")}, {"qs"});
    g.Node("Mul", {"kt", typed("root_scale")}, {"ks"});
    g.Node("MatMul", {"qs", "ks"}, {"s"});
    scores = "s";
    if (c.mask) {
      g.Scalar("zero", 0.0f).Scalar("minus_inf", -std::numeric_limits<float>::infinity()).Scalar("threshold", -1.5f);
      g.Node("Greater", {"m", "threshold"}, {"keep"});
      g.Node("Where", {"keep", typed("zero"), typed("minus_inf")}, {"additive"});
      g.Node("Add", {"s", "additive"}, {"masked"});
      scores = "masked";
    }
  } else {
    g.Scalar("sqrt_d", std::sqrt(static_cast<float>(d)));
    SetInts(g.Node("Transpose", {k}, {"kt"}), "perm", {0, 2, 3, 1});
    g.Node("MatMul", {"q", "kt"}, {"s"});
    g.Node("Div", {"s", typed("sqrt_d")}, {"scaled"});
    scores = "scaled";
    if (c.mask) {
      g.Node("Add", {"scaled", typed("m")}, {"masked"});
      scores = "masked";
    }
  }
  SetInt(g.Node("Softmax", {scores}, {"p"}), "axis", -1);
  std::string p = "p";
  if (c.cast_probabilities) {
    SetInt(g.Node("Cast", {"p"}, {"p_cast"}), "to", c.half ? 10 : 1);
    p = "p_cast";
  }
  if (c.sdpa) {
    if (!c.mask) g.Scalar("zero", 0.0f);
    g.Node("IsNaN", {p}, {"nan"});
    g.Node("Where", {"nan", typed("zero"), p}, {"p0"});
    p = "p0";
  }
  g.Node("MatMul", {p, "v"}, {"o"});
  SetInts(g.Node("Transpose", {"o"}, {c.half ? "y_h" : "y"}), "perm", {0, 2, 1, 3});
  if (c.half) SetInt(g.Node("Cast", {"y_h"}, {"y"}), "to", 1);
  return g;
}

// A BERT-style self-attention block as exporters write it: x [batch, seq, heads * head] projected by three MatMuls
// (+ bias Add) into Q, K, V, each Reshape'd to [lead..., heads, head] (`target_lead`: the target's two leading
// entries, e.g. {0, 0}, {-1, seq} or the input's dims) and Transposed, scaled scores, an additive mask [batch, 1, 1,
// seq], Softmax, the product with V, the Transpose and Reshape merging the heads. shared_input_matmul_fusion merges
// the projections into one product and a Split; packed_qkv_attention lets the attention read that product.
// `q_also_output`: Q's projection is also a graph output (a second reader). `input_activation`: the projections read
// that op of x (e.g. "Relu", whose rank the pass traces back to x's; "Softplus", which it does not trace). `half`:
// float16 between Casts.
struct SelfAttentionBlockSpec {
  int64_t batch = 2, seq = 5, heads = 3, head = 8;  // batch < 0: symbolic
  std::vector<int64_t> target_lead = {0, 0};
  bool q_also_output = false;
  std::string input_activation = "";  // empty: the projections read x
  bool infer_heads = false;  // the target's head count -1 (Hugging Face's view(*input_shape, -1, head_size))
  bool half = false;
  // Blocks one after another, each reading the one before; from the second on, value names take a prefix "l<i>_"
  // and the head-merging Reshape's target is computed from the block input's Shape (as BERT exports write it).
  int layers = 1;
};

inline PassTestGraph SelfAttentionBlockGraph(const SelfAttentionBlockSpec& c) {
  PassTestGraph g;
  const int64_t e = c.heads * c.head;
  g.Input("x", {c.batch, c.seq, e}).Input("m", {c.batch, 1, 1, c.seq}).Output("y");
  if (c.q_also_output) g.Output("q_proj_out");
  const auto typed = [&](const std::string& name) {
    if (!c.half) return name;
    SetInt(g.Node("Cast", {name}, {name + "_h"}), "to", 10);
    return name + "_h";
  };
  std::string x = typed("x");
  const std::string m = typed("m");
  if (!c.input_activation.empty()) {
    g.Node(c.input_activation, {x}, {"x_activated"});
    x = "x_activated";
  }
  unsigned seed = 11;
  const auto weights = [&](const std::string& name, std::vector<int64_t> dims) {
    int64_t count = 1;
    for (int64_t d : dims) count *= d;
    // Projections of about the inputs' variance whatever the width: scores of a moderate spread.
    const float range = std::sqrt(3.0f / static_cast<float>(e));
    const std::vector<float> values = PassTestGraph::Random(static_cast<size_t>(count), -range, range, seed++);
    if (c.half) g.Halves(name, dims, values);
    else g.Floats(name, dims, values);
  };
  g.Int64s("head_shape", {4}, {c.target_lead[0], c.target_lead[1], c.infer_heads ? -1 : c.heads, c.head});
  g.Int64s("merged_shape", {3}, {0, 0, e});
  if (c.layers > 1)
    g.Int64s("dim0", {}, {0}).Int64s("dim1", {}, {1}).Int64s("axis0", {1}, {0}).Int64s("width", {1}, {e});
  if (c.half) g.Halves("sqrt_d", {}, {std::sqrt(static_cast<float>(c.head))});
  else g.Scalar("sqrt_d", std::sqrt(static_cast<float>(c.head)));
  for (int layer = 0; layer < c.layers; ++layer) {
    const std::string P = layer == 0 ? "" : "l" + std::to_string(layer) + "_";
    for (const char* p : {"q", "k", "v"}) {
      const std::string n = P + p;
      weights(n + "_w", {e, e});
      weights(n + "_b", {e});
      g.Node("MatMul", {x, n + "_w"}, {n + "_mm"});
      g.Node("Add", {n + "_mm", n + "_b"}, {n + "_proj"});
      g.Node("Reshape", {n + "_proj", "head_shape"}, {n + "_heads"});
    }
    if (c.q_also_output && layer == 0) {
      if (c.half) SetInt(g.Node("Cast", {"q_proj"}, {"q_proj_out"}), "to", 1);
      else g.Node("Identity", {"q_proj"}, {"q_proj_out"});
    }
    SetInts(g.Node("Transpose", {P + "q_heads"}, {P + "q_t"}), "perm", {0, 2, 1, 3});
    SetInts(g.Node("Transpose", {P + "k_heads"}, {P + "k_t"}), "perm", {0, 2, 3, 1});
    SetInts(g.Node("Transpose", {P + "v_heads"}, {P + "v_t"}), "perm", {0, 2, 1, 3});
    g.Node("MatMul", {P + "q_t", P + "k_t"}, {P + "s"});
    g.Node("Div", {P + "s", "sqrt_d"}, {P + "scaled"});
    g.Node("Add", {P + "scaled", m}, {P + "masked"});
    SetInt(g.Node("Softmax", {P + "masked"}, {P + "p"}), "axis", -1);
    g.Node("MatMul", {P + "p", P + "v_t"}, {P + "o"});
    SetInts(g.Node("Transpose", {P + "o"}, {P + "o_t"}), "perm", {0, 2, 1, 3});
    std::string merged = "merged_shape";
    if (layer > 0) {  // [dim 0 and 1 of the block's input, width]
      g.Node("Shape", {x}, {P + "in_shape"});
      SetInt(g.Node("Gather", {P + "in_shape", "dim0"}, {P + "n"}), "axis", 0);
      SetInt(g.Node("Gather", {P + "in_shape", "dim1"}, {P + "t"}), "axis", 0);
      g.Node("Unsqueeze", {P + "n", "axis0"}, {P + "n_1d"});
      g.Node("Unsqueeze", {P + "t", "axis0"}, {P + "t_1d"});
      SetInt(g.Node("Concat", {P + "n_1d", P + "t_1d", "width"}, {P + "merged_shape"}), "axis", 0);
      merged = P + "merged_shape";
    }
    const std::string out = layer + 1 == c.layers ? (c.half ? "y_h" : "y") : P + "block_out";
    g.Node("Reshape", {P + "o_t", merged}, {out});
    x = out;
  }
  if (c.half) SetInt(g.Node("Cast", {"y_h"}, {"y"}), "to", 1);
  return g;
}

// A decoding step's cache writes before its attention (cache_update_fusion's pattern): q [1, heads, queries, head]
// over caches [1, heads, positions, head]; each cache gets `queries` rows (k_new / v_new) at index, index + 1, ...
// (ScatterElements), then softmax(q . K^T / sqrt(head)) . V. Outputs y and both updated caches (declared shapes).
struct DecodingStepSpec {
  int64_t index = 3;            // the first position written (negative: from the end)
  int64_t key_axis = 2;         // the key scatter's axis (2: the sequence axis; 3: across the features)
  bool key_read_twice = false;  // the updated keys also go to another node
  int64_t heads = 2, positions = 6, head = 4, queries = 1;
};

inline PassTestGraph DecodingStepGraph(const DecodingStepSpec& c) {
  PassTestGraph g;
  const int64_t h = c.heads, n = c.positions, d = c.head, qs = c.queries;
  g.Input("q", {1, h, qs, d}).Input("past_k", {1, h, n, d}).Input("past_v", {1, h, n, d});
  g.Input("k_new", {1, h, qs, d}).Input("v_new", {1, h, qs, d});
  // The caches' declared shapes tell the attention fusion their rank (as an exporter's present outputs do).
  g.Output("y").Output("present_k", {1, h, n, d}).Output("present_v", {1, h, n, d});
  std::vector<int64_t> rows;
  for (int64_t i = 0; i < h * qs * d; ++i) rows.push_back(c.index + (i / d) % qs);
  g.Int64s("rows", {1, h, qs, d}, rows).Scalar("root", std::sqrt(static_cast<float>(d)));
  if (c.key_axis == 2) {
    SetInt(g.Node("ScatterElements", {"past_k", "rows", "k_new"}, {"present_k"}), "axis", 2);
  } else {  // along the features: not a cache row
    g.Int64s("columns", {1, h, n, 1}, std::vector<int64_t>(h * n, 1));
    g.Input("k_column", {1, h, n, 1});
    SetInt(g.Node("ScatterElements", {"past_k", "columns", "k_column"}, {"present_k"}), "axis", c.key_axis);
  }
  SetInt(g.Node("ScatterElements", {"past_v", "rows", "v_new"}, {"present_v"}), "axis", -2);
  SetInts(g.Node("Transpose", {"present_k"}, {"kt"}), "perm", {0, 1, 3, 2});
  g.Node("MatMul", {"q", "kt"}, {"s"});
  g.Node("Div", {"s", "root"}, {"scaled"});
  SetInt(g.Node("Softmax", {"scaled"}, {"p"}), "axis", -1);
  g.Node("MatMul", {"p", "present_v"}, {c.key_read_twice ? "attended" : "y"});
  if (c.key_read_twice) {
    g.Output("key_sum");
    g.Node("ReduceSum", {"present_k"}, {"key_sum"});
    g.Node("Identity", {"attended"}, {"y"});
  }
  return g;
}

}  // namespace tessera::test

