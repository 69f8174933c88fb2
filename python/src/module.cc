// The `tessera._tessera` extension module: the process-wide Runtime and the module definition.
#include <dlfcn.h>

#include <filesystem>

#include "bindings.h"
#include "core/logging.h"

namespace tessera::python {

Runtime::Runtime() : env_(std::make_unique<Environment>()) {}

Runtime::~Runtime() {
  // Allocators may hold plugin code: release them before the Environment unloads the libraries.
  allocators_.clear();
  env_.reset();
}

AllocatorPtr Runtime::AllocatorFor(const MemoryInfo& info) {
  if (info.device_type == DeviceType::kCpu && info.memory_type == MemoryType::kDefault) return nullptr;
  std::lock_guard<std::mutex> lock(mutex_);
  if (AllocatorPtr shared = env_->GetSharedAllocator(info)) return shared;
  auto cached = allocators_.find(info);
  if (cached != allocators_.end()) return cached->second;
  for (const EpDevice* device : env_->GetEpDevices()) {
    AllocatorPtr made = device->factory->CreateAllocator(info);
    if (made) return allocators_[info] = made;
  }
  Fail(ErrorCode::kInvalidArgument, "no registered execution provider allocates ", info.ToString());
}

void Runtime::Copy(const Tensor& src, Tensor& dst) { env_->CopyTensors({&src, 1}, {&dst, 1}, nullptr); }

void Runtime::UnregisterEpLibrary(const std::string& registration_name) {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    allocators_.clear();
  }
  env_->UnregisterEpLibrary(registration_name);
}

std::shared_ptr<Runtime> GetRuntime() {
  // Never destroyed: Python may finalize objects in any order at exit, and the plugins the Environment
  // unloads could still be referenced by objects that outlive a static destructor.
  static auto* runtime = new std::shared_ptr<Runtime>(std::make_shared<Runtime>());
  return *runtime;
}

namespace {

// The folder holding libtessera.so (where the build puts EP plugin libraries).
std::string CoreLibraryDir() {
  Dl_info info{};
  if (dladdr(reinterpret_cast<void*>(&ErrorCodeName), &info) == 0 || info.dli_fname == nullptr) return "";
  return std::filesystem::path(info.dli_fname).parent_path().string();
}

void SetDefaultLoggerSeverity(int severity) {
  if (severity < 0 || severity > 4)
    Fail(ErrorCode::kInvalidArgument, "logger severity must be 0 (verbose) .. 4 (fatal), got ", severity);
  SetLogThreshold(static_cast<LogLevel>(severity));
}

}  // namespace

}  // namespace tessera::python

PYBIND11_MODULE(_tessera, m) {
  namespace tp = tessera::python;
  namespace py = pybind11;
  m.doc() = "Tessera ONNX runtime (native part); use the `tessera` package.";
  tp::BindErrors(m);
  tp::GetRuntime();
  tp::BindDevices(m);
  tp::BindOptions(m);
  tp::BindValue(m);
  tp::BindDlpack(m);
  tp::BindSession(m);
  tp::BindIoBinding(m);
  tp::BindStreams(m);
  tp::BindTilePipeline(m);
  tp::BindGenerationLoop(m);
  m.def("_core_library_dir", &tp::CoreLibraryDir, "The folder holding libtessera.so.");
  m.def("set_default_logger_severity", &tp::SetDefaultLoggerSeverity, py::arg("severity"),
        "Sets the process-wide log threshold: 0 verbose, 1 info, 2 warning, 3 error, 4 fatal.");
  m.def(
      "set_global_thread_pool_sizes",
      [](int intra_op_num_threads, int inter_op_num_threads) {
        tp::GetRuntime()->env().SetGlobalThreadPools(intra_op_num_threads, inter_op_num_threads);
      },
      py::arg("intra_op_num_threads") = 0, py::arg("inter_op_num_threads") = 0,
      "onnxruntime.set_global_thread_pool_sizes: global thread pools for the sessions created with "
      "SessionOptions.use_per_session_threads = False (then every session must set it). Call before the first "
      "InferenceSession; 0 = one thread per core.");
  m.attr("__version__") = "0.1.0";
}
