// One GPU found by two EP plugins (the CUDA and the Vulkan EP) is one hardware device: the Environment merges devices
// with the same PCI bus id, and each factory still finds the device it discovered.
#include <gtest/gtest.h>

#include "tessera/tessera.h"

namespace tessera {
namespace {

// Reports one GPU with `bus_id` and a metadata key of its own, and drives the devices carrying that key.
class FakeGpuFactory : public EpFactory {
 public:
  FakeGpuFactory(std::string ep, std::string bus_id, std::string key) : ep_(ep), bus_id_(bus_id), key_(key) {}
  std::string name() const override { return ep_; }
  std::string vendor() const override { return "test"; }
  std::string version() const override { return "0"; }
  std::vector<HardwareDevice> DiscoverHardware() override {
    HardwareDevice d;
    d.type = DeviceType::kGpu;
    d.vendor_id = 0xFFFD;
    d.device_id = 7;
    d.metadata = {{"pci_bus_id", bus_id_}, {key_, "1"}, {"name", ep_ + " GPU"}};
    return {d};
  }
  std::vector<EpDevice> GetEpDevices(std::span<const HardwareDevice* const> devices) override {
    std::vector<EpDevice> out;
    for (const HardwareDevice* d : devices) {
      if (d->metadata.count(key_) == 0) continue;
      EpDevice ep;
      ep.ep_name = ep_;
      ep.device = d;
      out.push_back(ep);
    }
    return out;
  }
  std::unique_ptr<ExecutionProvider> CreateEp(const EpDevice&, const ProviderOptions&) override { return nullptr; }
  AllocatorPtr CreateAllocator(const MemoryInfo&) override { return nullptr; }
  std::unique_ptr<DataTransfer> CreateDataTransfer() override { return nullptr; }
  std::unique_ptr<Stream> CreateStream(const MemoryInfo&) override { return nullptr; }

 private:
  std::string ep_, bus_id_, key_;
};

size_t GpuCount(const Environment& env) {
  size_t n = 0;
  for (const HardwareDevice* d : env.GetHardwareDevices()) n += d->type == DeviceType::kGpu && d->vendor_id == 0xFFFD;
  return n;
}

TEST(HardwareMergeTest, OneGpuSeenByTwoPluginsIsOneDevice) {
  Environment env(LogLevel::kError);
  env.RegisterEpFactory("first", std::make_unique<FakeGpuFactory>("FirstEP", "0000:1A:00.0", "first_index"));
  env.RegisterEpFactory("second", std::make_unique<FakeGpuFactory>("SecondEP", "0000:1a:00.0", "second_index"));
  ASSERT_EQ(GpuCount(env), 1u) << "same PCI bus id (any case): one hardware device";
  const EpDevice* first = nullptr;
  const EpDevice* second = nullptr;
  for (const EpDevice* d : env.GetEpDevices()) {
    if (d->ep_name == "FirstEP") first = d;
    if (d->ep_name == "SecondEP") second = d;
  }
  ASSERT_NE(first, nullptr);
  ASSERT_NE(second, nullptr);
  EXPECT_EQ(first->device, second->device);
  EXPECT_EQ(first->device->metadata.at("name"), "FirstEP GPU") << "the first description stays";
  EXPECT_EQ(first->device->metadata.count("second_index"), 1u) << "the second adds the keys it lacks";
}

TEST(HardwareMergeTest, DifferentBusIdsStayTwoDevices) {
  Environment env(LogLevel::kError);
  env.RegisterEpFactory("first", std::make_unique<FakeGpuFactory>("FirstEP", "0000:1a:00.0", "first_index"));
  env.RegisterEpFactory("second", std::make_unique<FakeGpuFactory>("SecondEP", "0000:1b:00.0", "second_index"));
  EXPECT_EQ(GpuCount(env), 2u);
}

}  // namespace
}  // namespace tessera
