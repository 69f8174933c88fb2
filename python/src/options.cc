// SessionOptions, RunOptions and their enums, with onnxruntime's names.
#include "bindings.h"

#include <algorithm>
#include <string>

namespace tessera::python {

namespace {

constexpr const char* kDisableSynchronizeKey = "disable_synchronize_execution_providers";

LogLevel LogLevelFromSeverity(int severity) {
  if (severity < 0 || severity > 4)
    Fail(ErrorCode::kInvalidArgument, "log severity level must be 0 (verbose) .. 4 (fatal), got ", severity);
  return static_cast<LogLevel>(severity);
}

std::string ConfigEntry(const std::map<std::string, std::string>& config, const std::string& key, const char* what) {
  auto it = config.find(key);
  if (it == config.end())  // onnxruntime's wording, which scripts match
    Fail(ErrorCode::kInvalidArgument, what, " does not have configuration with key: ", key);
  return it->second;
}

void BindEnums(py::module_& m) {
  py::enum_<OptimizationLevel>(m, "GraphOptimizationLevel")
      .value("ORT_DISABLE_ALL", OptimizationLevel::kNone)
      .value("ORT_ENABLE_BASIC", OptimizationLevel::kBasic)
      .value("ORT_ENABLE_EXTENDED", OptimizationLevel::kExtended)
      .value("ORT_ENABLE_ALL", OptimizationLevel::kAll);
  py::enum_<ExecutionMode>(m, "ExecutionMode")
      .value("ORT_SEQUENTIAL", ExecutionMode::kSequential)
      .value("ORT_PARALLEL", ExecutionMode::kParallel);
  py::enum_<EpSelectionPolicy>(m, "OrtExecutionProviderDevicePolicy")
      .value("DEFAULT", EpSelectionPolicy::kDefault)
      .value("PREFER_CPU", EpSelectionPolicy::kPreferCpu)
      .value("PREFER_NPU", EpSelectionPolicy::kPreferNpu)
      .value("PREFER_GPU", EpSelectionPolicy::kPreferGpu)
      .value("MAX_PERFORMANCE", EpSelectionPolicy::kMaxPerformance)
      .value("MAX_EFFICIENCY", EpSelectionPolicy::kMaxEfficiency);
}

// SessionOptions::optimized_model_initializer_location from a Python callable fn(name, OrtValue,
// OrtExternalInitializerInfo | None) -> OrtExternalInitializerInfo | None. As with the selection delegate, the
// callable is released under the GIL; what it raises becomes an error naming it.
std::function<std::optional<ExternalInitializerLocation>(const std::string&, const Tensor&,
                                                         const ExternalInitializerLocation*)>
PythonInitializerLocation(py::object fn) {
  std::shared_ptr<py::object> callable(new py::object(std::move(fn)), [](py::object* o) {
    py::gil_scoped_acquire gil;
    delete o;
  });
  return [callable](const std::string& name, const Tensor& value, const ExternalInitializerLocation* original)
             -> std::optional<ExternalInitializerLocation> {
    py::gil_scoped_acquire gil;
    try {
      const py::object result = (*callable)(name, WrapOrtValue(Value(value)),
                                            original ? py::cast(*original) : py::object(py::none()));
      if (result.is_none()) return std::nullopt;
      if (!py::isinstance<ExternalInitializerLocation>(result))
        Fail(ErrorCode::kInvalidArgument, "get_initializer_location_func must return an OrtExternalInitializerInfo or ",
             "None, got ", py::str(py::type::of(result)).cast<std::string>(), " for initializer '", name, "'");
      return result.cast<ExternalInitializerLocation>();
    } catch (py::error_already_set& e) {
      Fail(ErrorCode::kRuntime, "get_initializer_location_func failed for initializer '", name, "': ", e.what());
    }
  };
}

void BindSessionOptions(py::module_& m) {
  py::class_<ExternalInitializerLocation>(m, "OrtExternalInitializerInfo",
                                          "Where an initializer's data lies in an external file (the compile API's "
                                          "get_initializer_location_func).")
      .def(py::init([](const py::object& path, int64_t offset, int64_t size) {
             if (offset < 0 || size < 0)
               Fail(ErrorCode::kInvalidArgument, "OrtExternalInitializerInfo: offset and size must be >= 0, got ",
                    offset, " and ", size);
             const std::string file = py::str(py::module_::import("os").attr("fspath")(path)).cast<std::string>();
             return ExternalInitializerLocation{file, offset, size};
           }),
           py::arg("filepath"), py::arg("file_offset"), py::arg("byte_size"))
      .def_property_readonly("filepath", [](const ExternalInitializerLocation& l) { return l.path; },
                             "The file holding the data (Tessera gives the original location as an absolute path).")
      .def_property_readonly("file_offset", [](const ExternalInitializerLocation& l) { return l.offset; })
      .def_property_readonly("byte_size", [](const ExternalInitializerLocation& l) { return l.size; })
      .def("__repr__", [](const ExternalInitializerLocation& l) {
        return "OrtExternalInitializerInfo('" + l.path + "', " + std::to_string(l.offset) + ", " +
               std::to_string(l.size) + ")";
      });

  using S = PySessionOptions;
  py::class_<S>(m, "SessionOptions", "Options for creating an InferenceSession.")
      .def(py::init<>())
      .def("_copy", [](const S& s) { return S(s); }, "An independent copy (tessera.ModelCompiler changes its own).")
      .def_property(
          "intra_op_num_threads", [](const S& s) { return s.options.intra_op_threads; },
          [](S& s, int n) { s.options.intra_op_threads = n; })
      .def_readwrite("inter_op_num_threads", &S::inter_op_threads)
      .def_property(
          "use_per_session_threads", [](const S& s) { return s.options.use_per_session_threads; },
          [](S& s, bool own) { s.options.use_per_session_threads = own; })
      .def_readwrite("execution_mode", &S::execution_mode)
      .def_property(
          "graph_optimization_level", [](const S& s) { return s.options.optimization_level; },
          [](S& s, OptimizationLevel level) { s.options.optimization_level = level; })
      .def_property(
          "log_severity_level", [](const S& s) { return static_cast<int>(s.options.log_level); },
          [](S& s, int level) { s.options.log_level = LogLevelFromSeverity(level); })
      .def_readwrite("log_verbosity_level", &S::log_verbosity_level)
      .def_property(
          "logid", [](const S& s) { return s.options.log_id; }, [](S& s, std::string id) { s.options.log_id = id; })
      .def_property(
          "enable_profiling", [](const S& s) { return s.options.enable_profiling; },
          [](S& s, bool enable) { s.options.enable_profiling = enable; })
      .def_property(
          "profile_file_prefix", [](const S& s) { return s.options.profile_file_prefix; },
          [](S& s, std::string prefix) { s.options.profile_file_prefix = std::move(prefix); })
      // onnxruntime's name: folders besides the model's from which external data may be read, ';'-separated.
      .def_property(
          "whitelisted_data_folders",
          [](const S& s) {
            std::string joined;
            for (const std::string& folder : s.options.external_data_folders)
              joined += (joined.empty() ? "" : ";") + folder;
            return joined;
          },
          [](S& s, const std::string& folders) {
            s.options.external_data_folders.clear();
            size_t start = 0;
            while (start <= folders.size()) {
              const size_t end = std::min(folders.find(';', start), folders.size());
              if (end > start) s.options.external_data_folders.push_back(folders.substr(start, end - start));
              start = end + 1;
            }
          })
      .def_property(
          "stream_sets", [](const S& s) { return s.options.stream_sets; },
          [](S& s, int n) { s.options.stream_sets = n; },
          "Sets of device streams for runs from several threads at once (0 = default, 1 = one set).")
      .def_property(
          "stream_cache_bytes", [](const S& s) { return s.options.stream_cache_bytes; },
          [](S& s, int64_t n) { s.options.stream_cache_bytes = n; },
          "Device memory each compute stream keeps for same-stream reuse (-1 = default 64 MiB, 0 = none).")
      .def_property(
          "use_deterministic_compute", [](const S& s) { return s.options.use_deterministic_compute; },
          [](S& s, bool on) { s.options.use_deterministic_compute = on; },
          "Only algorithms whose results are the same bit for bit run after run (the CUDA EP leaves out cuDNN's "
          "nondeterministic convolution engines).")
      .def_readwrite("enable_mem_pattern", &S::enable_mem_pattern)
      .def_readwrite("enable_cpu_mem_arena", &S::enable_cpu_mem_arena)
      .def_property(
          "optimized_model_filepath", [](const S& s) { return s.options.optimized_model_filepath; },
          [](S& s, const py::object& path) { s.options.optimized_model_filepath = py::str(path); })
      .def(
          "add_free_dimension_override_by_name",
          [](S& s, const std::string& name, int64_t value) { s.options.free_dimension_overrides[name] = value; },
          py::arg("dim_name"), py::arg("dim_value"),
          "Gives every graph input dim with this symbolic name a fixed size (see SessionOptions).")
      .def(
          "add_free_dimension_override_by_denotation",
          [](S& s, const std::string& denotation, int64_t value) {
            s.options.free_dimension_overrides_by_denotation[denotation] = value;
          },
          py::arg("dim_denotation"), py::arg("dim_value"),
          "Gives every free graph input dim with this denotation (e.g. \"DATA_BATCH\") a fixed size.")
      .def("add_session_config_entry",
           [](S& s, const std::string& key, const std::string& value) { s.options.config[key] = value; },
           py::arg("config_key"), py::arg("config_value"))
      .def("get_session_config_entry",
           [](const S& s, const std::string& key) { return ConfigEntry(s.options.config, key, "SessionOptions"); },
           py::arg("config_key"))
      .def(
          "add_initializer",
          [](S& s, const std::string& name, const py::object& value) {
            const auto& ort_value = value.cast<const PyOrtValue&>();
            if (!ort_value.value.is_tensor())
              throw py::value_error("add_initializer: '" + name + "' must be a tensor OrtValue");
            s.options.initializers[name] = ort_value.tensor();
            s.initializer_values.push_back(value);
          },
          py::arg("name"), py::arg("value"),
          "Replaces the model's initializer `name` with this OrtValue (host memory, same type and shape), without "
          "a copy: keep its data unchanged while sessions created with these options live.")
      .def(
          "add_external_initializers",
          [](S& s, const std::vector<std::string>& names, const py::list& values) {
            if (names.size() != values.size())
              throw py::value_error("add_external_initializers: " + std::to_string(names.size()) + " names and " +
                                    std::to_string(values.size()) + " values");
            for (size_t i = 0; i < names.size(); ++i) {
              const auto& ort_value = values[i].cast<const PyOrtValue&>();
              if (!ort_value.value.is_tensor())
                throw py::value_error("add_external_initializers: '" + names[i] + "' must be a tensor OrtValue");
              s.options.external_initializers[names[i]] = ort_value.tensor();
              s.initializer_values.push_back(values[i]);
            }
          },
          py::arg("names"), py::arg("values"),
          "Data for initializers the model stores as external data: each OrtValue (host memory, the initializer's "
          "type and shape) is used instead of reading the file, without a copy.")
      .def(
          "add_external_initializers_from_files_in_memory",
          [](S& s, const std::vector<std::string>& file_names, const py::list& buffers, const std::vector<size_t>& lengths) {
            if (file_names.size() != buffers.size() || file_names.size() != lengths.size())
              throw py::value_error("add_external_initializers_from_files_in_memory: " +
                                    std::to_string(file_names.size()) + " file names, " +
                                    std::to_string(buffers.size()) + " buffers and " + std::to_string(lengths.size()) +
                                    " lengths");
            for (size_t i = 0; i < file_names.size(); ++i) {
              const py::buffer_info info = py::buffer(buffers[i]).request();
              const size_t available = static_cast<size_t>(info.size) * static_cast<size_t>(info.itemsize);
              if (lengths[i] > available)
                throw py::value_error("add_external_initializers_from_files_in_memory: '" + file_names[i] + "' has " +
                                      std::to_string(available) + " bytes, not " + std::to_string(lengths[i]));
              s.options.external_initializer_files[file_names[i]] =
                  std::make_shared<const std::string>(static_cast<const char*>(info.ptr), lengths[i]);
            }
          },
          py::arg("file_names"), py::arg("buffers"), py::arg("lengths"),
          "The contents of external data files, by the name the model gives them (copied): initializers stored "
          "in those files are read from here instead of the disk.")
      .def(
          "_set_initializer_location_func",
          [](S& s, py::object fn) {
            if (fn.is_none()) {
              s.options.optimized_model_initializer_location = nullptr;
              return;
            }
            if (!PyCallable_Check(fn.ptr())) throw py::type_error("get_initializer_location_func must be callable");
            s.options.optimized_model_initializer_location = PythonInitializerLocation(std::move(fn));
          },
          py::arg("func"),
          "fn(name, OrtValue, OrtExternalInitializerInfo | None) -> OrtExternalInitializerInfo | None: where each "
          "initializer of optimized_model_filepath goes (tessera.ModelCompiler's get_initializer_location_func).")
      .def("set_provider_selection_policy", [](S& s, EpSelectionPolicy policy) { s.options.policy = policy; },
           py::arg("policy"), "How EP devices are chosen when the session is given no providers.")
      .def(
          "set_provider_selection_policy_delegate",
          [](S& s, py::object fn) {
            if (!PyCallable_Check(fn.ptr())) throw py::type_error("the EP selection delegate must be callable");
            s.options.selection_delegate = PythonSelectionDelegate(std::move(fn));
          },
          py::arg("delegate"),
          "fn(ep_devices, model_metadata, runtime_metadata, max_selections) -> [OrtEpDevice]: chooses the EP devices "
          "of sessions given no providers, in priority order (the CPU EP's devices come last in ep_devices).")
      .def("has_providers",
           [](const S& s) {
             return !s.options.providers.empty() || s.options.policy != EpSelectionPolicy::kDefault ||
                    s.options.selection_delegate != nullptr;
           },
           "Whether providers, a selection policy or a selection delegate were set.")
      .def("add_provider",
           [](S& s, const std::string& name, const ProviderOptions& options) { s.options.AddProvider(name, options); },
           py::arg("provider_name"), py::arg("provider_options") = ProviderOptions{})
      .def("add_provider_for_devices",
           [](S& s, const py::list& ep_devices, const ProviderOptions& options) {
             for (const py::handle d : ep_devices)
               s.options.providers.push_back(
                   {d.attr("ep_name").cast<std::string>(), options, d.attr("index").cast<int>()});
           },
           py::arg("ep_devices"), py::arg("provider_options") = ProviderOptions{},
           "Adds the EP of each EpDevice (from get_ep_devices()) for that device.");
}

void BindRunOptions(py::module_& m) {
  using R = PyRunOptions;
  py::class_<R>(m, "RunOptions", "Options for one run; `terminate` may be set from another thread.")
      .def(py::init<>())
      .def_property(
          "run_tag", [](const R& r) { return r.options.tag; }, [](R& r, std::string tag) { r.options.tag = tag; })
      .def_property(
          "logid", [](const R& r) { return r.options.tag; }, [](R& r, std::string tag) { r.options.tag = tag; },
          "Names the run in logs and profiles (the same as run_tag).")
      .def_property(
          "log_severity_level", [](const R& r) { return static_cast<int>(r.options.log_level); },
          [](R& r, int level) { r.options.log_level = LogLevelFromSeverity(level); })
      .def_readwrite("log_verbosity_level", &R::log_verbosity_level)
      .def_readwrite("only_execute_path_to_fetches", &R::only_execute_path_to_fetches,
                     "Accepted for onnxruntime's code. Tessera runs every node of the session's plan, which gives the "
                     "same outputs as running only the nodes the requested outputs need.")
      .def_property(
          "terminate", [](const R& r) { return r.options.terminate.load(); },
          [](R& r, bool terminate) { r.options.terminate.store(terminate); })
      .def_property(
          "timeout_ms", [](const R& r) { return r.options.timeout_ms; },
          [](R& r, int64_t ms) {
            if (ms < 0) throw py::value_error("timeout_ms must be >= 0 (0: no deadline), got " + std::to_string(ms));
            r.options.timeout_ms = ms;
          },
          "A deadline for each run in milliseconds from its start (0: none); a run past it raises Terminated.")
      .def_property(
          "stream", [](const R& r) { return r.stream; },
          [](R& r, std::shared_ptr<PySyncStream> stream) {
            r.options.stream = stream ? stream->stream.get() : nullptr;
            r.stream = std::move(stream);
          },
          "An OrtSyncStream (or None) to order runs with on the device: a run starts after the work queued on it "
          "before the run, and work queued on it afterwards starts after the run (docs/PIPELINES.md).")
      .def_property_readonly("synchronize_execution_providers", [](const R& r) { return r.options.synchronize; })
      .def("add_run_config_entry",
           [](R& r, const std::string& key, const std::string& value) {
             r.options.config[key] = value;
             if (key == kDisableSynchronizeKey) r.options.synchronize = value != "1";
           },
           py::arg("config_key"), py::arg("config_value"))
      .def("get_run_config_entry",
           [](const R& r, const std::string& key) { return ConfigEntry(r.options.config, key, "RunOptions"); },
           py::arg("config_key"));
}

}  // namespace

void BindOptions(py::module_& m) {
  BindEnums(m);
  BindSessionOptions(m);
  BindRunOptions(m);
}

}  // namespace tessera::python
