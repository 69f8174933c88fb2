// Shared pieces of the `tessera._tessera` extension module. One file per concept binds one part of the
// API (errors, devices, options, values, DLPack, sessions, IO binding); the onnxruntime-compatible
// Python surface (InferenceSession, NodeArg, provider normalization) lives in python/tessera/*.py.
//
// Lifetime: every object that can hold device memory or a plugin's code (values, sessions, bindings)
// holds a shared_ptr<Runtime>, declared as its first member, so the Environment (which unloads plugin
// libraries) outlives every tensor and allocator created through it.
#pragma once

#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "tessera/tessera.h"

namespace tessera::python {

namespace py = pybind11;

// The process-wide Environment plus the allocators Python values are created with.
class Runtime {
 public:
  Runtime();
  ~Runtime();
  Environment& env() { return *env_; }
  // An allocator for `info`: the Environment's shared allocator when one exists, else one made by the EP
  // factory that owns the memory (cached). Throws kInvalidArgument when no registered EP owns it.
  AllocatorPtr AllocatorFor(const MemoryInfo& info);
  // Synchronous copy between any two memory spaces a registered EP can copy between.
  void Copy(const Tensor& src, Tensor& dst);
  // Unloads a plugin, first dropping the cached allocators (they may hold its code).
  void UnregisterEpLibrary(const std::string& registration_name);

 private:
  std::mutex mutex_;
  std::map<MemoryInfo, AllocatorPtr> allocators_;
  std::unique_ptr<Environment> env_;
};

std::shared_ptr<Runtime> GetRuntime();

// ---- devices (devices.cc) -------------------------------------------------------------------------
// "CUDAExecutionProvider" -> "cuda", "TestingExecutionProvider" -> "testing", "CPUExecutionProvider" -> "cpu".
std::string ShortEpName(const std::string& ep_name);
// The memory an ORT-style device name refers to: "cpu", an EP's short name ("cuda", "testing") for its
// device memory, or "<short name>_pinned" for its host-accessible memory. `device_id` is the device's
// ordinal among that EP's devices.
MemoryInfo MemoryInfoForDevice(Runtime& runtime, const std::string& device_type, int device_id);
// The inverse, for OrtValue.device_name(): "cpu" for host-readable memory, else the owning EP's short name.
std::string DeviceNameOf(Runtime& runtime, const MemoryInfo& info);
// The EP device whose device (or host-accessible) memory is `info`, or nullptr.
const EpDevice* EpDeviceOwning(Runtime& runtime, const MemoryInfo& info);
// SessionOptions.set_provider_selection_policy_delegate: a Python callable fn(ep_devices, model_metadata,
// runtime_metadata, max_selections) -> [EpDevice] as the C++ EpSelectionDelegate (it takes the GIL to run).
EpSelectionDelegate PythonSelectionDelegate(py::object fn);
// The EP device of `ep_name` driving the hardware device with this ordinal, or nullptr.
const EpDevice* FindEpDevice(Runtime& runtime, const std::string& ep_name, uint32_t ordinal);

// ---- numpy conversion (numpy_convert.cc) ----------------------------------------------------------
DataType DataTypeFromDtype(const py::dtype& dtype);
// Accepts a numpy dtype, a numpy scalar type (np.float32) or anything np.dtype() accepts.
DataType DataTypeFromObject(const py::handle& obj);
py::dtype DtypeFromDataType(DataType type);
Shape ShapeFromSequence(const py::handle& seq);

// A host tensor over `array` without copying when it is C-contiguous and aligned (numeric types);
// otherwise over a contiguous copy. `keepalive` receives the array whose memory the tensor borrows.
Tensor HostTensorFromArray(const py::handle& array, py::object& keepalive);
// A numpy array viewing a host tensor; `base` keeps the memory alive (nullptr: the view owns a Tensor
// copy, which shares the buffer). String tensors are always copied into an object array.
py::array ArrayViewOfHostTensor(const Tensor& tensor, py::handle base = py::handle());
// A numpy array holding the tensor's data: a view for host tensors it can keep alive, a copy otherwise.
py::array ArrayFromTensor(Runtime& runtime, const Tensor& tensor);

// ---- values (value.cc) ----------------------------------------------------------------------------
// The C++ object behind tessera.OrtValue.
struct PyOrtValue {
  std::shared_ptr<Runtime> runtime;
  Value value;
  // What the tensor's memory borrows from (a numpy array, a DLPack producer), if anything.
  py::object keepalive;

  const Tensor& tensor() const;
};

// ---- streams (streams.cc) -------------------------------------------------------------------------
struct PySyncStream {
  std::shared_ptr<Runtime> runtime;  // first: outlives the stream (the plugin's code)
  std::unique_ptr<Stream> stream;
};
// A stream of the EP device `ep_name` / `ordinal`; throws kInvalidArgument when there is none.
std::shared_ptr<PySyncStream> CreateSyncStream(const std::string& ep_name, uint32_t ordinal);

// Converts a feed (OrtValue, numpy array or anything np.asarray accepts) to a Value; `keepalive`
// receives what must stay alive while the value is used.
Value ValueFromFeed(const py::handle& feed, py::object& keepalive);
// Wraps a run result; host tensors borrowing caller memory keep `keepalive` alive.
py::object WrapOrtValue(Value value, py::object keepalive = py::object());

// ---- options (options.cc) -------------------------------------------------------------------------
// onnxruntime's ExecutionMode, accepted for compatibility: Tessera runs one graph step at a time.
enum class ExecutionMode { kSequential = 0, kParallel = 1 };

// The C++ object behind tessera.SessionOptions.
struct PySessionOptions {
  SessionOptions options;
  int inter_op_threads = 0;  // accepted for compatibility (see ExecutionMode)
  ExecutionMode execution_mode = ExecutionMode::kSequential;
  int log_verbosity_level = 0;
  bool enable_mem_pattern = true, enable_cpu_mem_arena = true;
  std::vector<py::object> initializer_values;  // the OrtValues of add_initializer, whose memory the sessions share
};

struct PyRunOptions {
  RunOptions options;
  int log_verbosity_level = 0;
  bool only_execute_path_to_fetches = false;  // accepted for onnxruntime's code: every planned node runs
  std::shared_ptr<PySyncStream> stream;  // keeps options.stream alive
};

// ---- sessions (session.cc) ------------------------------------------------------------------------
// The C++ object behind the `_Session` that tessera.InferenceSession wraps; shared with IO bindings.
struct PySession {
  std::shared_ptr<Runtime> runtime;
  std::unique_ptr<Session> session;
};

// Converts run results to numpy arrays: host tensors are shared without copies, except tensors that
// borrow caller memory (an output aliasing a numpy input) or, with `always_copy`, every tensor.
py::list ArraysFromValues(Runtime& runtime, const std::vector<Value>& values, bool always_copy = false);

// ---- binders --------------------------------------------------------------------------------------
void BindErrors(py::module_& m);
void BindDevices(py::module_& m);
void BindOptions(py::module_& m);
void BindValue(py::module_& m);
void BindDlpack(py::module_& m);
void BindSession(py::module_& m);
void BindIoBinding(py::module_& m);
void BindStreams(py::module_& m);
void BindTilePipeline(py::module_& m);
void BindGenerationLoop(py::module_& m);

}  // namespace tessera::python
