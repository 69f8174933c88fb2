// The Environment shared by all tests: the CPU EP plus the simulated device ("testing") plugin.
#pragma once

#include <string>

#include "tessera/tessera.h"

namespace tessera::test {

inline constexpr const char* kTestingEpName = "TestingExecutionProvider";
inline constexpr const char* kCudaEpName = "CUDAExecutionProvider";
inline constexpr const char* kVulkanEpName = "VulkanExecutionProvider";

// Process-wide environment with the testing EP plugin registered (from TESSERA_TESTING_EP_PATH).
Environment& TestEnv();
// "cpu" -> CPUExecutionProvider, "testing" -> TestingExecutionProvider, "cuda" -> CUDAExecutionProvider,
// "vulkan" -> VulkanExecutionProvider;
// other names pass through.
std::string EpTypeFromShortName(const std::string& short_name);
// Whether TestEnv() has an EP device for `short_name` (e.g. false for "cuda" without a GPU).
bool HasEpDevice(const std::string& short_name);
// Session options that put `short_name`'s EP first (the CPU EP stays as fallback).
SessionOptions OptionsFor(const std::string& short_name);

}  // namespace tessera::test
