// libFuzzer target for the model loader: any byte string must either load (parse, topological sort,
// element-type inference) or throw tessera::Error; crashes, sanitizer reports and leaks are bugs.
//
// External data resolves against a private folder holding one small file, `weights.bin`, so that
// seeds with external initializers exercise the path, offset and length checks.
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <string>

#include "graph/model_loader.h"
#include "tessera/status.h"

namespace {

std::filesystem::path FuzzFolder() {
  static const std::filesystem::path folder = [] {
    auto path = std::filesystem::temp_directory_path() / ("tessera_fuzz_loader_" + std::to_string(::getpid()));
    std::filesystem::create_directories(path);
    std::ofstream weights(path / "weights.bin", std::ios::binary);
    const std::string bytes(64, '\x01');
    weights.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
    return path;
  }();
  return folder;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  try {
    tessera::LoadModelFromBytes(data, size, FuzzFolder(), "fuzz");
  } catch (const tessera::Error&) {
    // Rejection with a message is the expected outcome for malformed input.
  }
  return 0;
}
