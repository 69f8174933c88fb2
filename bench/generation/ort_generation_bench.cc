// ONNX Runtime's CUDA EP generating greedily with IO binding, the competitor of bench/generation/main.cc (same
// prompt, same number of new tokens, same timing: medians of Generate(prompt, NEW) and Generate(prompt, 1)).
// Built on the GPU host against ONNX Runtime 1.29 (../shared/bench/ort_cuda; the CUDA EP loaded as a plugin EP).
//
//   ort_generation_bench dynamic MODEL.onnx PROMPT_FILE NEW RUNS [REFERENCE_FILE]
//       gpt2_dynamic(_fp16).onnx, ONNX Runtime's documented way: the prompt in one run (past of length 0), then one
//       token per run; every input and the presents on the device through IO binding (each step's presents are the
//       next step's pasts, no copies), the logits bound to CPU memory and the next token picked on the host.
//   ort_generation_bench static MODEL.onnx PROMPT_FILE NEW RUNS [REFERENCE_FILE]
//   ort_generation_bench static_graph ...
//       gpt2_decode(_fp16).onnx, Tessera's static-cache step: the token picked on the device (the model's ArgMax) and
//       copied to the host (8 bytes); the caches alternate between two sets of buffers (ONNX Runtime cannot bind an
//       output to its input's buffer), two IO bindings; static_graph adds the CUDA EP's enable_cuda_graph with one
//       gpu_graph_id per binding.
// Prints the same "key value" lines as tessera_generation_bench.
#include <cuda_runtime_api.h>
#include <onnxruntime_cxx_api.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <functional>
#include <memory>
#include <stdexcept>
#include <string>
#include <unordered_map>
#include <vector>

namespace {

using Clock = std::chrono::steady_clock;

double Ms(Clock::time_point since) { return std::chrono::duration<double, std::milli>(Clock::now() - since).count(); }

std::vector<int64_t> ReadTokens(const std::string& path) {
  std::ifstream in(path);
  if (!in) throw std::runtime_error("cannot read " + path);
  std::vector<int64_t> tokens;
  for (int64_t t; in >> t;) tokens.push_back(t);
  return tokens;
}

void Check(cudaError_t e, const char* what) {
  if (e != cudaSuccess) throw std::runtime_error(std::string(what) + ": " + cudaGetErrorString(e));
}

float HalfToFloat(uint16_t h) {
  const uint32_t sign = (h & 0x8000u) << 16, exponent = (h >> 10) & 0x1f, mantissa = h & 0x3ff;
  uint32_t bits;
  if (exponent == 0) {
    if (mantissa == 0) {
      bits = sign;
    } else {  // subnormal
      int e = -1;
      uint32_t m = mantissa;
      do {
        ++e;
        m <<= 1;
      } while ((m & 0x400) == 0);
      bits = sign | ((127 - 15 - e) << 23) | ((m & 0x3ff) << 13);
    }
  } else if (exponent == 31) {
    bits = sign | 0x7f800000u | (mantissa << 13);
  } else {
    bits = sign | ((exponent + 112) << 23) | (mantissa << 13);
  }
  float f;
  std::memcpy(&f, &bits, 4);
  return f;
}

// Device memory from the session's own CUDA allocator, so that tensors over it carry the memory info the EP expects
// (tensors over cudaMalloc'd memory with a hand-made "Cuda" memory info made Run fail inside ONNX Runtime 1.29).
struct DeviceMemory {
  Ort::Allocator allocator;
  Ort::ConstMemoryInfo info;
  explicit DeviceMemory(Ort::Session& s)
      : allocator(s, Ort::MemoryInfo("Cuda", OrtMemoryInfoDeviceType_GPU, 0x10de, 0, OrtDeviceMemoryType_DEFAULT, 0,
                                     OrtArenaAllocator)),
        info(allocator.GetInfo()) {}
};

// A buffer in the session's device memory, or in host memory (`host`: ORT_INT64_ON_HOST=1 puts the token ids,
// positions and masks there, as a script that feeds them from Python would).
struct DeviceBuffer {
  std::shared_ptr<DeviceMemory> memory;
  void* ptr = nullptr;
  size_t bytes = 0;
  bool host = false;
  DeviceBuffer(std::shared_ptr<DeviceMemory> m, size_t n, bool on_host = false)
      : memory(std::move(m)), bytes(n), host(on_host) {
    ptr = host ? static_cast<void*>(new char[std::max<size_t>(n, 256)]) : memory->allocator.Alloc(std::max<size_t>(n, 256));
  }
  ~DeviceBuffer() {
    if (host)
      delete[] static_cast<char*>(ptr);
    else
      memory->allocator.Free(ptr);
  }
  DeviceBuffer(const DeviceBuffer&) = delete;
  Ort::Value Tensor(const std::vector<int64_t>& shape, ONNXTensorElementDataType type, size_t used_bytes) const {
    static const Ort::MemoryInfo cpu = Ort::MemoryInfo::CreateCpu(OrtArenaAllocator, OrtMemTypeDefault);
    if (host) return Ort::Value::CreateTensor(cpu, ptr, used_bytes, shape.data(), shape.size(), type);
    return Ort::Value::CreateTensor(memory->info, ptr, used_bytes, shape.data(), shape.size(), type);
  }
  void Write(const void* from, size_t n) {
    if (host) std::memcpy(ptr, from, n);
    else Check(cudaMemcpy(ptr, from, n, cudaMemcpyHostToDevice), "upload");
  }
  void Read(void* to, size_t n) const {
    if (host) std::memcpy(to, ptr, n);
    else Check(cudaMemcpy(to, ptr, n, cudaMemcpyDeviceToHost), "download");
  }
};

bool IntsOnHost() {
  const char* v = std::getenv("ORT_INT64_ON_HOST");
  return v != nullptr && std::string(v) == "1";
}

// Session::Run(RunOptions, IoBinding) through the C API, so that an error's message is printed as ONNX Runtime gives it.
void RunBound(Ort::Session& s, const Ort::RunOptions& options, Ort::IoBinding& binding) {
  OrtStatus* status = Ort::GetApi().RunWithBinding(s, options, binding);
  if (status == nullptr) return;
  const std::string message = Ort::GetApi().GetErrorMessage(status);
  Ort::GetApi().ReleaseStatus(status);
  std::fprintf(stderr, "RunWithBinding failed: %s\n", message.c_str());
  throw std::runtime_error("RunWithBinding: " + message);
}

bool LegacyCudaEp() {
  const char* v = std::getenv("ORT_LEGACY_CUDA");
  return v != nullptr && std::string(v) == "1";
}

Ort::Session MakeSession(Ort::Env& env, const std::string& path, bool graph) {
  Ort::SessionOptions options;
  options.SetGraphOptimizationLevel(GraphOptimizationLevel::ORT_ENABLE_ALL);
  if (LegacyCudaEp()) {
    // The CUDA EP through the classic provider-options API (libonnxruntime_providers_cuda.so beside libonnxruntime):
    // ONNX Runtime 1.29's plugin-EP path crashes on the first Run of models whose nodes need the EP's host-accessible
    // memory (microsoft/onnxruntime#28329, "Invalid memory type: -1").
    OrtCUDAProviderOptionsV2* cuda = nullptr;
    Ort::ThrowOnError(Ort::GetApi().CreateCUDAProviderOptions(&cuda));
    std::vector<const char*> keys{"device_id", "enable_cuda_graph"}, values{"0", graph ? "1" : "0"};
    if (const char* tf32 = std::getenv("ORT_USE_TF32")) {
      keys.push_back("use_tf32");
      values.push_back(tf32);
    }
    Ort::ThrowOnError(Ort::GetApi().UpdateCUDAProviderOptions(cuda, keys.data(), values.data(), keys.size()));
    options.AppendExecutionProvider_CUDA_V2(*cuda);
    Ort::GetApi().ReleaseCUDAProviderOptions(cuda);
    return Ort::Session(env, path.c_str(), options);
  }
  std::vector<Ort::ConstEpDevice> devices;
  for (auto d : env.GetEpDevices())
    if (std::string(d.EpName()) == "CUDAExecutionProvider") devices.push_back(d);
  if (devices.empty()) throw std::runtime_error("no CUDA EP device");
  std::unordered_map<std::string, std::string> ep_options{{"device_id", "0"},
                                                          {"enable_cuda_graph", graph ? "1" : "0"}};
  if (const char* tf32 = std::getenv("ORT_USE_TF32")) ep_options["use_tf32"] = tf32;  // 0: float32 as PyTorch
  options.AppendExecutionProvider_V2(env, devices, ep_options);
  return Ort::Session(env, path.c_str(), options);
}

struct CacheInfo {
  std::vector<std::string> past, present;
  ONNXTensorElementDataType type;
  std::vector<int64_t> shape;  // of a past input (dynamic dims as declared: -1)
};

CacheInfo Caches(Ort::Session& s) {
  Ort::AllocatorWithDefaultOptions a;
  CacheInfo c;
  for (size_t i = 0; i < s.GetInputCount(); ++i) {
    std::string name = s.GetInputNameAllocated(i, a).get();
    if (name.rfind("past_", 0) != 0) continue;
    Ort::TypeInfo type_info = s.GetInputTypeInfo(i);  // owns what the shape info below refers to
    auto info = type_info.GetTensorTypeAndShapeInfo();
    c.type = info.GetElementType();
    c.shape = info.GetShape();
    c.past.push_back(name);
    c.present.push_back("present_" + name.substr(5));
  }
  return c;
}

size_t ElementSize(ONNXTensorElementDataType t) { return t == ONNX_TENSOR_ELEMENT_DATA_TYPE_FLOAT16 ? 2 : 4; }

// Generate(prompt, n) -> the n new tokens.
using Generator = std::function<std::vector<int64_t>(const std::vector<int64_t>&, size_t)>;

// ONNX Runtime's documented loop over the dynamic past/present model.
Generator DynamicLoop(Ort::Session& s, size_t max_length) {
  const CacheInfo caches = Caches(s);
  const int64_t heads = caches.shape[1], head_size = caches.shape[3];
  auto memory = std::make_shared<DeviceMemory>(s);
  auto mask = std::make_shared<DeviceBuffer>(memory, max_length * sizeof(int64_t), IntsOnHost());
  std::vector<int64_t> ones(max_length, 1);
  mask->Write(ones.data(), mask->bytes);
  auto ids = std::make_shared<DeviceBuffer>(memory, max_length * sizeof(int64_t), IntsOnHost());
  auto empty = std::make_shared<DeviceBuffer>(memory, 16);
  return [&s, caches, heads, head_size, memory, mask, ids, empty](const std::vector<int64_t>& prompt, size_t n) {
    Ort::MemoryInfo cpu = Ort::MemoryInfo::CreateCpu(OrtArenaAllocator, OrtMemTypeDefault);
    std::vector<Ort::Value> past;
    const std::vector<int64_t> empty_shape{1, heads, 0, head_size};
    for (size_t i = 0; i < caches.past.size(); ++i)
      past.push_back(empty->Tensor(empty_shape, caches.type, 0));
    std::vector<int64_t> out;
    std::vector<int64_t> step_ids = prompt;
    size_t length = 0;
    while (out.size() < n) {
      const int64_t s_len = static_cast<int64_t>(step_ids.size());
      ids->Write(step_ids.data(), step_ids.size() * 8);
      const std::vector<int64_t> ids_shape{1, s_len}, mask_shape{1, static_cast<int64_t>(length) + s_len};
      Ort::IoBinding b(s);
      b.BindInput("input_ids", ids->Tensor(ids_shape, ONNX_TENSOR_ELEMENT_DATA_TYPE_INT64, step_ids.size() * 8));
      b.BindInput("attention_mask", mask->Tensor(mask_shape, ONNX_TENSOR_ELEMENT_DATA_TYPE_INT64,
                                                 static_cast<size_t>(mask_shape[1]) * 8));
      for (size_t i = 0; i < past.size(); ++i) b.BindInput(caches.past[i].c_str(), past[i]);
      b.BindOutput("logits", cpu);
      for (const std::string& name : caches.present) b.BindOutput(name.c_str(), memory->info);
      RunBound(s, Ort::RunOptions(), b);
      std::vector<Ort::Value> results = b.GetOutputValues();
      const auto shape = results[0].GetTensorTypeAndShapeInfo().GetShape();
      const int64_t vocabulary = shape[2];
      const size_t last = static_cast<size_t>((shape[1] - 1) * vocabulary);
      int64_t best = 0;
      float best_value = -INFINITY;
      if (results[0].GetTensorTypeAndShapeInfo().GetElementType() == ONNX_TENSOR_ELEMENT_DATA_TYPE_FLOAT16) {
        const auto* logits = results[0].GetTensorData<uint16_t>() + last;
        for (int64_t v = 0; v < vocabulary; ++v)
          if (HalfToFloat(logits[v]) > best_value) best_value = HalfToFloat(logits[best = v]);
      } else {
        const float* logits = results[0].GetTensorData<float>() + last;
        for (int64_t v = 0; v < vocabulary; ++v)
          if (logits[v] > best_value) best_value = logits[best = v];
      }
      out.push_back(best);
      length += step_ids.size();
      past.clear();
      for (size_t i = 1; i < results.size(); ++i) past.push_back(std::move(results[i]));
      step_ids = {best};
    }
    return out;
  };
}

// The static-cache step with two sets of buffers.
Generator StaticLoop(Ort::Session& s, bool graph) {
  const CacheInfo caches = Caches(s);
  size_t elements = 1;
  for (int64_t d : caches.shape) elements *= static_cast<size_t>(d);
  const size_t bytes = elements * ElementSize(caches.type);
  const int64_t max_length = caches.shape[2];
  struct Buffers {
    std::vector<std::unique_ptr<DeviceBuffer>> cache[2];
    std::unique_ptr<DeviceBuffer> token[2], position[2];
    std::vector<Ort::IoBinding> bindings;
    size_t runs = 0;
  };
  auto m = std::make_shared<Buffers>();
  auto memory = std::make_shared<DeviceMemory>(s);
  std::vector<char> zeros(bytes, 0);
  for (int p = 0; p < 2; ++p) {
    m->token[p] = std::make_unique<DeviceBuffer>(memory, 8, IntsOnHost());
    m->position[p] = std::make_unique<DeviceBuffer>(memory, 8, IntsOnHost());
    for (size_t i = 0; i < caches.past.size(); ++i) {
      m->cache[p].push_back(std::make_unique<DeviceBuffer>(memory, bytes));
      Check(cudaMemcpy(m->cache[p].back()->ptr, zeros.data(), bytes, cudaMemcpyHostToDevice), "cache zeros");
    }
  }
  const std::vector<int64_t> token_shape{1, 1}, position_shape{1};
  for (int p = 0; p < 2; ++p) {
    Ort::IoBinding b(s);
    auto wrap = [](DeviceBuffer& d, const std::vector<int64_t>& shape, ONNXTensorElementDataType t) {
      return d.Tensor(shape, t, d.bytes);
    };
    b.BindInput("input_ids", wrap(*m->token[p], token_shape, ONNX_TENSOR_ELEMENT_DATA_TYPE_INT64));
    b.BindInput("position", wrap(*m->position[p], position_shape, ONNX_TENSOR_ELEMENT_DATA_TYPE_INT64));
    b.BindOutput("next_token", wrap(*m->token[1 - p], token_shape, ONNX_TENSOR_ELEMENT_DATA_TYPE_INT64));
    b.BindOutput("next_position", wrap(*m->position[1 - p], position_shape, ONNX_TENSOR_ELEMENT_DATA_TYPE_INT64));
    for (size_t i = 0; i < caches.past.size(); ++i) {
      b.BindInput(caches.past[i].c_str(), wrap(*m->cache[p][i], caches.shape, caches.type));
      b.BindOutput(caches.present[i].c_str(), wrap(*m->cache[1 - p][i], caches.shape, caches.type));
    }
    m->bindings.push_back(std::move(b));
  }
  return [&s, m, graph, max_length](const std::vector<int64_t>& prompt, size_t n) {
    if (prompt.size() + n - 1 > static_cast<size_t>(max_length)) throw std::runtime_error("the cache is too short");
    Ort::RunOptions options[2];
    if (graph) {
      options[0].AddConfigEntry("gpu_graph_id", "1");
      options[1].AddConfigEntry("gpu_graph_id", "2");
    }
    const int64_t zero = 0;
    m->position[0]->Write(&zero, 8);
    std::vector<int64_t> out;
    for (size_t t = 0; t + 1 < prompt.size() + n; ++t) {
      const int p = static_cast<int>(t % 2);
      if (t < prompt.size())
        m->token[p]->Write(&prompt[t], 8);
      RunBound(s, options[p], m->bindings[static_cast<size_t>(p)]);
      int64_t token = 0;
      m->token[1 - p]->Read(&token, 8);
      if (t + 1 >= prompt.size()) out.push_back(token);
    }
    return out;
  };
}

double Median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 6) {
    std::fprintf(stderr, "usage: %s dynamic|static|static_graph MODEL.onnx PROMPT_FILE NEW RUNS [REFERENCE_FILE]\n",
                 argv[0]);
    return 2;
  }
  const std::string mode = argv[1], path = argv[2];
  std::setvbuf(stdout, nullptr, _IOLBF, 0);
  try {
    const std::vector<int64_t> prompt = ReadTokens(argv[3]);
    const size_t n = static_cast<size_t>(std::atol(argv[4]));
    const int runs = std::max(1, std::atoi(argv[5]));
    Ort::Env env(ORT_LOGGING_LEVEL_ERROR, "ort_generation_bench");
    const char* library = std::getenv("ORT_CUDA_EP_LIB");
    if (!LegacyCudaEp())
      env.RegisterExecutionProviderLibrary("cuda", library ? library : "libonnxruntime_providers_cuda.so");
    const auto create = Clock::now();
    Ort::Session session = MakeSession(env, path, mode == "static_graph");
    std::printf("session_create_ms %.1f\n", Ms(create));
    Generator generate = mode == "dynamic" ? DynamicLoop(session, prompt.size() + n) : StaticLoop(session, mode == "static_graph");
    const auto first = Clock::now();
    const std::vector<int64_t> tokens = generate(prompt, n);
    std::printf("first_generate_ms %.1f\n", Ms(first));
    std::vector<double> full, one;
    for (int r = 0; r < runs; ++r) {
      auto t0 = Clock::now();
      if (generate(prompt, n) != tokens) std::printf("warning: run %d generated other tokens than the first\n", r);
      full.push_back(Ms(t0));
      t0 = Clock::now();
      generate(prompt, 1);
      one.push_back(Ms(t0));
    }
    const double t_full = Median(full), t_one = Median(one);
    std::printf("prompt_tokens %zu\nnew_tokens %zu\n", prompt.size(), tokens.size());
    std::printf("generate_ms %.3f\ngenerate_one_ms %.3f\n", t_full, t_one);
    std::printf("tokens_per_s %.1f\n", static_cast<double>(tokens.size()) / (t_full / 1000.0));
    if (tokens.size() > 1)
      std::printf("decode_tokens_per_s %.1f\nms_per_decode_step %.4f\n",
                  static_cast<double>(tokens.size() - 1) / ((t_full - t_one) / 1000.0),
                  (t_full - t_one) / static_cast<double>(tokens.size() - 1));
    std::printf("tokens");
    for (int64_t t : tokens) std::printf(" %lld", static_cast<long long>(t));
    std::printf("\n");
    if (argc > 6) {
      const std::vector<int64_t> reference = ReadTokens(argv[6]);
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
