// What a kernel sees when it is created: session-wide settings (KernelInfo::session_settings) -- SessionOptions::
// use_deterministic_compute is what EP kernels read to leave out nondeterministic algorithms -- and the input shapes
// the session inferred (KernelInfo::InputShape), for work a kernel starts before the first run.
#include <gtest/gtest.h>

#include <optional>
#include <vector>

#include "providers/cpu/cpu_ep.h"
#include "test_env.h"
#include "unit/session/graph_builder.h"

namespace tessera::test {
namespace {

// What one kernel saw at creation.
struct Seen {
  bool deterministic = false;
  std::optional<Shape> input_shape;
};

// Relu that records what it was created with.
class RecordingRelu : public Kernel {
 public:
  RecordingRelu(const KernelInfo& info, std::vector<Seen>* seen) {
    seen->push_back({info.session_settings().deterministic_compute, info.InputShape(0)});
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
  explicit RecordingEp(std::vector<Seen>* seen)
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
  explicit RecordingEpFactory(std::vector<Seen>* seen) : seen_(seen) {}
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
  std::vector<Seen>* seen_;
};

// An environment with the recording EP, and options that run a model on it unoptimized.
struct Recording {
  std::vector<Seen> seen;
  Environment env;
  SessionOptions options;
  Recording() {
    env.RegisterEpFactory("recording", std::make_unique<RecordingEpFactory>(&seen));
    options.AddProvider("RecordingExecutionProvider");
    options.optimization_level = OptimizationLevel::kNone;
  }
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
    Recording recording;
    recording.options.use_deterministic_compute = deterministic;
    Session session = MakeSession(model, recording.options, recording.env);
    const std::vector<Seen>& seen = recording.seen;
    ASSERT_EQ(seen.size(), 2u);
    for (const Seen& kernel : seen) EXPECT_EQ(kernel.deterministic, deterministic);
    const std::vector<Value> out = session.Run({{"x", Value(Tensor::FromVector<float>({4}, {1, -2, 3, -4}))}});
    EXPECT_EQ(out[0].tensor().ToVector<float>(), (std::vector<float>{0, 2, 0, 4}));
  }
}

// Inferred static shapes reach the kernels; a symbolic dimension leaves the shape unknown (nullopt), and the runs
// still bring their own shapes.
TEST(KernelSettingsTest, KernelsSeeTheInputShapesTheSessionInferred) {
  for (const int64_t first : {int64_t{2}, int64_t{-1}}) {
    const std::string model = GraphBuilder()
                                  .Input("x", {first, 3})
                                  .Node("Relu", {"x"}, {"y"})
                                  .Output("y")
                                  .Serialize();
    Recording recording;
    Session session = MakeSession(model, recording.options, recording.env);
    const std::vector<Seen>& seen = recording.seen;
    ASSERT_EQ(seen.size(), 1u);
    if (first == 2) {
      ASSERT_TRUE(seen[0].input_shape.has_value());
      EXPECT_EQ(*seen[0].input_shape, Shape({2, 3}));
    } else {
      EXPECT_FALSE(seen[0].input_shape.has_value()) << seen[0].input_shape->ToString();
    }
    const int64_t rows = first == 2 ? 2 : 1;
    const std::vector<Value> out =
        session.Run({{"x", Value(Tensor::FromVector<float>({rows, 3}, std::vector<float>(rows * 3, -1.0f)))}});
    EXPECT_EQ(out[0].tensor().ToVector<float>(), std::vector<float>(rows * 3, 0.0f));
  }
}

}  // namespace
}  // namespace tessera::test
