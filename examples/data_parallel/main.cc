// data_parallel MODEL EP [REQUESTS]: runs MODEL on every device of EP (e.g. CUDAExecutionProvider on each GPU)
// with tessera::DataParallelRunner -- one session per device, one shared request queue -- first on one device,
// then on all, and prints the throughput of each and that every request matched the single-device results.
// Inputs are float32 ones at the model's declared shapes (symbolic dims = 1).
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <iostream>
#include <string>
#include <vector>

#include <tessera/tessera.h>

namespace {

tessera::Session::NamedValues OnesFor(const tessera::Session& session) {
  tessera::Session::NamedValues feeds;
  for (const tessera::ValueInfo& input : session.inputs()) {
    std::vector<int64_t> dims;
    for (const tessera::Dim& d : *input.shape) dims.push_back(d.is_concrete() ? d.value : 1);
    int64_t count = 1;
    for (int64_t d : dims) count *= d;
    feeds.emplace_back(input.name, tessera::Tensor::FromVector<float>(
                                       tessera::Shape(dims), std::vector<float>(static_cast<size_t>(count), 1.0f)));
  }
  return feeds;
}

// Requests per second over `requests` requests, and their outputs.
double Throughput(tessera::DataParallelRunner& runner, const tessera::Session::NamedValues& feeds, int requests,
                  std::vector<std::vector<tessera::Value>>& outputs) {
  const std::vector<tessera::Session::NamedValues> all(static_cast<size_t>(requests), feeds);
  runner.RunAll({feeds});  // warm-up
  const auto start = std::chrono::steady_clock::now();
  outputs = runner.RunAll(all);
  return requests / std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 3) {
    std::cerr << "usage: data_parallel MODEL EP [REQUESTS]   (e.g. resnet50.onnx CUDAExecutionProvider 400)\n";
    return 2;
  }
  const std::string model = argv[1], ep = argv[2];
  const int requests = argc > 3 ? std::atoi(argv[3]) : 200;
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
    tessera::DataParallelOptions options;
    options.runs_per_device = 2;  // a request's copies overlap the other's compute
    std::vector<std::vector<tessera::Value>> one_device, all_devices;
    tessera::DataParallelRunner single(env, model, {devices[0]}, options);
    const tessera::Session::NamedValues feeds = OnesFor(single.session(0));
    const double rate1 = Throughput(single, feeds, requests, one_device);
    tessera::DataParallelRunner runner(env, model, devices, options);
    const double rate_all = Throughput(runner, feeds, requests, all_devices);
    // Each device's session searched its own kernels (e.g. cuDNN algorithms), so results may differ in the last bits.
    double max_diff = 0, max_value = 0;
    for (size_t i = 0; i < all_devices.size(); ++i)
      for (size_t k = 0; k < all_devices[i].size(); ++k) {
        const std::vector<float> got = all_devices[i][k].tensor().ToVector<float>();
        const std::vector<float> want = one_device[0][k].tensor().ToVector<float>();
        for (size_t j = 0; j < got.size(); ++j) {
          max_diff = std::max(max_diff, static_cast<double>(std::abs(got[j] - want[j])));
          max_value = std::max(max_value, static_cast<double>(std::abs(want[j])));
        }
      }
    const bool same = max_diff <= 1e-3 * std::max(max_value, 1.0);
    std::cout << ep << ": 1 device " << rate1 << " requests/s; " << devices.size() << " devices " << rate_all
              << " requests/s (" << rate_all / rate1 << "x)\nper device:";
    for (uint64_t n : runner.CompletedPerSession()) std::cout << " " << n;
    std::cout << "\noutputs " << (same ? "agree" : "DIFFER") << " across devices (max abs difference " << max_diff
              << ")\n";
    return same ? 0 : 1;
  } catch (const std::exception& e) {
    std::cerr << "data_parallel: " << e.what() << "\n";
    return 1;
  }
}
