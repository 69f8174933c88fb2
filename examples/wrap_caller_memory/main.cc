// wrap_caller_memory MODEL EP: the application owns the device memory (here from the EP factory's raw allocator, a
// stand-in for cudaMalloc or a Vulkan buffer), wraps it as tensors without copying, binds one as the input and one as
// a preallocated output, and the run writes the output in place. The model's first input gets 0.5 at its declared
// shape (symbolic dims = 1); its first output must have the input's shape.
#include <cstdlib>
#include <iostream>

#include <tessera/tessera.h>

int main(int argc, char** argv) {
  if (argc < 3) {
    std::cerr << "usage: wrap_caller_memory MODEL EP\n";
    return 2;
  }
  try {
    tessera::Environment env;
    if (const char* plugin = std::getenv("TESSERA_PLUGIN")) env.RegisterEpLibrary("plugin", plugin);
    const tessera::EpDevice* device = nullptr;
    for (const tessera::EpDevice* d : env.GetEpDevices())
      if (d->ep_name == argv[2]) device = d;
    if (device == nullptr) throw std::runtime_error(std::string("no EP device ").append(argv[2]));
    tessera::SessionOptions options;
    options.AddProvider(argv[2]);
    tessera::Session session(env, argv[1], options);
    const tessera::ValueInfo& input = session.inputs()[0];
    std::vector<int64_t> dims;
    for (const tessera::Dim& d : *input.shape) dims.push_back(d.is_concrete() ? d.value : 1);
    const tessera::Shape shape(dims);
    const size_t bytes = static_cast<size_t>(shape.NumElements()) * sizeof(float);

    // The application's own allocations, in the memory the model reads and writes.
    tessera::AllocatorPtr app_memory = device->factory->CreateAllocator(device->device_memory);
    void* in_ptr = app_memory->Allocate(bytes);
    void* out_ptr = app_memory->Allocate(bytes);
    {
      tessera::Tensor x = tessera::Tensor::Wrap(tessera::DataType::kFloat, shape, in_ptr, bytes, device->device_memory);
      tessera::Tensor y = tessera::Tensor::Wrap(tessera::DataType::kFloat, shape, out_ptr, bytes, device->device_memory);
      const tessera::Tensor halves = tessera::Tensor::FromVector<float>(
          shape, std::vector<float>(static_cast<size_t>(shape.NumElements()), 0.5f));
      env.CopyTensors({&halves, 1}, {&x, 1}, nullptr);
      tessera::IoBinding binding = session.CreateIoBinding();
      binding.BindInput(input.name, x);
      binding.BindOutput(session.outputs()[0].name, y);
      session.Run(binding);
      const bool in_place = binding.BoundOutputs()[0].tensor().raw_data() == out_ptr;
      tessera::Tensor back = tessera::Tensor::Allocate(tessera::DataType::kFloat, shape);
      env.CopyTensors({&y, 1}, {&back, 1}, nullptr);
      const tessera::Tensor expected = session.Run({{input.name, tessera::Value(halves)}})[0].tensor();
      std::cout << "output written " << (in_place ? "in place into the application's buffer" : "by a copy")
                << ", first value " << back.Data<float>()[0] << " (host tensors: " << expected.Data<float>()[0] << ")\n";
      if (back.ToVector<float>() != expected.ToVector<float>()) throw std::runtime_error("outputs differ");
    }  // the wrapping tensors and the binding are gone before the application frees its memory
    app_memory->Free(in_ptr);
    app_memory->Free(out_ptr);
    std::cout << "caller memory wrapped without copies\n";
  } catch (const std::exception& e) {
    std::cerr << "error: " << e.what() << "\n";
    return 1;
  }
  return 0;
}
