// DataParallelRunner: one model on several EP devices of one process (the GPUs of a host, instances of the
// simulated device, or the CPU): one Session per device, worker threads per session, and one shared queue of
// requests, so that each device takes the next request as soon as it is free (a faster device takes more).
//
//   std::vector<const tessera::EpDevice*> gpus;
//   for (const tessera::EpDevice* d : env.GetEpDevices())
//     if (d->ep_name == "CUDAExecutionProvider") gpus.push_back(d);
//   tessera::DataParallelRunner runner(env, "resnet50.onnx", gpus);
//   std::future<std::vector<tessera::Value>> one = runner.Submit({{"input", batch}});
//   std::vector<std::vector<tessera::Value>> all = runner.RunAll(requests);   // in request order
//
// Feeds may be in host memory (each session copies them to its device) or in any memory a registered transfer
// reaches; outputs come back in host memory. A request that fails (a bad feed, out of memory) sets its future's
// exception; the workers and the other requests go on. Thread-safe: Submit and RunAll may be called from any
// thread. The destructor lets the workers finish the requests already queued, then joins them.
#pragma once

#include <cstdint>
#include <filesystem>
#include <future>
#include <memory>
#include <string>
#include <vector>

#include "tessera/session.h"

namespace tessera {

struct DataParallelOptions {
  // Applied to every session. Its `providers` are replaced by each device's EP, with the options of the first
  // ProviderRequest naming that EP (e.g. {"CUDAExecutionProvider", {{"use_tf32", "0"}}}); the CPU EP stays the
  // fallback unless disable_cpu_fallback is set.
  SessionOptions session;
  // Requests each device runs at once (worker threads per session; runs in flight overlap their copies and
  // host work with the device's compute on EPs with per-run streams). At least 1.
  int runs_per_device = 1;
};

class DataParallelRunner {
 public:
  // One session per entry of `devices` (an EP device may appear more than once: several sessions on it).
  // Throws kInvalidArgument for an empty list or runs_per_device < 1, and what a session's creation throws.
  DataParallelRunner(Environment& env, const std::filesystem::path& model, std::vector<const EpDevice*> devices,
                     const DataParallelOptions& options = {});
  ~DataParallelRunner();
  DataParallelRunner(const DataParallelRunner&) = delete;
  DataParallelRunner& operator=(const DataParallelRunner&) = delete;

  // Queues one request; the future yields its outputs (`output_names`, all when empty) in host memory.
  std::future<std::vector<Value>> Submit(Session::NamedValues feeds, std::vector<std::string> output_names = {});
  // Submits every request and waits for all; outputs in request order. Rethrows the first failure (by request
  // order) after every request has finished.
  std::vector<std::vector<Value>> RunAll(const std::vector<Session::NamedValues>& requests,
                                         const std::vector<std::string>& output_names = {});

  size_t size() const;                       // sessions (= entries of `devices`)
  Session& session(size_t index);            // the session of devices[index]
  const EpDevice& device(size_t index) const;
  // Requests each session has finished so far (failed ones included), in `devices` order.
  std::vector<uint64_t> CompletedPerSession() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace tessera
