// Tokens per second of tessera::GenerationLoop: greedy decoding of NEW tokens after a prompt, batch 1, on any EP.
//
//   tessera_generation_bench MODEL.onnx [--ep cuda|cpu|testing] [--graphs 0|1] [--prompt FILE] [--reference FILE]
//                            [--new 128] [--runs 10] [--ep-option KEY=VALUE]... [--config KEY=VALUE]...
//                            [--profile PREFIX] [--prompt-model PROMPT.onnx]
//
// MODEL is a decoding step over a static cache (scripts/gpu_host/export_generation.py writes GPT-2's). --prompt and
// --reference are files of space-separated token ids (the export's tokens_prompt.txt, tokens_fp32_cuda.txt): without
// a prompt the bench uses tokens 1..16; with a reference it prints whether the generated tokens equal it.
// --graphs 1 (default) creates the session with the CUDA EP option enable_cuda_graph=1 (one captured graph per step).
// --prompt-model gives the loop a prompt model (GenerationLoopOptions::prompt_session; the export's gpt2_prompt*.onnx):
// the prompt goes in one run instead of one step per token. A MODEL with a symbolic sequence axis is its own.
//
// Prints "key value" lines: the medians over --runs of Generate(prompt, NEW) and Generate(prompt, 1) in ms,
// tokens_per_s (NEW over the first), decode_tokens_per_s ((NEW - 1) new tokens over the difference: the prompt's
// cost removed), graph replays, and tokens_match_reference / first_difference. --profile writes the session's profile
// (PREFIX_<date>.json; with --graphs 0 it holds every step's kernels and their device times).
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "tessera/tessera.h"

namespace {

std::vector<int64_t> ReadTokens(const std::string& path) {
  std::ifstream in(path);
  if (!in) {
    std::fprintf(stderr, "cannot read %s\n", path.c_str());
    std::exit(2);
  }
  std::vector<int64_t> tokens;
  for (int64_t t; in >> t;) tokens.push_back(t);
  return tokens;
}

double Median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(stderr,
                 "usage: %s MODEL.onnx [--ep cuda] [--graphs 0|1] [--prompt FILE] [--reference FILE] [--new N] "
                 "[--runs N] [--ep-option KEY=VALUE]... [--config KEY=VALUE]...\n",
                 argv[0]);
    return 2;
  }
  std::string model = argv[1], ep = "cuda", prompt_file, reference_file, profile, prompt_model;
  bool graphs = true;
  size_t new_tokens = 128;
  int runs = 10;
  tessera::ProviderOptions ep_options;
  std::map<std::string, std::string> config;
  for (int i = 2; i + 1 < argc; i += 2) {
    const std::string flag = argv[i], value = argv[i + 1];
    if (flag == "--ep") ep = value;
    else if (flag == "--graphs") graphs = value != "0";
    else if (flag == "--prompt") prompt_file = value;
    else if (flag == "--reference") reference_file = value;
    else if (flag == "--new") new_tokens = static_cast<size_t>(std::atol(value.c_str()));
    else if (flag == "--runs") runs = std::max(1, std::atoi(value.c_str()));
    else if (flag == "--profile") profile = value;
    else if (flag == "--prompt-model") prompt_model = value;
    else if (flag == "--ep-option" && value.find('=') != std::string::npos)
      ep_options[value.substr(0, value.find('='))] = value.substr(value.find('=') + 1);
    else if (flag == "--config" && value.find('=') != std::string::npos)
      config[value.substr(0, value.find('='))] = value.substr(value.find('=') + 1);
    else {
      std::fprintf(stderr, "unknown flag %s\n", flag.c_str());
      return 2;
    }
  }
  std::vector<int64_t> prompt;
  if (prompt_file.empty())
    for (int64_t t = 1; t <= 16; ++t) prompt.push_back(t);
  else
    prompt = ReadTokens(prompt_file);
  try {
    tessera::Environment env;
    if (const char* plugin = std::getenv("TESSERA_PLUGIN")) env.RegisterEpLibrary("plugin", plugin);
    tessera::SessionOptions so;
    const std::string ep_name = ep == "cuda" ? "CUDAExecutionProvider"
                                : ep == "cpu" ? "CPUExecutionProvider"
                                : ep == "testing" ? "TestingExecutionProvider"
                                                  : ep;
    if (ep_name == "CUDAExecutionProvider" && graphs) ep_options.emplace("enable_cuda_graph", "1");
    if (ep_name != "CPUExecutionProvider") so.AddProvider(ep_name, ep_options);
    for (const auto& [key, value] : config) so.config[key] = value;
    if (!profile.empty()) {  // every step's kernels with their device time (tessera profile-summary reads it)
      so.enable_profiling = true;
      so.profile_file_prefix = profile;
    }
    const auto create = std::chrono::steady_clock::now();
    tessera::Session session(env, model, so);
    std::printf("session_create_ms %.1f\n",
                std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - create).count());
    std::printf("graph_status %s\n", session.GraphStatus().c_str());
    std::unique_ptr<tessera::Session> prompt_session;
    tessera::GenerationLoopOptions loop_options;
    if (!prompt_model.empty()) {
      const auto start = std::chrono::steady_clock::now();
      // No explicit graph (its shapes change with every prompt length): the EP's automatic graphs, one per prompt
      // length, where the model allows them (prompt_graph_status says).
      tessera::SessionOptions prompt_so = so;
      for (auto& provider : prompt_so.providers) provider.options.erase("enable_cuda_graph");
      prompt_session = std::make_unique<tessera::Session>(env, prompt_model, prompt_so);
      std::printf("prompt_session_create_ms %.1f\n",
                  std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count());
      std::printf("prompt_graph_status %s\n", prompt_session->GraphStatus().c_str());
      loop_options.prompt_session = prompt_session.get();
    }
    tessera::GenerationLoop loop(env, session, loop_options);
    const auto first = std::chrono::steady_clock::now();
    const std::vector<int64_t> tokens = loop.Generate(prompt, new_tokens);
    std::printf("first_generate_ms %.1f\n",
                std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - first).count());
    std::vector<double> full, one;
    tessera::GenerationLoop::Stats stats = loop.last_stats();  // of a whole generation
    for (int r = 0; r < runs; ++r) {
      const std::vector<int64_t> again = loop.Generate(prompt, new_tokens);
      full.push_back(loop.last_stats().total_ms);
      stats = loop.last_stats();
      if (again != tokens) std::printf("warning: run %d generated other tokens than the first\n", r);
      loop.Generate(prompt, 1);
      one.push_back(loop.last_stats().total_ms);
    }
    const double t_full = Median(full), t_one = Median(one);
    std::printf("prompt_tokens %zu\nnew_tokens %zu\n", prompt.size(), tokens.size());
    std::printf("generate_ms %.3f\ngenerate_one_ms %.3f\n", t_full, t_one);
    std::printf("tokens_per_s %.1f\n", static_cast<double>(tokens.size()) / (t_full / 1000.0));
    if (tokens.size() > 1)
      std::printf("decode_tokens_per_s %.1f\nms_per_decode_step %.4f\n",
                  static_cast<double>(tokens.size() - 1) / ((t_full - t_one) / 1000.0),
                  (t_full - t_one) / static_cast<double>(tokens.size() - 1));
    std::printf("graph_replays %zu of %zu runs (%zu of the prompt model)\n", stats.graph_replays, stats.steps,
                stats.prompt_runs);
    if (prompt_session != nullptr)
      std::printf("prompt_automatic_graphs %zu captured, %zu replays\n", prompt_session->AutomaticGraphCaptures(),
                  prompt_session->AutomaticGraphReplays());
    std::printf("tokens");
    for (int64_t t : tokens) std::printf(" %lld", static_cast<long long>(t));
    std::printf("\n");
    if (!reference_file.empty()) {
      const std::vector<int64_t> reference = ReadTokens(reference_file);
      size_t diff = 0;
      while (diff < tokens.size() && diff < reference.size() && tokens[diff] == reference[diff]) ++diff;
      const bool match = tokens.size() == reference.size() && diff == tokens.size();
      std::printf("tokens_match_reference %d\n", match ? 1 : 0);
      if (!match) std::printf("first_difference %zu\n", diff);
    }
  } catch (const std::exception& e) {
    std::fprintf(stderr, "error: %s\n", e.what());
    return 1;
  }
  return 0;
}
