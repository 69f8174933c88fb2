// Tiled inference: a fully convolutional model over an image larger than one run should take, with the uploads, runs
// and downloads of different tiles overlapped (tessera::TilePipeline). Checks the tiled output against one run over
// the whole image.
//
//   example_tiled_inference MODEL EP [HEIGHTxWIDTH] [TILE] [HALO]
//   example_tiled_inference tone_curve.onnx TestingExecutionProvider 300x400 64 0
#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <iostream>
#include <string>

#include "tessera/tessera.h"

int main(int argc, char** argv) {
  if (argc < 3) {
    std::cerr << "usage: example_tiled_inference MODEL EP [HEIGHTxWIDTH] [TILE] [HALO]\n";
    return 2;
  }
  const std::string model = argv[1], ep = argv[2], size = argc > 3 ? argv[3] : "1000x1500";
  const int64_t height = std::stoll(size.substr(0, size.find('x'))), width = std::stoll(size.substr(size.find('x') + 1));
  try {
    tessera::Environment env;
    if (const char* plugin = std::getenv("TESSERA_PLUGIN")) env.RegisterEpLibrary("plugin", plugin);
    tessera::SessionOptions options;
    if (ep != "CPUExecutionProvider") options.AddProvider(ep);
    tessera::Session session(env, model, options);

    // An image in host memory, as an application decoded it.
    std::vector<float> pixels(static_cast<size_t>(3 * height * width));
    for (size_t i = 0; i < pixels.size(); ++i) pixels[i] = std::sin(0.001f * static_cast<float>(i)) * 2.0f;
    const tessera::Tensor image = tessera::Tensor::FromVector<float>({1, 3, height, width}, pixels);

    tessera::TilePipelineOptions tiles;
    tiles.tile_height = tiles.tile_width = argc > 4 ? std::stoll(argv[4]) : 256;
    tiles.halo = argc > 5 ? std::stoll(argv[5]) : 8;  // >= the model's receptive-field radius
    tiles.ring_depth = 4;  // tiles in flight: staging, upload, run, download and blending overlap
    tessera::TilePipeline pipeline(env, session, tiles);
    const tessera::Tensor tiled = pipeline.Run(image);
    const tessera::TileRunStats& stats = pipeline.stats();
    std::cout << stats.tiles << " tiles of " << stats.window_height << "x" << stats.window_width << " on "
              << (stats.on_device ? "the device" : "the host") << " in " << stats.seconds * 1e3 << " ms\n";

    const tessera::Tensor whole = session.Run({{session.inputs()[0].name, tessera::Value(image)}})[0].tensor();
    float worst = 0;
    for (int64_t i = 0; i < whole.NumElements(); ++i)
      worst = std::max(worst, std::fabs(whole.Data<float>()[i] - tiled.Data<float>()[i]));
    std::cout << "output " << tiled.shape().ToString() << ", max difference to one whole-image run " << worst << "\n";
    if (worst > 1e-4f) {
      std::cerr << "tiles disagree with the whole image (is the halo smaller than the receptive field?)\n";
      return 1;
    }
    std::cout << "tiled output matches\n";

    // The same image decoded into the device's pinned memory, and the output allocated there: windows are uploaded
    // straight from the image and cores downloaded straight into the output (2-D region copies), with no host
    // staging or blending copies.
    const tessera::EpDevice* device = session.InputEpDevice(session.inputs()[0].name);
    if (device != nullptr && device->host_accessible_memory && stats.on_device) {
      tessera::AllocatorPtr pinned = env.CreateSharedAllocator(*device, tessera::MemoryType::kHostAccessible, nullptr);
      tessera::Tensor pinned_image = tessera::Tensor::Allocate(tessera::DataType::kFloat, image.shape(), pinned);
      std::copy(pixels.begin(), pixels.end(), pinned_image.Data<float>());
      tessera::Tensor pinned_output = tessera::Tensor::Allocate(tiled.type(), tiled.shape(), pinned);
      pipeline.Run(pinned_image, pinned_output);
      const bool same = std::equal(tiled.Data<float>(), tiled.Data<float>() + tiled.NumElements(),
                                   pinned_output.Data<float>());
      std::cout << "pinned image and output: " << pipeline.stats().seconds * 1e3 << " ms"
                << (pipeline.stats().direct_upload ? ", windows uploaded as regions" : "")
                << (pipeline.stats().direct_download ? ", cores downloaded in place" : "")
                << (same ? ", same output\n" : ", OUTPUT DIFFERS\n");
      if (!same) return 1;
    }
  } catch (const std::exception& e) {
    std::cerr << "error: " << e.what() << "\n";
    return 1;
  }
  return 0;
}
