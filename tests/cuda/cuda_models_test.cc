// The GPU host's bench models against PyTorch: for every MODEL.onnx in $TESSERA_BENCH_MODELS with a
// MODEL.ref/ folder (written by scripts/gpu_host/export_models.py: input_<name>.npy, output.npy computed
// in float64), runs the model on the CUDA EP with TF32 off and checks the relative L2 error of output 0:
// < 1e-3 for float32 models, < 1e-2 for float16 ones (issue 3's accuracy bar), or twice PyTorch's own error where
// that is larger (MODEL.ref/pytorch_error.txt: PyTorch in the model's precision on the GPU against the same
// reference; random-weight float16 MobileNetV2 reaches only ~1.3e-2 on PyTorch, and its exporter-folded file is
// 1.5e-2 off before any float16 arithmetic, see docs/CUDA.md). Models with convolutions run
// twice: NCHW and NHWC (prefer_nhwc = 1; float16 convolutions run NHWC both times, as they do by default).
// Skipped when the variable is unset (CI, the dev machine).
#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iostream>

#include "cuda/cuda_test_util.h"

namespace tessera::test {
namespace {

namespace fs = std::filesystem;

// Reads the .npy files export_models.py writes: little-endian f2 / f4 / f8 / i8, C order.
Tensor ReadSimpleNpy(const fs::path& path) {
  std::ifstream file(path, std::ios::binary);
  std::string bytes((std::istreambuf_iterator<char>(file)), std::istreambuf_iterator<char>());
  if (bytes.size() < 10 || bytes.compare(0, 6, "\x93NUMPY") != 0)
    throw std::runtime_error("not a .npy: " + path.string());
  const bool v1 = bytes[6] == 1;
  const size_t header_length = v1 ? static_cast<uint8_t>(bytes[8]) | (static_cast<uint8_t>(bytes[9]) << 8)
                                  : static_cast<size_t>(*reinterpret_cast<const uint32_t*>(&bytes[8]));
  const size_t data_start = (v1 ? 10 : 12) + header_length;
  const std::string header = bytes.substr(v1 ? 10 : 12, header_length);
  const size_t descr = header.find("'descr': '") + 10;
  const std::string type = header.substr(descr, 3);
  const DataType dtype = type == "<f4" ? DataType::kFloat
                         : type == "<f2" ? DataType::kFloat16
                         : type == "<f8" ? DataType::kDouble
                         : type == "<i8" ? DataType::kInt64
                                         : DataType::kUndefined;
  if (dtype == DataType::kUndefined || header.find("'fortran_order': False") == std::string::npos)
    throw std::runtime_error("unsupported .npy layout in " + path.string() + ": " + header);
  std::vector<int64_t> dims;
  const size_t open = header.find('(', header.find("'shape'")), close = header.find(')', open);
  std::string list = header.substr(open + 1, close - open - 1);
  for (size_t start = 0; start < list.size();) {
    const size_t comma = list.find(',', start);
    const std::string item = list.substr(start, comma == std::string::npos ? std::string::npos : comma - start);
    if (item.find_first_of("0123456789") != std::string::npos) dims.push_back(std::stoll(item));
    if (comma == std::string::npos) break;
    start = comma + 1;
  }
  Tensor t = Tensor::Allocate(dtype, Shape(dims));
  if (bytes.size() < data_start + t.SizeInBytes()) throw std::runtime_error("truncated .npy: " + path.string());
  std::memcpy(t.raw_data(), bytes.data() + data_start, t.SizeInBytes());
  return t;
}

double AsDouble(const Tensor& t, int64_t i) {
  switch (t.type()) {
    case DataType::kFloat: return t.Data<float>()[i];
    case DataType::kFloat16: return ToFloat(t.Data<Float16>()[i]);
    case DataType::kDouble: return t.Data<double>()[i];
    default: throw std::runtime_error("not a float tensor");
  }
}

double RelativeL2Error(const Tensor& expected, const Tensor& actual) {
  double difference = 0, reference = 0;
  for (int64_t i = 0; i < expected.NumElements(); ++i) {
    const double e = AsDouble(expected, i), a = AsDouble(actual, i);
    if (std::isnan(a)) return INFINITY;
    difference += (a - e) * (a - e);
    reference += e * e;
  }
  return std::sqrt(difference / reference);
}

// PyTorch's own relative error on the model (0 when the export did not record it).
double PyTorchError(const fs::path& ref) {
  std::ifstream file(ref / "pytorch_error.txt");
  double error = 0;
  return file >> error ? error : 0.0;
}

using CudaModelsTest = CudaTest;

TEST_F(CudaModelsTest, BenchModelsMatchPyTorch) {
  const char* dir = std::getenv("TESSERA_BENCH_MODELS");
  if (dir == nullptr) GTEST_SKIP() << "TESSERA_BENCH_MODELS is not set";
  int checked = 0;
  for (const fs::directory_entry& entry : fs::directory_iterator(dir)) {
    const fs::path model = entry.path();
    if (model.extension() != ".onnx") continue;
    const fs::path ref = fs::path(model).replace_extension(".ref");
    if (!fs::exists(ref / "output.npy")) continue;
    const Tensor expected = ReadSimpleNpy(ref / "output.npy");
    for (const std::string nhwc : {"0", "1"}) {
      SessionOptions options;
      options.AddProvider(kCudaEpName, {{"use_tf32", "0"}, {"prefer_nhwc", nhwc}});
      Session session(TestEnv(), model, options);
      int on_cpu = 0, convs = 0;
      for (const PartitionEntry& e : session.Partition()) {
        if (e.is_copy) continue;
        if (e.op_type.ends_with("Conv")) ++convs;
        if (e.ep == kCudaEpName) continue;
        ++on_cpu;
        std::cout << "  " << model.filename().string() << ": " << e.op_type << " (" << e.node_name << ") on " << e.ep
                  << "\n";
      }
      if (convs == 0 && nhwc == "1") break;  // the same session again
      Session::NamedValues feeds;
      for (const ValueInfo& input : session.inputs())
        feeds.emplace_back(input.name, Value(ReadSimpleNpy(ref / ("input_" + input.name + ".npy"))));
      // Three runs, all replaying step graphs (step_graphs.h) where the preparation at creation captured them
      // (static shapes); otherwise the first queues every step directly, the second captures, the third replays.
      for (int run = 0; run < 3; ++run) {
        const Tensor actual = session.Run(feeds)[0].tensor();
        ASSERT_EQ(actual.shape(), expected.shape()) << model;
        const double error = RelativeL2Error(expected, actual);
        const double bar = std::max(actual.type() == DataType::kFloat16 ? 1e-2 : 1e-3, 2 * PyTorchError(ref));
        std::cout << "MODEL " << model.filename().string() << " (prefer_nhwc " << nhwc << ", run " << run
                  << "): " << on_cpu << " nodes off the GPU, relative L2 error " << error
                  << " vs PyTorch (float64), bar " << bar << "\n";
        EXPECT_LT(error, bar) << model << " prefer_nhwc " << nhwc << " run " << run;
      }
    }
    ++checked;
  }
  EXPECT_GT(checked, 0) << "no MODEL.onnx with MODEL.ref/ in " << dir;
}

}  // namespace
}  // namespace tessera::test
