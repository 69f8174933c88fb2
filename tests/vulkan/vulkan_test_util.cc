#include "vulkan/vulkan_test_util.h"

#include <stdexcept>

#include "unit/session/graph_builder.h"

namespace tessera::test {

void VulkanTest::SetUp() {
  if (!HasEpDevice("vulkan"))
    GTEST_SKIP() << "no Vulkan device: libtessera_vulkan.so found no Vulkan 1.2 device with buffer device addresses "
                    "(install mesa-vulkan-drivers for lavapipe)";
}

const EpDevice& VulkanDevice() {
  for (const EpDevice* d : TestEnv().GetEpDevices())
    if (d->ep_name == kVulkanEpName) return *d;
  throw std::runtime_error("Vulkan EP not registered");
}

AllocatorPtr VulkanDeviceAllocator() {
  static AllocatorPtr allocator =
      std::make_shared<Arena>(VulkanDevice().factory->CreateAllocator(VulkanDevice().device_memory), ArenaOptions{});
  return allocator;
}

AllocatorPtr VulkanHostVisibleAllocator() {
  static AllocatorPtr allocator = std::make_shared<Arena>(
      VulkanDevice().factory->CreateAllocator(*VulkanDevice().host_accessible_memory), ArenaOptions{});
  return allocator;
}

Tensor ToVulkan(const Tensor& host) {
  Tensor device = Tensor::Allocate(host.type(), host.shape(), VulkanDeviceAllocator());
  TestEnv().CopyTensors({&host, 1}, {&device, 1}, nullptr);
  return device;
}

Tensor ToHostTensor(const Tensor& any) {
  Tensor host = Tensor::Allocate(any.type(), any.shape());
  TestEnv().CopyTensors({&any, 1}, {&host, 1}, nullptr);
  return host;
}

void ExpectAllOnVulkan(const std::string& model, const ProviderOptions& options) {
  SessionOptions session_options;
  session_options.AddProvider(kVulkanEpName, options);
  Session session = MakeSession(model, session_options, TestEnv());
  for (const PartitionEntry& e : session.Partition()) {
    if (!e.is_copy) {
      EXPECT_EQ(e.ep, kVulkanEpName) << e.op_type << " " << e.node_name;
    }
  }
}

void CompareOnVulkan(OpTester& t) {
  ExpectAllOnVulkan(t.SerializedModel());
  t.CompareWithCpu({"vulkan"});
}

}  // namespace tessera::test
