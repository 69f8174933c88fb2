// Attention subgraphs as exporters write them, for the fusion's pass test (CPU) and the CUDA kernel's test:
// projections Q, K, V as inputs [N, seq, heads, head], head-splitting Transposes, scaled scores, a mask,
// Softmax, the product with V and the Transpose that merges the heads. `half` computes in float16 between
// Casts of the (float) inputs and output.
#pragma once

#include <cmath>
#include <limits>
#include <set>
#include <string>

#include "unit/graph/passes/pass_test_graph.h"

namespace tessera::test {

struct AttentionSpec {
  int64_t seq = 5, heads = 3, head = 8;
  int64_t q_seq = 0;   // queries; 0: seq (self-attention). 1 with seq > 1: one decoding step over cached keys
  bool sdpa = false;   // torch SDPA export: pre-scaled Q and K, Boolean mask via Where, IsNaN guard; else Div + Add
  bool mask = true;
  bool half = false;
  bool cast_probabilities = false;  // Cast of the probabilities to their own type (Hugging Face's eager attention)
};

inline PassTestGraph AttentionGraph(const AttentionSpec& c) {
  PassTestGraph g;
  const int64_t s = c.seq, h = c.heads, d = c.head, qs = c.q_seq > 0 ? c.q_seq : c.seq;
  g.Input("q_in", {-1, qs, h, d}).Input("k_in", {-1, s, h, d}).Input("v_in", {-1, s, h, d});
  if (c.mask) g.Input("m", {-1, 1, c.sdpa ? qs : 1, s});
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

}  // namespace tessera::test
