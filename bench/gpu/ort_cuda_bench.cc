// ONNX Runtime's CUDA EP on one model, in the modes bench/gpu/side_by_side.sh compares with `tessera bench`:
// session creation, first run, Run with host tensors, IO binding with device tensors, IO binding + CUDA graph,
// and Run with host tensors from 4 threads at once on one session. Built on the GPU host against ONNX Runtime
// 1.29 (the npm build in ../shared/bench/ort_cuda; its CUDA EP is loaded as a plugin EP library).
//
//   ort_cuda_bench MODEL.onnx RUNS [NAME=D1xD2...,...]   (ORT_CUDA_EP_LIB names libonnxruntime_providers_cuda.so)
//
// Prints "key value..." lines: session_create_ms X, first_run_ms X, host_io MEDIAN P10 P90, bound MEDIAN P10 P90,
// bound_cuda_graph MEDIAN P10 P90 (or bound_cuda_graph_error ...), threads4_runs_per_s X, threads1_runs_per_s X.
// Inputs named in the third argument take those shapes; other dynamic dimensions are set to 1. Inputs are random
// (int64 ids below 1000, masks 1). Outputs are bound with the shapes the first run returned.
#include <cuda_runtime_api.h>
#include <onnxruntime_cxx_api.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <random>
#include <stdexcept>
#include <string>
#include <mutex>
#include <thread>
#include <unordered_map>
#include <vector>

namespace {

using Clock = std::chrono::steady_clock;

double Ms(Clock::time_point since) { return std::chrono::duration<double, std::milli>(Clock::now() - since).count(); }

template <class F>
void Time(const char* label, int runs, F&& f) {
  for (int i = 0; i < 20; ++i) f();
  std::vector<double> ms;
  for (int i = 0; i < runs; ++i) {
    const auto t = Clock::now();
    f();
    ms.push_back(Ms(t));
  }
  std::sort(ms.begin(), ms.end());
  auto at = [&](double q) { return ms[std::min(ms.size() - 1, static_cast<size_t>(q * ms.size()))]; };
  std::printf("%s %.3f %.3f %.3f\n", label, at(0.5), at(0.1), at(0.9));
}

size_t ElementSize(ONNXTensorElementDataType t) {
  switch (t) {
    case ONNX_TENSOR_ELEMENT_DATA_TYPE_FLOAT16: return 2;
    case ONNX_TENSOR_ELEMENT_DATA_TYPE_INT64: return 8;
    case ONNX_TENSOR_ELEMENT_DATA_TYPE_BOOL: return 1;
    default: return 4;
  }
}

struct Io {
  std::vector<std::string> names;
  std::vector<std::vector<int64_t>> shapes;
  std::vector<ONNXTensorElementDataType> types;
};

Io Describe(Ort::Session& s, bool inputs) {
  Ort::AllocatorWithDefaultOptions allocator;
  Io io;
  const size_t n = inputs ? s.GetInputCount() : s.GetOutputCount();
  for (size_t i = 0; i < n; ++i) {
    io.names.push_back(inputs ? s.GetInputNameAllocated(i, allocator).get() : s.GetOutputNameAllocated(i, allocator).get());
    Ort::TypeInfo info = inputs ? s.GetInputTypeInfo(i) : s.GetOutputTypeInfo(i);
    auto tensor = info.GetTensorTypeAndShapeInfo();
    std::vector<int64_t> shape = tensor.GetShape();
    for (int64_t& d : shape)
      if (d < 0) d = 1;
    io.shapes.push_back(shape);
    io.types.push_back(tensor.GetElementType());
  }
  return io;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 3) {
    std::fprintf(stderr, "usage: %s MODEL.onnx RUNS [NAME=D1xD2...,...]\n", argv[0]);
    return 2;
  }
  const std::string path = argv[1];
  const int runs = std::atoi(argv[2]);
  Ort::Env env(ORT_LOGGING_LEVEL_ERROR, "ort_cuda_bench");
  const char* library = std::getenv("ORT_CUDA_EP_LIB");
  env.RegisterExecutionProviderLibrary("cuda", library ? library : "libonnxruntime_providers_cuda.so");
  auto make_session = [&](bool graph) {
    Ort::SessionOptions options;
    options.SetGraphOptimizationLevel(GraphOptimizationLevel::ORT_ENABLE_ALL);
    std::vector<Ort::ConstEpDevice> devices;
    for (auto d : env.GetEpDevices())
      if (std::string(d.EpName()) == "CUDAExecutionProvider") devices.push_back(d);
    if (devices.empty()) throw std::runtime_error("no CUDA EP device");
    std::unordered_map<std::string, std::string> ep_options{
        {"device_id", "0"}, {"cudnn_conv_algo_search", "EXHAUSTIVE"}, {"enable_cuda_graph", graph ? "1" : "0"}};
    options.AppendExecutionProvider_V2(env, devices, ep_options);
    return Ort::Session(env, path.c_str(), options);
  };
  const auto create_start = Clock::now();
  Ort::Session session = make_session(false);
  std::printf("session_create_ms %.1f\n", Ms(create_start));
  Io in = Describe(session, true), out = Describe(session, false);
  if (argc > 3) {  // NAME=D1xD2,...: whole input shapes
    std::string spec = argv[3];
    for (size_t start = 0; start < spec.size();) {
      size_t end = spec.find(',', start);
      if (end == std::string::npos) end = spec.size();
      const std::string item = spec.substr(start, end - start);
      const size_t eq = item.find('=');
      const auto it = std::find(in.names.begin(), in.names.end(), item.substr(0, eq));
      if (eq == std::string::npos || it == in.names.end()) {
        std::fprintf(stderr, "bad input shape '%s'\n", item.c_str());
        return 2;
      }
      std::vector<int64_t> dims;
      for (size_t p = eq + 1; p <= item.size();) {
        size_t x = item.find('x', p);
        if (x == std::string::npos) x = item.size();
        dims.push_back(std::atoll(item.substr(p, x - p).c_str()));
        p = x + 1;
      }
      in.shapes[static_cast<size_t>(it - in.names.begin())] = dims;
      start = end + 1;
    }
  }
  std::vector<const char*> in_names, out_names;
  for (const std::string& n : in.names) in_names.push_back(n.c_str());
  for (const std::string& n : out.names) out_names.push_back(n.c_str());
  std::mt19937 rng(42);
  std::vector<std::vector<uint8_t>> host(in.names.size());
  std::vector<Ort::Value> feeds;
  Ort::MemoryInfo cpu = Ort::MemoryInfo::CreateCpu(OrtArenaAllocator, OrtMemTypeDefault);
  for (size_t i = 0; i < in.names.size(); ++i) {
    size_t n = 1;
    for (int64_t d : in.shapes[i]) n *= static_cast<size_t>(d);
    host[i].resize(n * ElementSize(in.types[i]));
    if (in.types[i] == ONNX_TENSOR_ELEMENT_DATA_TYPE_INT64) {
      auto* p = reinterpret_cast<int64_t*>(host[i].data());
      const bool mask = in.names[i].find("mask") != std::string::npos;
      for (size_t j = 0; j < n; ++j) p[j] = mask ? 1 : static_cast<int64_t>(rng() % 1000);
    } else if (in.types[i] == ONNX_TENSOR_ELEMENT_DATA_TYPE_FLOAT) {
      std::normal_distribution<float> normal;
      auto* p = reinterpret_cast<float*>(host[i].data());
      for (size_t j = 0; j < n; ++j) p[j] = normal(rng);
    } else if (in.types[i] == ONNX_TENSOR_ELEMENT_DATA_TYPE_FLOAT16) {
      auto* p = reinterpret_cast<uint16_t*>(host[i].data());
      for (size_t j = 0; j < n; ++j) p[j] = static_cast<uint16_t>(0x3c00 ^ (rng() & 0x83ff));
    }
    feeds.push_back(Ort::Value::CreateTensor(cpu, host[i].data(), host[i].size(), in.shapes[i].data(),
                                             in.shapes[i].size(), in.types[i]));
  }
  Ort::RunOptions run_options;
  auto run_host = [&](Ort::Session& s) {
    auto o = s.Run(run_options, in_names.data(), feeds.data(), feeds.size(), out_names.data(), out_names.size());
  };
  const auto first_start = Clock::now();
  {
    auto first = session.Run(run_options, in_names.data(), feeds.data(), feeds.size(), out_names.data(), out_names.size());
    std::printf("first_run_ms %.1f\n", Ms(first_start));
    for (size_t i = 0; i < first.size(); ++i) out.shapes[i] = first[i].GetTensorTypeAndShapeInfo().GetShape();
  }
  Time("host_io", runs, [&] { run_host(session); });
  // Runs per second of `threads` threads calling Run at once, after the threads warm up together (as tessera
  // bench does: what concurrent runs set up once is not timed).
  auto throughput = [&](int threads) {
    std::atomic<int> done{0};
    std::atomic<int> warming{threads};
    Clock::time_point start;
    std::mutex start_mutex;
    std::vector<std::thread> workers;
    for (int t = 0; t < threads; ++t)
      workers.emplace_back([&] {
        for (int i = 0; i < 10; ++i) run_host(session);
        {
          std::lock_guard<std::mutex> lock(start_mutex);
          if (--warming == 0) start = Clock::now();
        }
        while (warming.load() > 0) std::this_thread::yield();
        for (int i = 0; i < runs / 2; ++i) run_host(session);
        done += runs / 2;
      });
    for (std::thread& w : workers) w.join();
    return done.load() / (Ms(start) / 1000.0);
  };
  std::printf("threads1_runs_per_s %.1f\n", throughput(1));
  std::printf("threads4_runs_per_s %.1f\n", throughput(4));
  auto run_bound = [&](Ort::Session& s, const char* label) {
    Ort::MemoryInfo gpu("Cuda", OrtMemoryInfoDeviceType_GPU, 0x10de, 0, OrtDeviceMemoryType_DEFAULT, 0,
                        OrtArenaAllocator);
    Ort::Allocator allocator(s, gpu);
    std::vector<Ort::Value> device_in, device_out;
    for (size_t i = 0; i < in.names.size(); ++i) {
      device_in.push_back(Ort::Value::CreateTensor(allocator, in.shapes[i].data(), in.shapes[i].size(), in.types[i]));
      cudaMemcpy(device_in.back().GetTensorMutableRawData(), host[i].data(), host[i].size(), cudaMemcpyHostToDevice);
    }
    for (size_t i = 0; i < out.names.size(); ++i)
      device_out.push_back(
          Ort::Value::CreateTensor(allocator, out.shapes[i].data(), out.shapes[i].size(), out.types[i]));
    Ort::IoBinding binding(s);
    for (size_t i = 0; i < in_names.size(); ++i) binding.BindInput(in_names[i], device_in[i]);
    for (size_t i = 0; i < out_names.size(); ++i) binding.BindOutput(out_names[i], device_out[i]);
    Time(label, runs, [&] { s.Run(run_options, binding); });
  };
  run_bound(session, "bound");
  try {
    Ort::Session graph_session = make_session(true);
    run_bound(graph_session, "bound_cuda_graph");
  } catch (const std::exception& e) {
    std::printf("bound_cuda_graph_error %s\n", e.what());
  }
  return 0;
}
