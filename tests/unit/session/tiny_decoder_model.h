// A one-layer decoding step over a static key/value cache, with the ops and inputs of the GPT-2 step that
// scripts/gpu_host/export_generation.py exports: the key and value of the new token written into the caches at
// `position` (ScatterElements), attention over every cache row with the rows after `position` masked out, and the
// next token chosen on the device (ArgMax). For GenerationLoop and in-place IoBinding tests on every EP.
//
//   inputs   input_ids [1, 1] int64, position [1] int64, past_0_key / past_0_value [1, 2, kMaxLength, 4] float
//   outputs  next_token [1, 1] int64, next_position [1] int64, present_0_key / present_0_value (the caches updated)
//
// TinyDecoderPromptModel(S) is the same layer over S tokens at once (S = -1: a symbolic sequence axis): input_ids
// [1, S] at positions position .. position + S - 1, each query seeing the rows up to its own position, next_token
// from the last token's logits and next_position = position + S -- the prompt model of GenerationLoopOptions.
#pragma once

#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

#include "unit/session/graph_builder.h"

namespace tessera::test {

inline constexpr int64_t kTinyDecoderMaxLength = 12;
inline constexpr int64_t kTinyDecoderVocabulary = 11;

inline std::vector<float> TinyDecoderWeights(size_t n, uint32_t seed) {
  std::vector<float> v(n);
  for (size_t i = 0; i < n; ++i) {
    seed = seed * 1664525u + 1013904223u;
    v[i] = (static_cast<float>(seed >> 8) / static_cast<float>(1 << 24) - 0.5f) * 1.5f;
  }
  return v;
}

// The inputs and weights both models share.
inline GraphBuilder& TinyDecoderInputsAndWeights(GraphBuilder& g, int64_t sequence) {
  constexpr int64_t kMax = kTinyDecoderMaxLength, kVocab = kTinyDecoderVocabulary, kEmbed = 8;
  std::vector<int64_t> key_positions;
  for (int64_t i = 0; i < kMax; ++i) key_positions.push_back(i);
  return g.Input("input_ids", {1, sequence}, 7)
      .Input("position", {1}, 7)
      .Input("past_0_key", {1, 2, kMax, 4})
      .Input("past_0_value", {1, 2, kMax, 4})
      .FloatInitializer("wte", {kVocab, kEmbed}, TinyDecoderWeights(kVocab * kEmbed, 1))
      .FloatInitializer("wte_t", {kEmbed, kVocab}, TinyDecoderWeights(kVocab * kEmbed, 2))
      .FloatInitializer("wpe", {kMax, kEmbed}, TinyDecoderWeights(kMax * kEmbed, 3))
      .FloatInitializer("w_qkv", {kEmbed, 3 * kEmbed}, TinyDecoderWeights(3 * kEmbed * kEmbed, 4))
      .FloatInitializer("w_out", {kEmbed, kEmbed}, TinyDecoderWeights(kEmbed * kEmbed, 5))
      .FloatInitializer("scale", {}, {0.5f})
      .FloatInitializer("zero", {}, {0.0f})
      .FloatInitializer("minus_inf", {}, {-INFINITY})
      .Int64Initializer("one", {1}, {1})
      .Int64Initializer("split", {3}, {kEmbed, kEmbed, kEmbed})
      .Int64Initializer("key_positions", {kMax}, key_positions);
}

// The layer both models share, from h [1, S, E] to h2: q, k, v; the caches with the rows at `positions` replaced;
// attention over the rows each query may see (key_positions <= `query_positions`); the output product and residual.
// The caller defines heads_shape, merged_shape and index_shape for its S.
inline void TinyDecoderLayer(GraphBuilder& g, const std::string& positions, const std::string& query_positions) {
  g.Node("MatMul", {"h", "w_qkv"}, {"qkv"}).Node("Split", {"qkv", "split"}, {"q_flat", "k_flat", "v_flat"});
  g.IntAttribute("axis", 2);
  for (const char* part : {"q", "k", "v"}) {
    const std::string flat = std::string(part) + "_flat", heads = std::string(part) + "_heads";
    g.Node("Reshape", {flat, "heads_shape"}, {heads})
        .Node("Transpose", {heads}, {part})
        .IntsAttribute("perm", {0, 2, 1, 3});
  }
  g.Node("Reshape", {positions, "index_shape"}, {"positions_4d"})
      .Node("Expand", {"positions_4d", "index_expand"}, {"cache_index"})
      .Node("ScatterElements", {"past_0_key", "cache_index", "k"}, {"present_0_key"})
      .IntAttribute("axis", 2)
      .Node("ScatterElements", {"past_0_value", "cache_index", "v"}, {"present_0_value"})
      .IntAttribute("axis", 2)
      .Node("Transpose", {"present_0_key"}, {"key_t"})
      .IntsAttribute("perm", {0, 1, 3, 2})
      .Node("MatMul", {"q", "key_t"}, {"scores_raw"})
      .Node("Mul", {"scores_raw", "scale"}, {"scores_scaled"})
      .Node("LessOrEqual", {"key_positions", query_positions}, {"visible"})
      .Node("Where", {"visible", "zero", "minus_inf"}, {"mask"})
      .Node("Add", {"scores_scaled", "mask"}, {"scores"})
      .Node("Softmax", {"scores"}, {"probabilities"})
      .IntAttribute("axis", -1)
      .Node("MatMul", {"probabilities", "present_0_value"}, {"attended"})
      .Node("Transpose", {"attended"}, {"attended_t"})
      .IntsAttribute("perm", {0, 2, 1, 3})
      .Node("Reshape", {"attended_t", "merged_shape"}, {"merged"})
      .Node("MatMul", {"merged", "w_out"}, {"projected"})
      .Node("Add", {"h", "projected"}, {"h2"});
}

inline void TinyDecoderOutputs(GraphBuilder& g) {
  g.Output("next_token", 7).Output("next_position", 7).Output("present_0_key").Output("present_0_value");
}

inline std::string TinyDecoderModel() {
  constexpr int64_t kEmbed = 8;
  GraphBuilder g;
  TinyDecoderInputsAndWeights(g, 1)
      .Int64Initializer("heads_shape", {4}, {1, 1, 2, 4})
      .Int64Initializer("merged_shape", {3}, {1, 1, kEmbed})
      .Int64Initializer("index_shape", {4}, {1, 1, 1, 1})
      .Int64Initializer("index_expand", {4}, {1, 2, 1, 4})
      // h = wte[token] + wpe[position]
      .Node("Gather", {"wte", "input_ids"}, {"token_embedding"})
      .Node("Gather", {"wpe", "position"}, {"position_embedding"})
      .Node("Add", {"token_embedding", "position_embedding"}, {"h"});
  TinyDecoderLayer(g, "position", "position");
  // the next token and position
  g.Node("MatMul", {"h2", "wte_t"}, {"logits"})
      .Node("ArgMax", {"logits"}, {"next_token"})
      .IntAttribute("axis", 2)
      .IntAttribute("keepdims", 0)
      .Node("Add", {"position", "one"}, {"next_position"});
  TinyDecoderOutputs(g);
  return g.Serialize();
}

inline std::string TinyDecoderPromptModel(int64_t sequence) {
  constexpr int64_t kEmbed = 8;
  GraphBuilder g;
  TinyDecoderInputsAndWeights(g, sequence)
      .Int64Initializer("heads_shape", {4}, {1, -1, 2, 4})
      .Int64Initializer("merged_shape", {3}, {1, -1, kEmbed})
      .Int64Initializer("index_shape", {4}, {1, 1, -1, 1})
      .Int64Initializer("index_expand", {4}, {1, 2, 1, 4})
      .Int64Initializer("sequence_axis", {1}, {1})
      .Int64Initializer("last", {1}, {-1})
      .Int64Initializer("end", {1}, {INT64_MAX})
      .Int64Initializer("zero_i", {}, {0})
      .Int64Initializer("one_i", {}, {1})
      .Int64Initializer("column", {2}, {-1, 1})
      // positions = position + [0, S); query i sees the rows <= positions[i]
      .Node("Shape", {"input_ids"}, {"ids_shape"})
      .Node("Gather", {"ids_shape", "one_i"}, {"sequence"})
      .Node("Range", {"zero_i", "sequence", "one_i"}, {"offsets"})
      .Node("Add", {"offsets", "position"}, {"positions"})
      .Node("Reshape", {"positions", "column"}, {"query_positions"})
      // h [1, S, E]
      .Node("Gather", {"wte", "input_ids"}, {"token_embedding"})
      .Node("Gather", {"wpe", "positions"}, {"position_embedding"})
      .Node("Add", {"token_embedding", "position_embedding"}, {"h"});
  TinyDecoderLayer(g, "positions", "query_positions");
  // the last token's logits choose the next token
  g.Node("Slice", {"h2", "last", "end", "sequence_axis"}, {"h_last"})
      .Node("MatMul", {"h_last", "wte_t"}, {"logits"})
      .Node("ArgMax", {"logits"}, {"next_token"})
      .IntAttribute("axis", 2)
      .IntAttribute("keepdims", 0)
      .Node("Reshape", {"sequence", "one"}, {"sequence_1d"})
      .Node("Add", {"position", "sequence_1d"}, {"next_position"});
  TinyDecoderOutputs(g);
  return g.Serialize();
}

}  // namespace tessera::test
