// tessera_tile_bench: TilePipeline over a large image, against its own bounds measured in the same process.
//
//   TESSERA_PLUGIN=build-gpu/libtessera_cuda.so build-gpu/tessera_tile_bench model.onnx ep=CUDAExecutionProvider
//       size=8192x8192 tile=1024 halo=8 depth=3 threads=8 repeat=5 [pinned=1] trace=tiles.json png=tiles.png
//
// Modes, each run `repeat` times (median): compute only (every tile's run, windows already on the device), copies
// only (staging, uploads, downloads and blending, no run), sequential (one tile at a time, waiting for each step),
// pipelined (the ring). Prints the table and pipelined / max(copies, compute) (1.0 = perfect overlap) and the
// speedup over sequential; then one traced pipelined run writes the Chrome trace and the PNG timeline.
#include <algorithm>
#include <cstdlib>
#include <iomanip>
#include <iostream>
#include <map>
#include <random>
#include <sstream>
#include <string>

#include "tessera/tessera.h"
#include "timeline_png.h"

namespace {

std::map<std::string, std::string> ParseArgs(int argc, char** argv) {
  std::map<std::string, std::string> args;
  for (int i = 2; i < argc; ++i) {
    const std::string a = argv[i];
    const size_t eq = a.find('=');
    if (eq == std::string::npos) throw std::runtime_error("arguments are key=value, got '" + a + "'");
    args[a.substr(0, eq)] = a.substr(eq + 1);
  }
  return args;
}

double Median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) {
    std::cerr << "usage: tessera_tile_bench MODEL [ep=NAME] [size=HxW] [channels=C] [tile=T] [halo=H] [depth=D]\n"
                 "                          [threads=N] [repeat=R] [pinned=1] [trace=FILE.json] [png=FILE.png]\n";
    return 2;
  }
  try {
    auto args = ParseArgs(argc, argv);
    const auto get = [&](const std::string& key, const std::string& fallback) {
      return args.count(key) ? args[key] : fallback;
    };
    const std::string ep = get("ep", "CPUExecutionProvider");
    const std::string size = get("size", "2048x2048");
    const int64_t height = std::stoll(size.substr(0, size.find('x')));
    const int64_t width = std::stoll(size.substr(size.find('x') + 1));
    const int64_t channels = std::stoll(get("channels", "3"));
    const int repeat = std::stoi(get("repeat", "5"));

    tessera::Environment env;
    if (const char* plugin = std::getenv("TESSERA_PLUGIN")) env.RegisterEpLibrary("plugin", plugin);
    tessera::SessionOptions options;
    // ep_options=key=value;key=value: provider options of the EP (e.g. automatic_cuda_graphs=0).
    tessera::ProviderOptions ep_options;
    for (std::string rest = get("ep_options", ""); !rest.empty();) {
      const size_t end = rest.find(';');
      const std::string item = rest.substr(0, end);
      rest = end == std::string::npos ? "" : rest.substr(end + 1);
      const size_t eq = item.find('=');
      if (eq == std::string::npos) throw std::runtime_error("ep_options items are key=value, got '" + item + "'");
      ep_options[item.substr(0, eq)] = item.substr(eq + 1);
    }
    if (ep != "CPUExecutionProvider") options.AddProvider(ep, ep_options);
    tessera::Session session(env, argv[1], options);
    const tessera::DataType type = session.inputs()[0].type;
    const tessera::DataType output_type =
        session.outputs()[0].type == tessera::DataType::kUndefined ? type : session.outputs()[0].type;
    // pinned=1: the image and the output in the model's device's pinned memory (as an application that decodes into
    // pinned buffers has them): the pipeline then copies windows and cores as regions, with no host staging or blending.
    const bool pinned = get("pinned", "0") == "1";
    tessera::AllocatorPtr host_memory;
    if (pinned) {
      const tessera::EpDevice* device = session.InputEpDevice(session.inputs()[0].name);
      if (device == nullptr || !device->host_accessible_memory)
        throw std::runtime_error("pinned=1: the model's input is not on a device with pinned memory");
      host_memory = env.CreateSharedAllocator(*device, tessera::MemoryType::kHostAccessible, nullptr);
    }
    const auto allocate = [&](tessera::DataType t, const tessera::Shape& shape) {
      return host_memory ? tessera::Tensor::Allocate(t, shape, host_memory) : tessera::Tensor::Allocate(t, shape);
    };
    tessera::Tensor image = allocate(type, {1, channels, height, width});
    {
      std::mt19937 random(1);
      std::uniform_real_distribution<float> uniform(0.0f, 1.0f);
      for (int64_t i = 0; i < image.NumElements(); ++i) {
        const float v = uniform(random);
        if (type == tessera::DataType::kFloat16) image.Data<tessera::Float16>()[i] = tessera::ToFloat16(v);
        else image.Data<float>()[i] = v;
      }
    }
    tessera::TilePipelineOptions o;
    o.tile_height = o.tile_width = std::stoll(get("tile", "512"));
    o.halo = std::stoll(get("halo", "8"));
    o.ring_depth = std::stoi(get("depth", "4"));
    o.host_threads = std::stoi(get("threads", "4"));

    struct Mode {
      const char* name;
      tessera::TileStages stages;
      bool sequential;
    };
    const std::vector<Mode> modes = {{"compute only", tessera::TileStages::kComputeOnly, false},
                                     {"copies only", tessera::TileStages::kCopiesOnly, false},
                                     {"sequential", tessera::TileStages::kAll, true},
                                     {"pipelined", tessera::TileStages::kAll, false}};
    std::map<std::string, double> seconds;
    tessera::TileRunStats pipelined_stats;
    std::cout << argv[1] << " on " << ep << ", image " << channels << "x" << height << "x" << width << " "
              << tessera::DataTypeName(type) << ", tile " << o.tile_height << " halo " << o.halo << " depth "
              << o.ring_depth << ", " << o.host_threads << " host threads, median of " << repeat
              << (pinned ? ", image and output in pinned memory" : "") << "\n";
    std::cout << std::left << std::setw(14) << "mode" << std::right << std::setw(10) << "ms" << std::setw(10)
              << "stage ms" << std::setw(10) << "blend ms" << std::setw(10) << "wait ms" << std::setw(12) << "GB/s link"
              << "\n";
    for (const Mode& mode : modes) {
      tessera::TilePipelineOptions mo = o;
      mo.stages = mode.stages;
      mo.sequential = mode.sequential;
      tessera::TilePipeline pipeline(env, session, mo);
      tessera::Tensor output = allocate(output_type, pipeline.OutputShape(image.shape()));
      pipeline.Run(image, output);  // warm-up: first-run costs, page faults of the output
      std::vector<double> times;
      tessera::TileRunStats last;
      for (int r = 0; r < repeat; ++r) {
        pipeline.Run(image, output);
        times.push_back(pipeline.stats().seconds);
        last = pipeline.stats();
      }
      const double s = Median(times);
      seconds[mode.name] = s;
      if (std::string(mode.name) == "pipelined") pipelined_stats = last;
      const double gbps = (last.input_bytes + last.output_bytes) / s / 1e9;
      std::cout << std::left << std::setw(14) << mode.name << std::right << std::fixed << std::setprecision(2)
                << std::setw(10) << s * 1e3 << std::setw(10) << last.stage_seconds * 1e3 << std::setw(10)
                << last.blend_seconds * 1e3 << std::setw(10) << last.wait_seconds * 1e3 << std::setw(12) << gbps
                << "\n";
    }
    const double bound = std::max(seconds["compute only"], seconds["copies only"]);
    std::cout << "tiles " << pipelined_stats.tiles << " of " << pipelined_stats.window_height << "x"
              << pipelined_stats.window_width << (pipelined_stats.on_device ? " on the device" : " on the host")
              << (pipelined_stats.direct_upload ? ", windows uploaded as regions" : "")
              << (pipelined_stats.direct_download ? ", cores downloaded in place" : "")
              << "\npipelined / max(copies only, compute only) = " << std::setprecision(3)
              << seconds["pipelined"] / bound << " (" << (seconds["copies only"] >= seconds["compute only"]
                                                           ? "copy-bound"
                                                           : "compute-bound")
              << ")\nspeedup over sequential = " << seconds["sequential"] / seconds["pipelined"] << "x\n";
    if (args.count("trace") || args.count("png")) {
      tessera::TilePipelineOptions traced = o;
      traced.trace_file = get("trace", "tile_trace.json");
      tessera::TilePipeline pipeline(env, session, traced);
      tessera::Tensor output = allocate(output_type, pipeline.OutputShape(image.shape()));
      pipeline.Run(image, output);  // the output's pages touched, as in the timed runs
      pipeline.Run(image, output);
      std::cout << "traced pipelined run: " << pipeline.stats().seconds * 1e3 << " ms, trace " << traced.trace_file
                << "\n";
      if (args.count("png")) {
        std::ostringstream title;
        title << std::setprecision(1) << std::fixed << "tiles " << pipeline.stats().tiles << " of "
              << pipeline.stats().window_height << "x" << pipeline.stats().window_width << ", depth "
              << o.ring_depth << ": " << pipeline.stats().seconds * 1e3 << " ms";
        tessera::bench::WriteTimelinePng(args["png"], pipeline.trace(), title.str());
        std::cout << "timeline " << args["png"] << "\n";
      }
    }
  } catch (const std::exception& e) {
    std::cerr << "error: " << e.what() << "\n";
    return 1;
  }
  return 0;
}
