// Runs a test body on several threads released together, for tests of concurrent runs.
#pragma once

#include <barrier>
#include <exception>
#include <functional>
#include <string>
#include <thread>
#include <vector>

namespace tessera::test {

// Runs body(t, released) on threads t = 0..count-1. Each body prepares what it needs, calls released() (which
// returns once every thread has called it, so the threads start their concurrent part together) and returns ""
// or a failure message. Returns each thread's message, or the message of what its body threw.
inline std::vector<std::string> RunOnThreadsAtOnce(
    int count, const std::function<std::string(int thread, const std::function<void()>& released)>& body) {
  std::vector<std::string> failures(count);
  std::barrier start(count);
  const std::function<void()> released = [&] { start.arrive_and_wait(); };
  std::vector<std::thread> threads;
  for (int t = 0; t < count; ++t)
    threads.emplace_back([&, t] {
      try {
        failures[t] = body(t, released);
      } catch (const std::exception& e) {
        failures[t] = e.what();
      }
    });
  for (auto& th : threads) th.join();
  return failures;
}

}  // namespace tessera::test
