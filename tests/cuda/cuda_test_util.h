// Shared pieces of the CUDA EP tests (compiled only when the CUDA plugin is built). Every test uses the
// CudaTest fixture, which skips with the reason when no GPU is available (as on CI).
#pragma once

#include <gtest/gtest.h>

#include <functional>
#include <string>
#include <vector>

#include "ops/op_tester.h"
#include "tessera/tessera.h"
#include "test_env.h"

namespace tessera::test {

class CudaTest : public ::testing::Test {
 protected:
  void SetUp() override;
};

// The first CUDA EP device (the fixture guarantees there is one).
const EpDevice& CudaDevice();
EpFactory& CudaFactory();
// Arena allocators over the factory's raw allocators, shared by the tests.
AllocatorPtr CudaDeviceAllocator();
AllocatorPtr CudaPinnedAllocator();
// Synchronous copies through the Environment.
Tensor ToCuda(const Tensor& host);
Tensor ToHost(const Tensor& any);

// Runs a serialized model on the CUDA EP (CPU fallback) with `provider_options`; outputs on the host.
std::vector<Tensor> RunOnCuda(const std::string& model, const Session::NamedValues& feeds,
                              const ProviderOptions& provider_options = {});

// Checks that every node of `model` runs on the CUDA EP (none falls back to the CPU; feeds may be copied).
void ExpectAllOnCuda(const std::string& model, const ProviderOptions& provider_options = {});

// A miniature ResNet: conv-bn-relu, maxpool, conv + identity shortcut, relu, global pool, flatten, gemm,
// softmax; input "x" [1,3,16,16], output "prob" [1,10].
std::string SmallConvNetModel();

constexpr DataType kF32 = DataType::kFloat;
constexpr DataType kF16 = DataType::kFloat16;
constexpr DataType kI32 = DataType::kInt32;
constexpr DataType kI64 = DataType::kInt64;

// Checks that the one-node test's node runs on the CUDA EP, then its outputs against the CPU EP's.
void CompareOnCuda(OpTester& t);
// A 1-D int64 tensor.
Tensor Int64s(const std::vector<int64_t>& values);

// A float32 tensor with exactly the values of a float16 one.
Tensor Float16ToFloat(const Tensor& half);

// Builds the same one-node test twice: with `half_inputs` (float16) run on the CUDA EP, and with the
// same values in float32 run on the CPU EP; checks output 0 ("Y") agrees within the tolerance.
using OpBuilder = std::function<void(OpTester&, const std::vector<Tensor>& inputs)>;
void CompareFloat16WithCpu(const std::string& op, int opset, const std::vector<Tensor>& half_inputs,
                           const OpBuilder& build, double absolute, double relative, const std::string& domain = "");

}  // namespace tessera::test
