// Summaries of output values for `tessera run`: element statistics and .npy export.
#pragma once

#include <filesystem>
#include <string>

#include "tessera/tessera.h"

namespace tessera::cli {

struct TensorStats {
  double min = 0, max = 0, mean = 0;
  bool numeric = false;  // false for strings and empty tensors
};

// Statistics over a host tensor's elements (NaNs propagate into mean; min/max skip them).
TensorStats ComputeStats(const Tensor& tensor);
// "name" made safe as a file name: anything but [A-Za-z0-9._-] becomes '_'.
std::string SafeFileName(const std::string& name);
// Writes DIR/<name>.npy for a tensor, DIR/<name>_<i>.npy for each tensor of a sequence; nothing for none.
void WriteValueAsNpy(const std::filesystem::path& dir, const std::string& name, const Value& value);

}  // namespace tessera::cli
