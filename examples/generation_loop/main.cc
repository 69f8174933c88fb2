// Generation loop: greedy decoding whose key/value cache never leaves the device (tessera::GenerationLoop). Each step
// writes its key and value rows into caches preallocated at the maximum length, in place, picks the next token on
// the device and copies only that token to the host; on the CUDA EP every step replays one captured graph. Checks
// the tokens against the same decoding written as a loop of Run(feeds) with host tensors.
//
// With PROMPT_MODEL (the same layers over any number of tokens) the prompt goes through it in one run.
//
//   example_generation_loop MODEL EP [NEW_TOKENS] [PROMPT_MODEL]
//   example_generation_loop tiny_decoder.onnx TestingExecutionProvider 24 tiny_decoder_prompt.onnx
//   example_generation_loop gpt2_decode_fp16.onnx CUDAExecutionProvider 128 gpt2_prompt_fp16.onnx
//                                                             (scripts/gpu_host/export_generation.py writes both)
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <iostream>
#include <memory>
#include <string>
#include <vector>

#include "tessera/tessera.h"

namespace {

// The same decoding with Run(feeds): the presents come back to the host and go in again as the next pasts.
std::vector<int64_t> StepByStep(tessera::Session& session, const std::vector<int64_t>& prompt, size_t new_tokens) {
  std::vector<std::pair<std::string, tessera::Value>> caches;
  for (const tessera::ValueInfo& in : session.inputs()) {
    if (in.name.rfind("past_", 0) != 0) continue;
    std::vector<int64_t> dims;
    for (const tessera::Dim& d : *in.shape) dims.push_back(d.value);
    tessera::Tensor zeros = tessera::Tensor::Allocate(in.type, tessera::Shape(dims));
    std::memset(zeros.raw_data(), 0, zeros.SizeInBytes());
    caches.push_back({in.name, tessera::Value(zeros)});
  }
  std::vector<std::string> names;
  for (const tessera::ValueInfo& out : session.outputs()) names.push_back(out.name);
  std::vector<int64_t> generated;
  int64_t token = 0;
  for (size_t t = 0; t + 1 < prompt.size() + new_tokens; ++t) {
    if (t < prompt.size()) token = prompt[t];
    tessera::Session::NamedValues feeds = caches;
    feeds.push_back({"input_ids", tessera::Value(tessera::Tensor::FromVector<int64_t>({1, 1}, {token}))});
    feeds.push_back({"position", tessera::Value(tessera::Tensor::FromVector<int64_t>({1}, {static_cast<int64_t>(t)}))});
    std::vector<tessera::Value> outs = session.Run(feeds);
    for (size_t i = 0; i < names.size(); ++i) {
      if (names[i] == "next_token") token = outs[i].tensor().Data<int64_t>()[0];
      for (auto& [name, value] : caches)
        if (names[i] == "present_" + name.substr(5)) value = outs[i];
    }
    if (t + 1 >= prompt.size()) generated.push_back(token);
  }
  return generated;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 3) {
    std::cerr << "usage: example_generation_loop MODEL EP [NEW_TOKENS] [PROMPT_MODEL]\n";
    return 2;
  }
  const std::string model = argv[1], ep = argv[2];
  const size_t new_tokens = argc > 3 ? static_cast<size_t>(std::atol(argv[3])) : 24;
  try {
    tessera::Environment env;
    if (const char* plugin = std::getenv("TESSERA_PLUGIN")) env.RegisterEpLibrary("plugin", plugin);
    tessera::SessionOptions options;
    // On the CUDA EP, explicit graph capture: the loop captures its two step bindings once and replays them.
    if (ep == "CUDAExecutionProvider") options.AddProvider(ep, {{"enable_cuda_graph", "1"}});
    else if (ep != "CPUExecutionProvider") options.AddProvider(ep);
    tessera::Session session(env, model, options);
    // The prompt model runs eagerly: its shapes change with every prompt's length.
    tessera::SessionOptions prompt_options;
    if (ep != "CPUExecutionProvider") prompt_options.AddProvider(ep);
    std::unique_ptr<tessera::Session> prompt_session;
    tessera::GenerationLoopOptions loop_options;
    if (argc > 4) {
      prompt_session = std::make_unique<tessera::Session>(env, argv[4], prompt_options);
      loop_options.prompt_session = prompt_session.get();
    }

    tessera::GenerationLoop loop(env, session, loop_options);
    const std::vector<int64_t> prompt{1, 2, 3, 4, 5, 6, 7, 8};
    loop.Generate(prompt, new_tokens);  // warm-up: the graphs are captured on the first steps
    const std::vector<int64_t> tokens = loop.Generate(prompt, new_tokens);
    const tessera::GenerationLoop::Stats& stats = loop.last_stats();
    std::cout << "generated";
    for (int64_t t : tokens) std::cout << ' ' << t;
    std::cout << "\n" << stats.new_tokens << " tokens after a prompt of " << stats.prompt_tokens << " in "
              << stats.total_ms << " ms (" << static_cast<double>(stats.new_tokens) / (stats.total_ms / 1000.0)
              << " tokens/s), " << stats.steps << " runs (" << stats.prompt_runs << " of the prompt model), "
              << stats.graph_replays << " replayed a graph; cache of "
              << loop.max_length() << " positions\n";

    tessera::SessionOptions reference_options;
    if (ep != "CPUExecutionProvider" && ep != "CUDAExecutionProvider") reference_options.AddProvider(ep);
    if (ep == "CUDAExecutionProvider") reference_options.AddProvider(ep);
    tessera::Session reference(env, model, reference_options);
    if (StepByStep(reference, prompt, new_tokens) != tokens) {
      std::cerr << "the loop's tokens differ from a step-by-step loop of Run(feeds)\n";
      return 1;
    }
    std::cout << "tokens match a step-by-step loop of Run(feeds)\n";
  } catch (const std::exception& e) {
    std::cerr << "error: " << e.what() << "\n";
    return 1;
  }
  return 0;
}
