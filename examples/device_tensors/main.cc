// device_tensors MODEL EP: tensors allocated in a device's memory from the Environment's shared allocator (an arena
// every session on that device shares), filled by CopyTensors, bound as a run's input, and read back. The model's
// first input is fed ones at its declared shape (symbolic dims = 1).
#include <cstdlib>
#include <iostream>

#include <tessera/tessera.h>

int main(int argc, char** argv) {
  if (argc < 3) {
    std::cerr << "usage: device_tensors MODEL EP   (e.g. tone_curve.onnx TestingExecutionProvider)\n";
    return 2;
  }
  try {
    tessera::Environment env;
    if (const char* plugin = std::getenv("TESSERA_PLUGIN")) env.RegisterEpLibrary("plugin", plugin);
    const tessera::EpDevice* device = nullptr;
    for (const tessera::EpDevice* d : env.GetEpDevices())
      if (d->ep_name == argv[2]) device = d;
    if (device == nullptr) throw std::runtime_error(std::string("no EP device ").append(argv[2]));

    // One arena per device memory for the whole process; sessions use it too with "session.use_env_allocators".
    tessera::ArenaOptions arena;
    tessera::AllocatorPtr memory = env.CreateSharedAllocator(*device, tessera::MemoryType::kDefault, &arena);
    tessera::SessionOptions options;
    options.AddProvider(argv[2]);
    options.config.emplace("session.use_env_allocators", "1");
    tessera::Session session(env, argv[1], options);

    const tessera::ValueInfo& input = session.inputs()[0];
    std::vector<int64_t> dims;
    for (const tessera::Dim& d : *input.shape) dims.push_back(d.is_concrete() ? d.value : 1);
    const tessera::Shape shape(dims);
    const tessera::Tensor ones = tessera::Tensor::FromVector<float>(
        shape, std::vector<float>(static_cast<size_t>(shape.NumElements()), 1.0f));
    tessera::Tensor x = tessera::Tensor::Allocate(tessera::DataType::kFloat, shape, memory);  // device memory
    env.CopyTensors({&ones, 1}, {&x, 1}, nullptr);
    std::cout << "input " << x.Describe() << "\n";

    tessera::IoBinding binding = session.CreateIoBinding();
    binding.BindInput(input.name, x);  // no copy: the model reads it where it is
    binding.BindOutput(session.outputs()[0].name, device->device_memory);
    session.Run(binding);
    const tessera::Tensor& y = binding.BoundOutputs()[0].tensor();
    tessera::Tensor back = tessera::Tensor::Allocate(y.type(), y.shape());
    env.CopyTensors({&y, 1}, {&back, 1}, nullptr);
    std::cout << "output " << y.Describe() << ", first value " << back.Data<float>()[0] << "\n";
    const tessera::AllocatorStats stats = memory->Stats();
    std::cout << "shared arena: " << stats.bytes_in_use << " bytes in use, " << stats.bytes_reserved << " reserved\n";
  } catch (const std::exception& e) {
    std::cerr << "error: " << e.what() << "\n";
    return 1;
  }
  return 0;
}
