// Session-wide settings reach every kernel at creation (KernelInfo::session_settings), at any subgraph depth:
// SessionOptions::use_deterministic_compute is what EP kernels read to leave out nondeterministic algorithms.
#include <gtest/gtest.h>

#include <vector>

#include "providers/cpu/cpu_ep.h"
#include "test_env.h"
#include "unit/session/graph_builder.h"

namespace tessera::test {
namespace {

// Relu that records the settings it was created with.
class RecordingRelu : public Kernel {
 public:
  RecordingRelu(const KernelInfo& info, std::vector<bool>* seen) {
    seen->push_back(info.session_settings().deterministic_compute);
  }
  void Compute(KernelContext& ctx) const override {
    const Tensor& x = ctx.Input(0);
    Tensor& y = ctx.Output(0, x.type(), x.shape());
    for (int64_t i = 0; i < x.NumElements(); ++i) y.Data<float>()[i] = std::max(0.0f, x.Data<float>()[i]);
  }
};

// The CPU EP under another name, with a Relu kernel of its own.
class RecordingEp : public CpuExecutionProvider {
 public:
  explicit RecordingEp(std::vector<bool>* seen)
      : CpuExecutionProvider(std::make_shared<Arena>(CreateHostAllocator(), ArenaOptions{})) {
    KernelDef relu;
    relu.op_type = "Relu";
    kernels_.Register(relu, [seen](const KernelInfo& info) { return std::make_unique<RecordingRelu>(info, seen); });
  }
  const std::string& type() const override { return type_; }
  const KernelRegistry& kernels() const override { return kernels_; }

 private:
  const std::string type_ = "RecordingExecutionProvider";
  KernelRegistry kernels_;
};

class RecordingEpFactory : public EpFactory {
 public:
  explicit RecordingEpFactory(std::vector<bool>* seen) : seen_(seen) {}
  std::string name() const override { return "RecordingExecutionProvider"; }
  std::string vendor() const override { return "Tessera tests"; }
  std::string version() const override { return "1"; }
  std::vector<EpDevice> GetEpDevices(std::span<const HardwareDevice* const> devices) override {
    std::vector<EpDevice> out;
    for (const HardwareDevice* d : devices)
      if (d->type == DeviceType::kCpu) out.push_back({name(), vendor(), d, {}, {}, MemoryInfo::Host(), {}, this});
    return out;
  }
  std::unique_ptr<ExecutionProvider> CreateEp(const EpDevice&, const ProviderOptions&) override {
    return std::make_unique<RecordingEp>(seen_);
  }
  AllocatorPtr CreateAllocator(const MemoryInfo&) override { return nullptr; }
  std::unique_ptr<DataTransfer> CreateDataTransfer() override { return nullptr; }
  std::unique_ptr<Stream> CreateStream(const MemoryInfo&) override { return nullptr; }

 private:
  std::vector<bool>* seen_;
};

TEST(KernelSettingsTest, DeterministicComputeReachesEveryKernel) {
  const std::string model = GraphBuilder()
                                .Input("x", {4})
                                .Node("Neg", {"x"}, {"n"})
                                .Node("Relu", {"n"}, {"r"})
                                .Node("Relu", {"r"}, {"y"})
                                .Output("y")
                                .Serialize();
  for (const bool deterministic : {false, true}) {
    std::vector<bool> seen;
    Environment env;
    env.RegisterEpFactory("recording", std::make_unique<RecordingEpFactory>(&seen));
    SessionOptions options;
    options.AddProvider("RecordingExecutionProvider");
    options.optimization_level = OptimizationLevel::kNone;
    options.use_deterministic_compute = deterministic;
    Session session = MakeSession(model, options, env);
    EXPECT_EQ(seen, std::vector<bool>(2, deterministic)) << "use_deterministic_compute " << deterministic;
    const std::vector<Value> out = session.Run({{"x", Value(Tensor::FromVector<float>({4}, {1, -2, 3, -4}))}});
    EXPECT_EQ(out[0].tensor().ToVector<float>(), (std::vector<float>{0, 2, 0, 4}));
  }
}

}  // namespace
}  // namespace tessera::test
