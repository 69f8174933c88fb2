// ExecutionPlan: a graph compiled for execution. Values become numbered slots; each node becomes a
// kernel step on its EP; a copy step is inserted wherever a value is needed in a memory space other
// than the one it is produced in. Liveness is precomputed: each step lists the slots whose last use
// it is, so the executor releases them right away and the arena reuses their memory.
//
// Streams: every EP that has one gets a compute stream per session for its kernels. Copies between its
// memory and the host run on that stream too, or on the EP's copy streams (one per direction) when it
// has them. A step that consumes a value produced on another stream waits on an event recorded after
// the producer. Buffers are released on the host at their last use, before the device has run it: the
// allocators the plan hands out (PlanServices::allocator_on) order each block's reuse after that use.
#pragma once

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "tessera/ep/data_transfer.h"
#include "tessera/ep/execution_provider.h"
#include "tessera/ep/kernel.h"

namespace tessera {

struct ValueSlot {
  std::string name;
  MemoryInfo location;      // where the value lives once produced
  Stream* stream = nullptr; // the stream that produces it (nullptr: host / synchronous)
  Value constant;           // set for initializers (already in `location`)
  bool is_graph_input = false;
  bool is_outer_scope = false;  // read from the enclosing graph at run time (subgraphs)
  int producer = -1;        // step index, -1 for inputs, constants and outer-scope values
};

struct PlanStep {
  enum class Kind { kKernel, kCopy };
  Kind kind = Kind::kKernel;
  const Node* node = nullptr;        // kernel steps
  ExecutionProvider* ep = nullptr;   // kernel steps
  const KernelDef* def = nullptr;    // kernel steps
  std::unique_ptr<Kernel> kernel;    // kernel steps
  std::map<std::string, std::unique_ptr<SubgraphRunner>> subgraphs;  // by attribute name; outlive the kernel
  std::vector<int> inputs;           // slot per node input (-1 = omitted); copy: {src}
  std::vector<int> outputs;          // slot per node output (-1 = omitted); copy: {dst}
  DataTransfer* transfer = nullptr;  // copy steps
  AllocatorPtr allocator;            // copy steps: destination allocator; kernel steps: EP allocator
  Stream* stream = nullptr;          // where the step runs (nullptr: on the host, synchronously)
  struct Wait {
    int producer;    // step index
    bool on_host;    // block the host (host step, or a host input of a device kernel)
  };
  std::vector<Wait> wait_for;        // async producers to wait for before this step
  bool record_event = false;         // a consumer on another stream (or the host) waits for this step
  std::vector<int> release_after;    // slots whose last use is this step
  std::string label;                 // "node 'conv1' (Conv) on CPUExecutionProvider" / "copy x -> Testing"
};

struct ExecutionPlan {
  std::vector<ValueSlot> slots;
  std::vector<PlanStep> steps;
  std::vector<int> input_slots;   // graph inputs, in Graph::inputs order (primary location)
  std::vector<int> output_slots;  // graph outputs, in Graph::outputs order
  std::vector<int> outer_slots;   // outer-scope values, for subgraphs
  std::vector<Stream*> streams;   // every stream steps run on

  int FindSlot(const std::string& name) const;  // the first slot of that value, -1 if none
};

}  // namespace tessera
