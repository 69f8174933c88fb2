// Shared pieces of the Vulkan EP tests (compiled when the Vulkan plugin is built). Every test uses the VulkanTest
// fixture, which skips with the reason when no Vulkan device is available (CI installs Mesa's lavapipe).
#pragma once

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "ops/op_tester.h"
#include "tessera/tessera.h"
#include "test_env.h"

namespace tessera::test {

class VulkanTest : public ::testing::Test {
 protected:
  void SetUp() override;
};

const EpDevice& VulkanDevice();
// An arena over the factory's device-memory allocator, shared by the tests.
AllocatorPtr VulkanDeviceAllocator();
AllocatorPtr VulkanHostVisibleAllocator();
Tensor ToVulkan(const Tensor& host);
Tensor ToHostTensor(const Tensor& any);
// Checks that every node of `model` runs on the Vulkan EP.
void ExpectAllOnVulkan(const std::string& model, const ProviderOptions& options = {});
// Checks that the one-node test's node runs on the Vulkan EP, then its outputs against the CPU EP's.
void CompareOnVulkan(OpTester& t);

}  // namespace tessera::test
