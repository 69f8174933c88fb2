// GenerationLoop: autoregressive decoding whose key/value cache never leaves the device.
//
//   tessera::SessionOptions so;
//   so.AddProvider("CUDAExecutionProvider", {{"enable_cuda_graph", "1"}});   // one captured graph per step
//   tessera::Session session(env, "gpt2_static_cache.onnx", so);
//   tessera::GenerationLoop loop(env, session);
//   std::vector<int64_t> tokens = loop.Generate(prompt, 128);                // the 128 new tokens
//
// The model is one decoding step with fixed shapes (scripts/gpu_host/export_generation.py writes GPT-2's):
//   inputs   input_ids [batch, 1] int64      the token at `position` (or [batch, S] with S symbolic, see below)
//            position [1] int64              how many tokens the cache holds before this one
//            past_*                          the key/value caches, preallocated at the maximum length along
//                                            `cache_length_axis`; rows at and after `position` are masked out
//   outputs  next_token [batch, 1] int64     the token chosen on the device (the model's ArgMax or sampling head)
//            next_position [1] int64         position + 1
//            present_*                       each cache with this step's row written at `position`
// The cache outputs are bound to the same tensors as the cache inputs, so each step writes one row per cache in
// place (IoBinding, "In-place updates": ScatterElements into the cache input) and no cache is ever copied.
// next_token / next_position go to a second pair of buffers, which the next step reads: two IoBindings alternate.
// With the session's explicit graph capture (CUDA EP option enable_cuda_graph=1) each binding is captured once
// (gpu_graph_id 1 and 2; the first two steps are the warm-up runs) and every later step replays one graph.
// Sessions with automatic graphs run the steps eagerly (an automatic graph would copy the caches in and out).
//
// The prompt: with a prompt model (GenerationLoopOptions::prompt_session, or the step session itself when its
// input_ids has a symbolic sequence axis) the prompt goes through that model in one run -- input_ids [batch, S]
// at positions position .. position + S - 1, the same caches written in place at those rows, next_token chosen from
// the last token -- and decoding starts from its token. A prompt model whose sequence axis is fixed at S takes the
// prompt S tokens per run and the rest goes through the step. Without one the prompt goes through the step one
// token per step. The prompt's tokens are uploaded once; a step that feeds a prompt token first gets it by a copy on
// the loop's stream. Per run the only transfer to the host is the token (8 bytes per sequence), copied on the loop's
// stream into pinned memory; the host queues run after run without waiting (RunOptions::stream orders the runs with
// the loop's copies on the device) and waits once at the end -- or, with an end-of-sequence token, reads the tokens
// of finished runs as they arrive (Event::Query) and stops queueing when every sequence has produced it.
//
// On sessions without device streams (the CPU EP) the same loop runs synchronously on the host.
// Not thread-safe: one Generate at a time per loop. The session must outlive the loop; it may serve other runs
// meanwhile, but no other GenerationLoop may use its captured graphs (gpu_graph_id 1 and 2).
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "tessera/environment.h"

namespace tessera {

class Session;

struct GenerationLoopOptions {
  std::string input_ids = "input_ids";
  std::string position = "position";
  std::string next_token = "next_token";
  std::string next_position = "next_position";
  // The caches: every input whose name starts with past_prefix, updated by the output named the same with
  // present_prefix instead.
  std::string past_prefix = "past_";
  std::string present_prefix = "present_";
  // The axis of the caches along which positions run (GPT-2: [batch, heads, max_length, head_size]).
  int cache_length_axis = 2;
  // Generation stops once every sequence has produced this token (-1: never); it is the last token returned.
  int64_t eos_token = -1;
  // Replay captured graphs when the session has explicit graph capture; false: eager steps.
  bool use_graphs = true;
  // A model that takes several prompt tokens per run (input_ids [batch, S]; otherwise the step's inputs, outputs and
  // caches, on the same device), run eagerly. nullptr: the step session when its input_ids has a symbolic sequence
  // axis, else none (the prompt goes through the step token by token). Must outlive the loop.
  Session* prompt_session = nullptr;
};

class GenerationLoop {
 public:
  GenerationLoop(Environment& env, Session& session, GenerationLoopOptions options = {});
  ~GenerationLoop();
  GenerationLoop(const GenerationLoop&) = delete;
  GenerationLoop& operator=(const GenerationLoop&) = delete;

  // Feeds `prompts` (one per sequence of the model's batch, all of one length >= 1) and returns up to
  // `max_new_tokens` new tokens per sequence, fewer when every sequence produced eos_token. Throws
  // kInvalidArgument when the prompt and the new tokens do not fit the caches' length. The caches start over
  // at position 0 on every call.
  std::vector<std::vector<int64_t>> Generate(const std::vector<std::vector<int64_t>>& prompts, size_t max_new_tokens);
  // Batch 1.
  std::vector<int64_t> Generate(const std::vector<int64_t>& prompt, size_t max_new_tokens);

  // The caches' length: the most tokens (prompt + new) one Generate can hold.
  int64_t max_length() const;
  int64_t batch() const;

  struct Stats {
    size_t prompt_tokens = 0, new_tokens = 0;  // per sequence
    size_t steps = 0;        // runs: prompt runs, then the steps (without a prompt model prompt tokens + new tokens - 1)
    size_t prompt_runs = 0;  // of those, runs of the prompt model
    size_t graph_replays = 0;                  // of those, runs that replayed a captured graph
    double total_ms = 0;                       // Generate's wall time
  };
  const Stats& last_stats() const;

  struct Impl;

 private:
  std::unique_ptr<Impl> impl_;
};

}  // namespace tessera
