// The model of the staged-feeds tests (unit/session/staged_feeds_test.cc, cuda/cuda_staged_feeds_test.cc): seven
// float inputs of mixed sizes (some staged, some copied directly), each doubled by an Add on the device.
#pragma once

#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "unit/session/graph_builder.h"

namespace tessera::test {



// Sizes that mix staged (up to 64 Ki floats) and direct (larger) copies, with odd lengths.
inline const std::vector<int64_t> kStagedSizes = {1, 3, 257, 1000, 70000, 5, 65536};

inline std::string StagedName(char prefix, size_t i) {
  std::string name(1, prefix);
  name += std::to_string(i);
  return name;
}

inline std::string DoublingModel() {
  GraphBuilder g;
  for (size_t i = 0; i < kStagedSizes.size(); ++i) {
    g.Input(StagedName('x', i), {kStagedSizes[i]}).Node("Add", {StagedName('x', i), StagedName('x', i)}, {StagedName('y', i)}).Output(StagedName('y', i));
  }
  return g.Serialize();
}

inline Session::NamedValues StagedFeeds(int seed) {
  Session::NamedValues feeds;
  for (size_t i = 0; i < kStagedSizes.size(); ++i) {
    std::vector<float> v(kStagedSizes[i]);
    for (int64_t k = 0; k < kStagedSizes[i]; ++k) v[k] = static_cast<float>((k * 7 + seed * 13 + i) % 1001) - 500.0f;
    feeds.push_back({StagedName('x', i), Value(Tensor::FromVector(Shape{kStagedSizes[i]}, v))});
  }
  return feeds;
}

inline std::string DescribeOutput(size_t output, const char* what) {
  std::ostringstream s;
  s << "output " << output << ": " << what;
  return s.str();
}

// "" when every output is twice its feed, else what differs.
inline std::string CheckDoubled(const Session::NamedValues& feeds, const std::vector<Value>& out) {
  if (out.size() != feeds.size()) return "wrong number of outputs";
  for (size_t i = 0; i < out.size(); ++i) {
    const Tensor& y = out[i].tensor();
    if (y.memory_info() != MemoryInfo::Host()) return DescribeOutput(i, "not in host memory");
    const std::vector<float> x = feeds[i].second.tensor().ToVector<float>();
    const std::vector<float> got = y.ToVector<float>();
    if (got.size() != x.size()) return DescribeOutput(i, "wrong size");
    for (size_t k = 0; k < x.size(); ++k)
      if (got[k] != 2 * x[k]) return DescribeOutput(i, "wrong value");
  }
  return "";
}

// Runs the doubling model `runs` times from each of `threads` threads at once, each run with its own numbers;
// per thread "" or what went wrong first.
inline std::vector<std::string> RunDoublingConcurrently(Session& session, int threads, int runs) {
  std::vector<std::string> failures(threads);
  std::vector<std::thread> workers;
  for (int t = 0; t < threads; ++t)
    workers.emplace_back([&, t] {
      try {
        for (int r = 0; r < runs && failures[t].empty(); ++r) {
          const Session::NamedValues feeds = StagedFeeds(100 * t + r);
          failures[t] = CheckDoubled(feeds, session.Run(feeds));
        }
      } catch (const std::exception& e) {
        failures[t] = e.what();
      }
    });
  for (auto& w : workers) w.join();
  return failures;
}

}  // namespace tessera::test
