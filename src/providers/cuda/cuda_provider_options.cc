#include "providers/cuda/cuda_provider_options.h"

#include <charconv>
#include <cstdint>
#include <functional>
#include <map>

#include "providers/cuda/cuda_common.h"

namespace tessera::cuda {

namespace {

[[noreturn]] void BadValue(const std::string& key, const std::string& value, const char* expected) {
  Fail(ErrorCode::kInvalidArgument, kEpName, ": provider option '", key, "' must be ", expected, ", got '", value,
       "'");
}

uint64_t ParseUnsigned(const std::string& key, const std::string& value, const char* expected) {
  const bool hex = value.size() > 2 && value[0] == '0' && (value[1] == 'x' || value[1] == 'X');
  const char* begin = value.data() + (hex ? 2 : 0);
  const char* end = value.data() + value.size();
  uint64_t parsed = 0;
  const auto [stop, error] = std::from_chars(begin, end, parsed, hex ? 16 : 10);
  if (value.empty() || error != std::errc() || stop != end) BadValue(key, value, expected);
  return parsed;
}

bool ParseBool(const std::string& key, const std::string& value) {
  if (value == "1" || value == "true" || value == "True") return true;
  if (value == "0" || value == "false" || value == "False") return false;
  BadValue(key, value, "0 or 1");
}

ArenaExtendStrategy ParseExtendStrategy(const std::string& key, const std::string& value) {
  if (value == "kNextPowerOfTwo" || value == "0") return ArenaExtendStrategy::kNextPowerOfTwo;
  if (value == "kSameAsRequested" || value == "1") return ArenaExtendStrategy::kSameAsRequested;
  BadValue(key, value, "kNextPowerOfTwo or kSameAsRequested");
}

ConvAlgoSearch ParseConvAlgoSearch(const std::string& key, const std::string& value) {
  if (value == "EXHAUSTIVE") return ConvAlgoSearch::kExhaustive;
  if (value == "HEURISTIC") return ConvAlgoSearch::kHeuristic;
  if (value == "DEFAULT") return ConvAlgoSearch::kDefault;
  BadValue(key, value, "EXHAUSTIVE, HEURISTIC or DEFAULT");
}

MatmulAlgoSearch ParseMatmulAlgoSearch(const std::string& key, const std::string& value) {
  if (value == "EXHAUSTIVE") return MatmulAlgoSearch::kExhaustive;
  if (value == "HEURISTIC") return MatmulAlgoSearch::kHeuristic;
  BadValue(key, value, "EXHAUSTIVE or HEURISTIC");
}

using Setter = std::function<void(CudaProviderOptions&, const std::string& key, const std::string& value)>;

Setter BoolSetter(bool CudaProviderOptions::*field) {
  return [field](CudaProviderOptions& o, const std::string& k, const std::string& v) { o.*field = ParseBool(k, v); };
}

const std::map<std::string, Setter>& Setters() {
  static const std::map<std::string, Setter> setters = {
      {"device_id",
       [](CudaProviderOptions& o, const std::string& k, const std::string& v) {
         const uint64_t id = ParseUnsigned(k, v, "a non-negative device ordinal");
         if (id > INT32_MAX) BadValue(k, v, "a non-negative device ordinal");
         o.device_id = static_cast<int>(id);
         o.device_id_set = true;
       }},
      {"gpu_mem_limit",
       [](CudaProviderOptions& o, const std::string& k, const std::string& v) {
         o.gpu_mem_limit = static_cast<size_t>(ParseUnsigned(k, v, "a byte count"));
       }},
      {"arena_extend_strategy",
       [](CudaProviderOptions& o, const std::string& k, const std::string& v) {
         o.arena_extend_strategy = ParseExtendStrategy(k, v);
       }},
      {"cudnn_conv_algo_search",
       [](CudaProviderOptions& o, const std::string& k, const std::string& v) {
         o.cudnn_conv_algo_search = ParseConvAlgoSearch(k, v);
       }},
      {"matmul_algo_search",
       [](CudaProviderOptions& o, const std::string& k, const std::string& v) {
         o.matmul_algo_search = ParseMatmulAlgoSearch(k, v);
       }},
      {"user_compute_stream",
       [](CudaProviderOptions& o, const std::string& k, const std::string& v) {
         const uint64_t address = ParseUnsigned(k, v, "the address of a cudaStream_t as an integer");
         o.user_compute_stream = reinterpret_cast<void*>(static_cast<uintptr_t>(address));
       }},
      {"do_copy_in_default_stream", BoolSetter(&CudaProviderOptions::do_copy_in_default_stream)},
      {"cudnn_conv_use_max_workspace", BoolSetter(&CudaProviderOptions::cudnn_conv_use_max_workspace)},
      {"cudnn_conv1d_pad_to_nc1d", BoolSetter(&CudaProviderOptions::cudnn_conv1d_pad_to_nc1d)},
      {"enable_cuda_graph", BoolSetter(&CudaProviderOptions::enable_cuda_graph)},
      {"enable_skip_layer_norm_strict_mode", BoolSetter(&CudaProviderOptions::enable_skip_layer_norm_strict_mode)},
      {"use_tf32", BoolSetter(&CudaProviderOptions::use_tf32)},
      {"step_graphs", BoolSetter(&CudaProviderOptions::step_graphs)},
      {"library_warmup", BoolSetter(&CudaProviderOptions::library_warmup)},
      {"automatic_cuda_graphs", BoolSetter(&CudaProviderOptions::automatic_cuda_graphs)},
      {"automatic_cuda_graph_limit",
       [](CudaProviderOptions& o, const std::string& k, const std::string& v) {
         const uint64_t limit = ParseUnsigned(k, v, "a graph count of at least 1");
         if (limit < 1 || limit > 4096) BadValue(k, v, "a graph count from 1 to 4096");
         o.automatic_cuda_graph_limit = static_cast<size_t>(limit);
       }},
      {"tuning_cache_file",
       [](CudaProviderOptions& o, const std::string&, const std::string& v) { o.tuning_cache_file = v; }},
      {"plan_build_threads",
       [](CudaProviderOptions& o, const std::string& k, const std::string& v) {
         const uint64_t threads = ParseUnsigned(k, v, "a thread count");
         if (threads > 256) BadValue(k, v, "a thread count from 0 to 256");
         o.plan_build_threads = static_cast<size_t>(threads);
       }},
      {"prefer_nhwc",
       [](CudaProviderOptions& o, const std::string& k, const std::string& v) { o.prefer_nhwc = ParseBool(k, v); }},
  };
  return setters;
}

std::string KnownKeys() {
  std::string keys;
  for (const auto& [key, setter] : Setters()) keys += (keys.empty() ? "" : ", ") + key;
  return keys;
}

}  // namespace

CudaProviderOptions ParseProviderOptions(const ProviderOptions& options) {
  CudaProviderOptions parsed;
  for (const auto& [key, value] : options) {
    auto it = Setters().find(key);
    if (it == Setters().end())
      Fail(ErrorCode::kInvalidArgument, kEpName, ": unknown provider option '", key, "' (known: ", KnownKeys(), ")");
    it->second(parsed, key, value);
  }
  if (!parsed.do_copy_in_default_stream && parsed.enable_cuda_graph)
    Fail(ErrorCode::kInvalidArgument, kEpName, ": provider options 'do_copy_in_default_stream' = 0 and ",
         "'enable_cuda_graph' = 1 exclude each other (a captured run has no copies; set do_copy_in_default_stream = 1)");
  return parsed;
}

}  // namespace tessera::cuda
