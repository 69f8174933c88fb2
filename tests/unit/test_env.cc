#include "test_env.h"

#include <cstdlib>
#include <filesystem>

namespace tessera::test {

namespace {
// No default caches under the user's home (the CUDA EP's tuning cache, tuning_results.h): every test process starts
// cold, and tests of a cache name its file.
const bool kNoDefaultCaches = [] { return setenv("TESSERA_CACHE_DIR", "", 1) == 0; }();
}  // namespace

Environment& TestEnv() {
  static Environment* env = [] {
    auto* e = new Environment(LogLevel::kWarning);
    e->RegisterEpLibrary("testing", TESSERA_TESTING_EP_PATH);
    // The CUDA plugin sits beside the testing plugin when it was built; it registers no device (and
    // CUDA tests skip) on machines without a GPU.
    const std::filesystem::path cuda = std::filesystem::path(TESSERA_TESTING_EP_PATH).parent_path() / "libtessera_cuda.so";
    if (std::filesystem::exists(cuda)) e->RegisterEpLibrary("cuda", cuda);
    // The Vulkan plugin likewise; the tests also drive software Vulkan devices (Mesa's lavapipe on CI), which the EP
    // lists only when asked to (vulkan_device.h).
    const std::filesystem::path vulkan = std::filesystem::path(TESSERA_TESTING_EP_PATH).parent_path() / "libtessera_vulkan.so";
    if (std::filesystem::exists(vulkan)) {
      setenv("TESSERA_VULKAN_SOFTWARE_DEVICES", "1", 0);
      e->RegisterEpLibrary("vulkan", vulkan);
    }
    return e;
  }();
  return *env;
}

std::string EpTypeFromShortName(const std::string& short_name) {
  if (short_name == "cpu") return "CPUExecutionProvider";
  if (short_name == "testing") return kTestingEpName;
  if (short_name == "cuda") return kCudaEpName;
  if (short_name == "vulkan") return kVulkanEpName;
  return short_name;
}

bool HasEpDevice(const std::string& short_name) {
  const std::string type = EpTypeFromShortName(short_name);
  for (const EpDevice* d : TestEnv().GetEpDevices())
    if (d->ep_name == type) return true;
  return false;
}

SessionOptions OptionsFor(const std::string& short_name) {
  SessionOptions options;
  if (short_name != "cpu") options.AddProvider(EpTypeFromShortName(short_name));
  return options;
}

}  // namespace tessera::test
