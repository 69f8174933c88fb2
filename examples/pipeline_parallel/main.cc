// pipeline_parallel FIRST.onnx SECOND.onnx EP [MICROBATCHES]: a model split in two (FIRST's only output feeds
// SECOND's only input) run as a two-stage pipeline over two devices of EP: stage 1 on device 0 writes its
// activations in device 0's memory (IO binding), they are copied device to device (CopyTensors, a peer copy
// between GPUs) into device 1's memory, and stage 2 reads them there; the stages run in two threads, so micro-
// batch i+1's first half overlaps micro-batch i's second half. With one device both stages share it. Prints the
// pipelined and the sequential time and checks both give the same outputs. Inputs: float32 ones at FIRST's
// declared shapes (symbolic dims = 1).
#include <chrono>
#include <condition_variable>
#include <cstdlib>
#include <deque>
#include <iostream>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include <tessera/tessera.h>

namespace {

tessera::Tensor Ones(const tessera::Session& session, float value) {
  const tessera::ValueInfo& input = session.inputs().at(0);
  std::vector<int64_t> dims;
  for (const tessera::Dim& d : *input.shape) dims.push_back(d.is_concrete() ? d.value : 1);
  int64_t count = 1;
  for (int64_t d : dims) count *= d;
  return tessera::Tensor::FromVector<float>(tessera::Shape(dims), std::vector<float>(static_cast<size_t>(count), value));
}

struct Stages {
  tessera::Environment& env;
  tessera::Session& first;
  tessera::Session& second;
  const tessera::EpDevice& device0;
  const tessera::EpDevice& device1;
  tessera::AllocatorPtr memory1;

  // Stage 1: the activations stay in device 0's memory.
  tessera::Tensor RunFirst(const tessera::Tensor& x) {
    tessera::IoBinding binding = first.CreateIoBinding();
    binding.BindInput(first.inputs()[0].name, x);
    binding.BindOutput(first.outputs()[0].name, device0.device_memory);
    first.Run(binding);
    return binding.BoundOutputs()[0].tensor();
  }
  // Device 0 -> device 1, then stage 2; its output on the host.
  tessera::Tensor RunSecond(const tessera::Tensor& activations) {
    tessera::Tensor moved = activations;
    if (!(activations.memory_info() == device1.device_memory)) {
      moved = tessera::Tensor::Allocate(activations.type(), activations.shape(), memory1);
      env.CopyTensors({&activations, 1}, {&moved, 1}, nullptr);
    }
    return second.Run({{second.inputs()[0].name, moved}})[0].tensor();
  }
};

}  // namespace

int main(int argc, char** argv) {
  if (argc < 4) {
    std::cerr << "usage: pipeline_parallel FIRST.onnx SECOND.onnx EP [MICROBATCHES]\n";
    return 2;
  }
  const std::string ep = argv[3];
  const int microbatches = argc > 4 ? std::atoi(argv[4]) : 64;
  try {
    tessera::Environment env;
    if (const char* plugin = std::getenv("TESSERA_PLUGIN")) env.RegisterEpLibrary("plugin", plugin);
    std::vector<const tessera::EpDevice*> devices;
    for (const tessera::EpDevice* d : env.GetEpDevices())
      if (d->ep_name == ep) devices.push_back(d);
    if (devices.empty()) {
      std::cerr << "no device of " << ep << " (register its plugin with TESSERA_PLUGIN=PATH)\n";
      return 1;
    }
    const int second_index = devices.size() > 1 ? 1 : 0;
    tessera::SessionOptions on0, on1;
    on0.providers.push_back({ep, {}, 0});
    on1.providers.push_back({ep, {}, second_index});
    tessera::Session first(env, argv[1], on0), second(env, argv[2], on1);
    tessera::AllocatorPtr memory1 = env.GetSharedAllocator(devices[second_index]->device_memory);
    if (!memory1) memory1 = env.CreateSharedAllocator(*devices[second_index], tessera::MemoryType::kDefault, nullptr);
    Stages stages{env, first, second, *devices[0], *devices[second_index], memory1};
    std::vector<tessera::Tensor> inputs;
    for (int i = 0; i < microbatches; ++i) inputs.push_back(Ones(first, 0.01f * static_cast<float>(i % 7)));
    stages.RunSecond(stages.RunFirst(inputs[0]));  // warm-up

    // Sequential: each micro-batch through both stages before the next starts.
    std::vector<tessera::Tensor> sequential;
    auto start = std::chrono::steady_clock::now();
    for (const tessera::Tensor& x : inputs) sequential.push_back(stages.RunSecond(stages.RunFirst(x)));
    const double sequential_ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();

    // Pipelined: stage 1 in this thread, stage 2 in another, a queue of device-0 activations between them.
    std::mutex mutex;
    std::condition_variable ready;
    std::deque<std::optional<tessera::Tensor>> queue;
    std::vector<tessera::Tensor> pipelined;
    std::string failure;
    start = std::chrono::steady_clock::now();
    std::thread stage2([&] {
      for (;;) {
        std::optional<tessera::Tensor> item;
        {
          std::unique_lock<std::mutex> lock(mutex);
          ready.wait(lock, [&] { return !queue.empty(); });
          item = std::move(queue.front());
          queue.pop_front();
        }
        if (!item) return;
        try {
          pipelined.push_back(stages.RunSecond(*item));
        } catch (const std::exception& e) {
          failure = e.what();
        }
      }
    });
    for (const tessera::Tensor& x : inputs) {
      tessera::Tensor activations = stages.RunFirst(x);
      std::lock_guard<std::mutex> lock(mutex);
      queue.push_back(std::move(activations));
      ready.notify_one();
    }
    {
      std::lock_guard<std::mutex> lock(mutex);
      queue.push_back(std::nullopt);
      ready.notify_one();
    }
    stage2.join();
    const double pipelined_ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
    if (!failure.empty()) throw std::runtime_error(failure);

    bool same = pipelined.size() == sequential.size();
    for (size_t i = 0; same && i < sequential.size(); ++i)
      same = pipelined[i].ToVector<float>() == sequential[i].ToVector<float>();
    std::cout << ep << ": stage 1 on device 0, stage 2 on device " << second_index << ", " << microbatches
              << " micro-batches: sequential " << sequential_ms << " ms, pipelined " << pipelined_ms << " ms ("
              << sequential_ms / pipelined_ms << "x)\noutputs " << (same ? "identical" : "DIFFER") << "\n";
    return same ? 0 : 1;
  } catch (const std::exception& e) {
    std::cerr << "pipeline_parallel: " << e.what() << "\n";
    return 1;
  }
}
