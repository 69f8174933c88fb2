// Feeds and outputs of Run(feeds) that cross to a device with host-accessible memory (the simulated device's
// TestingHostAccessible): small host tensors are packed into one staging block and one device block (exec
// CopyValuesTo), small outputs come back through staging memory. Results must be exact whatever the mix of sizes,
// with and without copy streams, from several threads at once, and run after run with new values (a staging
// block reused too early would hand a run another run's numbers).
#include <gtest/gtest.h>

#include <string>

#include "test_env.h"
#include "unit/session/staged_feeds_model.h"

namespace tessera::test {
namespace {

SessionOptions OnDevice(const std::string& copy_streams, const std::string& run_streams) {
  SessionOptions options;
  options.AddProvider(kTestingEpName, {{"copy_streams", copy_streams}, {"run_streams", run_streams}});
  return options;
}

TEST(StagedFeedsTest, RunAfterRunOutputsAreTwiceTheirFeeds) {
  for (const char* copy_streams : {"0", "1"}) {
    Session session = MakeSession(DoublingModel(), OnDevice(copy_streams, "1"), TestEnv());
    for (int run = 0; run < 4; ++run) {
      const Session::NamedValues feeds = StagedFeeds(run);
      EXPECT_EQ(CheckDoubled(feeds, session.Run(feeds)), "") << "copy_streams " << copy_streams << ", run " << run;
    }
  }
}

TEST(StagedFeedsTest, ConcurrentRunsEachGetTheirOwnNumbers) {
  for (const char* copy_streams : {"0", "1"}) {
    Session session = MakeSession(DoublingModel(), OnDevice(copy_streams, "1"), TestEnv());
    const std::vector<std::string> failures = RunDoublingConcurrently(session, 4, 5);
    for (size_t t = 0; t < failures.size(); ++t)
      EXPECT_EQ(failures[t], "") << "copy_streams " << copy_streams << ", thread " << t;
  }
}

TEST(StagedFeedsTest, IoBindingOutputsToHostMemoryMatchToo) {
  Session session = MakeSession(DoublingModel(), OnDevice("1", "1"), TestEnv());
  const Session::NamedValues feeds = StagedFeeds(9);
  IoBinding binding = session.CreateIoBinding();
  for (const auto& [name, value] : feeds) binding.BindInput(name, value.tensor());
  for (size_t i = 0; i < kStagedSizes.size(); ++i) binding.BindOutput(StagedName('y', i), MemoryInfo::Host());
  session.Run(binding);
  EXPECT_EQ(CheckDoubled(feeds, binding.BoundOutputs()), "");
}

}  // namespace
}  // namespace tessera::test
