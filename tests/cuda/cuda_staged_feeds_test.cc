// Run(feeds) on the CUDA EP with many small host feeds and outputs: the small ones travel through pinned staging
// memory in one packed copy each way, the large ones directly; the copies' operands are kept alive by the stream
// (CudaStream::KeepUntilDone) instead of host callbacks. Outputs must be exact run after run, from several threads,
// with copies on the compute stream and on their own streams.

#include "cuda/cuda_test_util.h"
#include "unit/session/staged_feeds_model.h"

namespace tessera::test {
namespace {

using CudaStagedFeedsTest = CudaTest;

SessionOptions CudaOptions(const char* copy_in_default_stream) {
  SessionOptions options;
  options.AddProvider(kCudaEpName, {{"do_copy_in_default_stream", copy_in_default_stream}});
  return options;
}

TEST_F(CudaStagedFeedsTest, RunAfterRunOutputsAreTwiceTheirFeeds) {
  for (const char* default_stream : {"1", "0"}) {
    Session session = MakeSession(DoublingModel(), CudaOptions(default_stream), TestEnv());
    for (int run = 0; run < 6; ++run) {
      const Session::NamedValues feeds = StagedFeeds(run);
      EXPECT_EQ(CheckDoubled(feeds, session.Run(feeds)), "") << "copies in default stream " << default_stream
                                                             << ", run " << run;
    }
  }
}

TEST_F(CudaStagedFeedsTest, ConcurrentRunsEachGetTheirOwnNumbers) {
  for (const char* default_stream : {"1", "0"}) {
    Session session = MakeSession(DoublingModel(), CudaOptions(default_stream), TestEnv());
    const std::vector<std::string> failures = RunDoublingConcurrently(session, 4, 20);
    for (size_t t = 0; t < failures.size(); ++t)
      EXPECT_EQ(failures[t], "") << "copies in default stream " << default_stream << ", thread " << t;
  }
}

}  // namespace
}  // namespace tessera::test
