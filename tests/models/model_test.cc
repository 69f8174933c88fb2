// Reference models (ResNet-50, BERT-base) run on the CPU EP through the public API and compared with
// PyTorch's outputs.
//
// scripts/export_models.py writes <dir>/<model>/model.onnx, inputs/<input>.npy and outputs/<output>.npy.
// TESSERA_MODELS_DIR names <dir>: scripts/test.sh exports the small configurations to build/models,
// scripts/check_full_models.sh the full-size ones. Without it the tests skip and say why.
//
// Metric per output: max|tessera - torch| / max|torch|, which must stay below kMaxRelativeError.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <span>
#include <string>
#include <vector>

#include "test_env.h"
#include "tessera/tessera.h"

namespace tessera::test {
namespace {

namespace fs = std::filesystem;

constexpr double kMaxRelativeError = 1e-4;

DataType DataTypeFromNpyDescr(const std::string& descr, const fs::path& path) {
  if (descr == "<f4") return DataType::kFloat;
  if (descr == "<i8") return DataType::kInt64;
  if (descr == "<i4") return DataType::kInt32;
  if (descr == "|b1") return DataType::kBool;
  Fail(ErrorCode::kInvalidArgument, path.string(), ": unsupported .npy dtype '", descr, "'");
}

// The text after `key` in a .npy header dict, up to (not including) `terminator`.
std::string NpyHeaderField(const std::string& header, const std::string& key, char terminator,
                           const fs::path& path) {
  size_t start = header.find(key);
  size_t end = start == std::string::npos ? start : header.find(terminator, start + key.size());
  if (end == std::string::npos) Fail(ErrorCode::kInvalidArgument, path.string(), ": .npy header lacks ", key);
  return header.substr(start + key.size(), end - start - key.size());
}

Shape NpyShape(const std::string& dims_text) {
  std::vector<int64_t> dims;
  size_t pos = 0;
  while (pos < dims_text.size()) {
    size_t comma = dims_text.find(',', pos);
    std::string dim = dims_text.substr(pos, comma == std::string::npos ? std::string::npos : comma - pos);
    if (dim.find_first_of("0123456789") != std::string::npos) dims.push_back(std::stoll(dim));
    if (comma == std::string::npos) break;
    pos = comma + 1;
  }
  return Shape(std::move(dims));
}

// A minimal reader for what numpy.save writes: format 1.0-3.0, C order, f4 / i8 / i4 / b1.
Tensor ReadNpy(const fs::path& path) {
  std::ifstream file(path, std::ios::binary);
  char preamble[8];
  if (!file.read(preamble, sizeof(preamble)) || std::memcmp(preamble, "\x93NUMPY", 6) != 0)
    Fail(ErrorCode::kIo, path.string(), ": not a .npy file");
  const int major_version = static_cast<unsigned char>(preamble[6]);
  unsigned char length_bytes[4] = {0, 0, 0, 0};
  file.read(reinterpret_cast<char*>(length_bytes), major_version == 1 ? 2 : 4);
  const size_t header_length = length_bytes[0] | length_bytes[1] << 8 | length_bytes[2] << 16 |
                               static_cast<size_t>(length_bytes[3]) << 24;
  std::string header(header_length, '\0');
  file.read(header.data(), static_cast<std::streamsize>(header_length));
  if (header.find("'fortran_order': True") != std::string::npos)
    Fail(ErrorCode::kInvalidArgument, path.string(), ": Fortran-order .npy files are not supported");
  std::string descr = NpyHeaderField(header, "'descr': '", '\'', path);
  Tensor tensor = Tensor::Allocate(DataTypeFromNpyDescr(descr, path),
                                   NpyShape(NpyHeaderField(header, "'shape': (", ')', path)));
  if (!file.read(static_cast<char*>(tensor.raw_data()), static_cast<std::streamsize>(tensor.SizeInBytes())))
    Fail(ErrorCode::kIo, path.string(), ": truncated data for ", tensor.Describe());
  return tensor;
}

std::vector<fs::path> NpyFilesIn(const fs::path& dir) {
  std::vector<fs::path> files;
  for (const auto& entry : fs::directory_iterator(dir))
    if (entry.path().extension() == ".npy") files.push_back(entry.path());
  std::sort(files.begin(), files.end());
  return files;
}

struct Comparison {
  double max_abs_diff = 0, max_abs_reference = 0;
  double relative() const { return max_abs_reference > 0 ? max_abs_diff / max_abs_reference : max_abs_diff; }
};

Comparison Compare(std::span<const float> actual, std::span<const float> reference) {
  Comparison c;
  for (size_t i = 0; i < reference.size(); ++i) {
    double diff = std::fabs(static_cast<double>(actual[i]) - reference[i]);
    // NaN never compares greater, so record it explicitly.
    c.max_abs_diff = std::isnan(diff) ? diff : std::max(c.max_abs_diff, diff);
    c.max_abs_reference = std::max(c.max_abs_reference, std::fabs(static_cast<double>(reference[i])));
  }
  return c;
}

void CheckAgainstPyTorch(const std::string& model_name) {
  const char* models_dir = std::getenv("TESSERA_MODELS_DIR");
  if (models_dir == nullptr)
    GTEST_SKIP() << "TESSERA_MODELS_DIR is not set (scripts/test.sh exports the models and sets it)";
  const fs::path dir = fs::path(models_dir) / model_name;
  if (!fs::exists(dir / "model.onnx"))
    GTEST_SKIP() << dir / "model.onnx" << " does not exist (run scripts/export_models.py --small --out "
                 << models_dir << ")";

  Session session(TestEnv(), dir / "model.onnx", OptionsFor("cpu"));
  Session::NamedValues feeds;
  for (const fs::path& file : NpyFilesIn(dir / "inputs")) feeds.emplace_back(file.stem().string(), ReadNpy(file));
  std::vector<std::string> output_names;
  std::vector<Tensor> references;
  for (const fs::path& file : NpyFilesIn(dir / "outputs")) {
    output_names.push_back(file.stem().string());
    references.push_back(ReadNpy(file));
  }
  ASSERT_FALSE(feeds.empty() || references.empty()) << dir << " has no inputs/*.npy or outputs/*.npy";

  std::vector<Value> outputs = session.Run(feeds, output_names);
  ASSERT_EQ(outputs.size(), references.size());
  for (size_t i = 0; i < outputs.size(); ++i) {
    const Tensor& actual = outputs[i].tensor();
    ASSERT_EQ(actual.shape(), references[i].shape()) << output_names[i] << ": " << actual.Describe();
    Comparison c = Compare(actual.Span<float>(), references[i].Span<float>());
    std::cout << "[ reference ] " << model_name << " " << output_names[i] << ": max|a-b| " << c.max_abs_diff
              << ", max|b| " << c.max_abs_reference << ", relative " << c.relative() << "\n";
    testing::Test::RecordProperty(output_names[i] + "_max_relative_error", std::to_string(c.relative()));
    EXPECT_LT(c.relative(), kMaxRelativeError) << model_name << " output " << output_names[i];
  }
}

TEST(ReferenceModelTest, ResNet50MatchesPyTorch) { CheckAgainstPyTorch("resnet50"); }

TEST(ReferenceModelTest, BertBaseMatchesPyTorch) { CheckAgainstPyTorch("bert_base"); }

}  // namespace
}  // namespace tessera::test
