// The Environment shared by all tests: the CPU EP plus the simulated device ("testing") plugin.
#pragma once

#include <string>

#include "tessera/tessera.h"

namespace tessera::test {

inline constexpr const char* kTestingEpName = "TestingExecutionProvider";

// Process-wide environment with the testing EP plugin registered (from TESSERA_TESTING_EP_PATH).
Environment& TestEnv();
// "cpu" -> CPUExecutionProvider, "testing" -> TestingExecutionProvider; other names pass through.
std::string EpTypeFromShortName(const std::string& short_name);
// Session options that put `short_name`'s EP first (the CPU EP stays as fallback).
SessionOptions OptionsFor(const std::string& short_name);

}  // namespace tessera::test
