// IoBinding: inputs and outputs bound once, reused across runs, on any device.
//
//   IoBinding b = session.CreateIoBinding();
//   b.BindInput("input", device_tensor);            // no copy when it is where the model wants it
//   b.BindOutput("logits", gpu_memory_info);        // allocated there with its runtime shape
//   session.Run(b);
//   const Tensor& out = b.BoundOutputs()[0];
//
// An output bound to a Tensor is written in place when the producing kernel's memory matches (no
// copy); otherwise it is copied into. A preallocated output whose shape or type disagrees with what
// the model produces is an error naming the output. Not thread-safe: use one binding per thread.
//
// In-place updates: an output may be bound to the same tensor as an input. The run then behaves as if every input
// were read before any output is written. When the output's producer updates that input where it reads it
// (ScatterElements / ScatterND on their data, and no other node reads the input) it writes only the updated
// elements into the buffer: a key/value cache bound as both `past` and `present` grows by one row per step without
// being copied (docs/PIPELINES.md, "Generation loops"). Any other such output is produced elsewhere and copied into
// the tensor after the run.
#pragma once

#include <string>
#include <vector>

#include "tessera/device.h"
#include "tessera/value.h"

namespace tessera {

class Session;

class IoBinding {
 public:
  explicit IoBinding(const Session& session);

  // Throws kInvalidArgument when `name` is not a model input / output.
  void BindInput(const std::string& name, const Value& value);
  void BindOutput(const std::string& name, const Value& value);  // preallocated
  void BindOutput(const std::string& name, const MemoryInfo& where);
  void ClearBoundInputs();
  void ClearBoundOutputs();
  // Waits for input producers / output writers on the session's streams (no-op on the CPU).
  void SynchronizeInputs();
  void SynchronizeOutputs();

  std::vector<std::string> BoundOutputNames() const;
  // The outputs of the last run, in the order they were bound.
  const std::vector<Value>& BoundOutputs() const { return outputs_; }

  struct Input {
    std::string name;
    Value value;
  };
  struct Output {
    std::string name;
    Value preallocated;  // kNone when bound by MemoryInfo
    MemoryInfo where;
  };
  const std::vector<Input>& inputs() const { return inputs_; }
  const std::vector<Output>& outputs() const { return bound_outputs_; }
  std::vector<Value>& mutable_results() { return outputs_; }
  const Session& session() const { return *session_; }

 private:
  const Session* session_;
  std::vector<Input> inputs_;
  std::vector<Output> bound_outputs_;
  std::vector<Value> outputs_;
};

}  // namespace tessera
