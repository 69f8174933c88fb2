// RunStreams: the device streams one run queues its work on, when they are not the ones its plan names.
//
// A plan is built once, against the session's primary stream set: each step names a stream (an EP's compute
// stream or a copy stream) and an allocator view ordered on it (StreamAllocator). Runs from several threads at
// once each take a stream set of their own from the session's pool (session/stream_pool.h) so that they run in
// parallel on the device; the executor then maps every stream and allocator view the plan names to the run's
// set through this table. Runs on the primary set pass no table and pay nothing.
#pragma once

#include <utility>
#include <vector>

#include "tessera/allocator.h"
#include "tessera/stream.h"

namespace tessera {

struct PlanServices;

struct RunStreams {
  std::vector<std::pair<Stream*, Stream*>> streams;                    // plan stream -> this run's
  std::vector<std::pair<const Allocator*, AllocatorPtr>> allocators;  // plan allocator -> this run's view
  const PlanServices* services = nullptr;  // stream_for / copy_stream_for / allocator_on of this run's set

  // This run's stream for a plan stream (a stream not in the table, and nullptr, map to themselves).
  Stream* Map(Stream* plan_stream) const {
    for (const auto& [from, to] : streams)
      if (from == plan_stream) return to;
    return plan_stream;
  }
  // This run's allocator for a step's allocator (one not in the table, e.g. host memory, maps to itself).
  const AllocatorPtr& Map(const AllocatorPtr& plan_allocator) const {
    for (const auto& [from, to] : allocators)
      if (from == plan_allocator.get()) return to;
    return plan_allocator;
  }
};

}  // namespace tessera
