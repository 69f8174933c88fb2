// device_outputs MODEL EP [STEPS]: IO binding with outputs left in device memory, so that one run's output feeds
// the next run with no trip through the host (an iterative model, a post-processing model, a denoising loop). The
// model's first output must fit its first input; STEPS runs (default 4) are chained and the result is compared with
// the same chain through host tensors.
#include <cstdlib>
#include <iostream>

#include <tessera/tessera.h>

int main(int argc, char** argv) {
  if (argc < 3) {
    std::cerr << "usage: device_outputs MODEL EP [STEPS]\n";
    return 2;
  }
  const int steps = argc > 3 ? std::atoi(argv[3]) : 4;
  try {
    tessera::Environment env;
    if (const char* plugin = std::getenv("TESSERA_PLUGIN")) env.RegisterEpLibrary("plugin", plugin);
    tessera::SessionOptions options;
    options.AddProvider(argv[2]);
    tessera::Session session(env, argv[1], options);
    const std::string in = session.inputs()[0].name, out = session.outputs()[0].name;
    std::vector<int64_t> dims;
    for (const tessera::Dim& d : *session.inputs()[0].shape) dims.push_back(d.is_concrete() ? d.value : 2);
    std::vector<float> start(static_cast<size_t>(tessera::Shape(dims).NumElements()));
    for (size_t i = 0; i < start.size(); ++i) start[i] = 0.01f * static_cast<float>(i % 17) - 0.05f;
    const tessera::Tensor x0 = tessera::Tensor::FromVector<float>(tessera::Shape(dims), start);

    const tessera::MemoryInfo where = session.OutputMemoryInfo(out);  // the memory its producer writes
    tessera::Value current(x0);
    tessera::IoBinding binding = session.CreateIoBinding();
    for (int i = 0; i < steps; ++i) {
      binding.BindInput(in, current);  // step 0: copied up once; later steps: already on the device
      binding.BindOutput(out, where);
      session.Run(binding);
      current = binding.BoundOutputs()[0];
    }
    const tessera::Tensor& last = current.tensor();
    tessera::Tensor result = tessera::Tensor::Allocate(last.type(), last.shape());
    env.CopyTensors({&last, 1}, {&result, 1}, nullptr);

    tessera::Value host(x0);
    for (int i = 0; i < steps; ++i) host = session.Run({{in, host}})[0];
    std::cout << steps << " runs chained in " << where.ToString() << ", first value " << result.Data<float>()[0]
              << " (through the host: " << host.tensor().Data<float>()[0] << ")\n";
    if (result.ToVector<float>() != host.tensor().ToVector<float>()) throw std::runtime_error("outputs differ");
    std::cout << "device-resident chain matches\n";
  } catch (const std::exception& e) {
    std::cerr << "error: " << e.what() << "\n";
    return 1;
  }
  return 0;
}
