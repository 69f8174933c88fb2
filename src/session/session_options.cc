#include "tessera/session_options.h"

#include <algorithm>
#include <cctype>

namespace tessera {

EpSelectionPolicy ParseEpSelectionPolicy(const std::string& name) {
  std::string key = name;
  std::transform(key.begin(), key.end(), key.begin(), [](unsigned char c) { return std::tolower(c); });
  if (key == "default") return EpSelectionPolicy::kDefault;
  if (key == "prefer_cpu") return EpSelectionPolicy::kPreferCpu;
  if (key == "prefer_gpu") return EpSelectionPolicy::kPreferGpu;
  if (key == "prefer_npu") return EpSelectionPolicy::kPreferNpu;
  if (key == "max_performance") return EpSelectionPolicy::kMaxPerformance;
  if (key == "max_efficiency") return EpSelectionPolicy::kMaxEfficiency;
  Fail(ErrorCode::kInvalidArgument, "unknown EP selection policy '", name,
       "' (expected default, prefer_cpu, prefer_gpu, prefer_npu, max_performance or max_efficiency)");
}

SessionOptions& SessionOptions::AddProvider(std::string ep_name, ProviderOptions options) {
  providers.push_back({std::move(ep_name), std::move(options), 0});
  return *this;
}

}  // namespace tessera
