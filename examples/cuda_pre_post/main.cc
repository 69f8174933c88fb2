// Pre- and post-processing ordered on the GPU: the application's own CUDA kernels before and after a Tessera run,
// with no host wait anywhere between "image decoded on the GPU" and "class ids ready in pinned memory".
//
//   example_cuda_pre_post MODEL   (an image classifier: input [N, 3, H, W] float, output [N, classes] float)
//   TESSERA_PLUGIN=build-gpu/libtessera_cuda.so build-gpu/examples/example_cuda_pre_post resnet50.onnx
//
// Three ways, each checked against a plain host-tensor Run:
//   1. One stream, per run: RunOptions::stream = the application's tessera::Stream. Kernels queued on it before Run
//      are ordered before the run; kernels queued after Run returns are ordered after it. The session keeps its own
//      streams (and several sets of them for concurrent runs).
//   2. Two streams: pre-processing on one application stream, post-processing on another, ordered by a Tessera
//      Event (a CUDA event) recorded on the first after the run and waited on by the second.
//   3. One stream, session-wide: the CUDA EP's provider option user_compute_stream = the application's
//      cudaStream_t, so every run of that session is queued on it (ONNX Runtime's way).
#include <cuda_runtime_api.h>

#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <iostream>
#include <string>
#include <vector>

#include "kernels.h"
#include "tessera/tessera.h"

#define CHECK_CUDA(call)                                                                              \
  do {                                                                                                \
    cudaError_t status_ = (call);                                                                     \
    if (status_ != cudaSuccess) throw std::runtime_error(std::string(#call) + ": " + cudaGetErrorString(status_)); \
  } while (0)

int main(int argc, char** argv) {
  if (argc < 2) {
    std::cerr << "usage: example_cuda_pre_post MODEL (TESSERA_PLUGIN=.../libtessera_cuda.so)\n";
    return 2;
  }
  try {
    tessera::Environment env;
    if (const char* plugin = std::getenv("TESSERA_PLUGIN")) env.RegisterEpLibrary("cuda", plugin);
    const tessera::EpDevice* gpu = nullptr;
    for (const tessera::EpDevice* d : env.GetEpDevices())
      if (d->ep_name == "CUDAExecutionProvider") gpu = d;
    if (gpu == nullptr) {
      std::cerr << "no CUDA EP device (register the plugin with TESSERA_PLUGIN=PATH)\n";
      return 1;
    }
    tessera::SessionOptions options;
    options.AddProvider("CUDAExecutionProvider");
    tessera::Session session(env, argv[1], options);
    const tessera::ValueInfo& input = session.inputs()[0];
    const tessera::ValueInfo& output = session.outputs()[0];
    const int height = static_cast<int>((*input.shape)[2].value), width = static_cast<int>((*input.shape)[3].value);
    const int pixels = 3 * height * width;

    // The application's streams and buffers: a stream from the Environment (its native handle is a cudaStream_t),
    // device tensors from the shared allocator, pinned memory for the 8-byte result.
    std::unique_ptr<tessera::Stream> app = env.CreateStream(*gpu), post = env.CreateStream(*gpu);
    auto app_stream = static_cast<cudaStream_t>(app->native_handle());
    auto post_stream = static_cast<cudaStream_t>(post->native_handle());
    tessera::AllocatorPtr device = env.CreateSharedAllocator(*gpu, tessera::MemoryType::kDefault, nullptr);
    tessera::AllocatorPtr pinned = env.CreateSharedAllocator(*gpu, tessera::MemoryType::kHostAccessible, nullptr);
    tessera::Tensor rgb = tessera::Tensor::Allocate(tessera::DataType::kUInt8, {height, width, 3}, device);
    tessera::Tensor x = tessera::Tensor::Allocate(tessera::DataType::kFloat, {1, 3, height, width}, device);
    tessera::IoBinding binding = session.CreateIoBinding();
    binding.BindInput(input.name, x);
    binding.BindOutput(output.name, gpu->device_memory);
    tessera::Tensor best = tessera::Tensor::Allocate(tessera::DataType::kInt64, {1}, pinned);
    std::unique_ptr<tessera::Event> run_done = app->CreateEvent();

    tessera::RunOptions run_options;
    run_options.stream = app.get();     // the run is ordered with the application's stream...
    run_options.synchronize = false;    // ...and Run returns once its work is queued

    // Way 3: a session whose every run is queued on the application's stream.
    tessera::SessionOptions on_app_stream;
    on_app_stream.AddProvider("CUDAExecutionProvider",
                              {{"user_compute_stream", std::to_string(reinterpret_cast<uintptr_t>(app_stream))}});
    tessera::Session stream_session(env, argv[1], on_app_stream);
    tessera::IoBinding stream_binding = stream_session.CreateIoBinding();
    stream_binding.BindInput(input.name, x);
    stream_binding.BindOutput(output.name, gpu->device_memory);
    tessera::RunOptions queued_only;
    queued_only.synchronize = false;

    const char* way_names[] = {"", "one stream (RunOptions::stream)", "two streams (an event)",
                               "one stream (user_compute_stream)"};
    for (int way = 1; way <= 3; ++way) {
      tessera::Session& runner = way == 3 ? stream_session : session;
      tessera::IoBinding& bound = way == 3 ? stream_binding : binding;
      for (int frame = 0; frame < 3; ++frame) {
        const auto start = std::chrono::steady_clock::now();
        LaunchRenderRgb(static_cast<uint8_t*>(rgb.raw_data()), height, width, frame, app_stream);
        LaunchNormalize(static_cast<const uint8_t*>(rgb.raw_data()), static_cast<float*>(x.raw_data()), height, width,
                        app_stream);
        runner.Run(bound, way == 3 ? queued_only : run_options);
        const tessera::Tensor& scores = bound.BoundOutputs()[0].tensor();
        const int classes = static_cast<int>(scores.shape()[1]);
        cudaStream_t consumer = app_stream;
        if (way == 2) {  // post-processing on another stream, after the run's end event
          run_done->Record(*app);
          run_done->Wait(*post);
          consumer = post_stream;
        }
        LaunchArgmax(static_cast<const float*>(scores.raw_data()), classes, static_cast<int64_t*>(best.raw_data()),
                     consumer);
        CHECK_CUDA(cudaGetLastError());
        const double queued_ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
        CHECK_CUDA(cudaStreamSynchronize(consumer));  // the only host wait: the application wants the answer now

        // The same frame through host tensors, for the check.
        std::vector<uint8_t> host_rgb(pixels);
        CHECK_CUDA(cudaMemcpy(host_rgb.data(), rgb.raw_data(), pixels, cudaMemcpyDeviceToHost));
        std::vector<float> host_x(pixels);
        const float mean[3] = {0.485f, 0.456f, 0.406f}, stddev[3] = {0.229f, 0.224f, 0.225f};
        for (int i = 0; i < pixels; ++i) {
          const int c = i / (height * width), p = i % (height * width);
          host_x[i] = (host_rgb[p * 3 + c] / 255.0f - mean[c]) / stddev[c];
        }
        const tessera::Tensor reference = session.Run(
            {{input.name, tessera::Value(tessera::Tensor::FromVector<float>({1, 3, height, width}, host_x))}})[0].tensor();
        const float* ref = reference.Data<float>();
        int64_t expected = 0;
        for (int k = 1; k < classes; ++k)
          if (ref[k] > ref[expected]) expected = k;
        const int64_t got = best.Data<int64_t>()[0];
        std::cout << way_names[way] << ", frame " << frame << ": class " << got
                  << " (host tensors: " << expected << "), queued in " << queued_ms << " ms\n";
        if (got != expected) {
          std::cerr << "the device pipeline disagrees with the host-tensor run\n";
          return 1;
        }
      }
    }
    std::cout << "pre- and post-processing on the device agree with host tensors\n";
  } catch (const std::exception& e) {
    std::cerr << "error: " << e.what() << "\n";
    return 1;
  }
  return 0;
}
