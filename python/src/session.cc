// `_Session`: the native session behind tessera.InferenceSession (python/tessera/session.py), which
// normalizes providers and options the onnxruntime way before calling it.
#include "bindings.h"

namespace tessera::python {

namespace {

using ProviderSpec = std::tuple<std::string, ProviderOptions, int>;  // EP type, options, device index

std::unique_ptr<Session> CreateSession(Runtime& runtime, const py::object& model, SessionOptions options) {
  if (py::isinstance<py::bytes>(model)) {
    const std::string bytes = model.cast<std::string>();
    py::gil_scoped_release release;
    return std::make_unique<Session>(runtime.env(), bytes.data(), bytes.size(), options);
  }
  const std::string path = py::str(py::module_::import("os").attr("fspath")(model)).cast<std::string>();
  py::gil_scoped_release release;
  return std::make_unique<Session>(runtime.env(), std::filesystem::path(path), options);
}

// `config`: entries set on this session's copy of the options (the caller's SessionOptions stay as they are).
std::shared_ptr<PySession> MakeSession(const py::object& model, const PySessionOptions& py_options,
                                       const std::vector<ProviderSpec>& providers,
                                       const std::map<std::string, std::string>& config) {
  SessionOptions options = py_options.options;
  for (const auto& [key, value] : config) options.config.insert_or_assign(key, value);
  for (const auto& [name, provider_options, device_index] : providers)
    options.providers.push_back({name, provider_options, device_index});
  auto fallback = options.config.find("session.disable_cpu_ep_fallback");
  if (fallback != options.config.end() && fallback->second == "1") options.disable_cpu_fallback = true;
  auto session = std::make_shared<PySession>();
  session->runtime = GetRuntime();
  session->session = CreateSession(*session->runtime, model, std::move(options));
  return session;
}

py::object DimObject(const Dim& dim) {
  if (dim.is_concrete()) return py::int_(dim.value);
  if (!dim.symbol.empty()) return py::str(dim.symbol);
  return py::none();
}

std::string TypeString(const ValueInfo& info) {
  const std::string tensor = std::string("tensor(") + DataTypeName(info.type) + ")";
  switch (info.kind) {
    case ValueInfo::Kind::kTensor: return tensor;
    case ValueInfo::Kind::kSequence: return "seq(" + tensor + ")";
    case ValueInfo::Kind::kOptional: return "optional(" + tensor + ")";
    case ValueInfo::Kind::kUnknown: break;
  }
  return "unknown";
}

// (name, shape, type) triples for tessera.NodeArg; an unknown rank gives an empty shape, as onnxruntime.
py::list NodeArgs(const std::vector<ValueInfo>& infos) {
  py::list out;
  for (const ValueInfo& info : infos) {
    py::list shape;
    if (info.shape)
      for (const Dim& dim : *info.shape) shape.append(DimObject(dim));
    out.append(py::make_tuple(info.name, shape, TypeString(info)));
  }
  return out;
}

py::dict MetadataDict(const ModelMetadata& md) {
  py::dict d;
  d["producer_name"] = md.producer_name;
  d["producer_version"] = md.producer_version;
  d["domain"] = md.domain;
  d["description"] = md.description;
  d["graph_name"] = md.graph_name;
  d["version"] = md.version;
  d["custom_metadata_map"] = md.custom;
  return d;
}

py::dict Metadata(const PySession& s) { return MetadataDict(s.session->metadata()); }

// Feeds as Values; `keep` receives the Python objects their memory borrows from. A list or tuple fed to a
// sequence input is a sequence of its elements (each an array), as onnxruntime takes it; to any other input, an
// array. None fed to an optional input is the absent value.
Session::NamedValues CollectFeeds(const Session& session, const py::dict& feeds, std::vector<py::object>& keep) {
  Session::NamedValues named;
  for (const auto& [name, feed] : feeds) {
    const std::string input = name.cast<std::string>();
    bool sequence = false, optional = false;
    for (const ValueInfo& info : session.inputs())
      if (info.name == input) {
        sequence = info.kind == ValueInfo::Kind::kSequence;
        optional = info.kind == ValueInfo::Kind::kOptional;
      }
    if (feed.is_none()) {  // an absent optional, as onnxruntime takes None
      if (!optional)
        Fail(ErrorCode::kInvalidArgument, "input '", input, "' is not optional: it cannot be fed None");
      named.push_back({input, Value()});
      continue;
    }
    if (sequence && (py::isinstance<py::list>(feed) || py::isinstance<py::tuple>(feed))) {
      TensorSequence elements;
      for (const py::handle& element : feed) {
        py::object keepalive;
        elements.push_back(HostTensorFromArray(element, keepalive));
        keep.push_back(std::move(keepalive));
      }
      named.push_back({input, Value(std::move(elements))});
      continue;
    }
    py::object keepalive;
    named.push_back({input, ValueFromFeed(feed, keepalive)});
    keep.push_back(std::move(keepalive));
  }
  return named;
}

std::vector<Value> RunFeeds(PySession& s, const std::vector<std::string>& output_names, const py::dict& feeds,
                            PyRunOptions* run_options, std::vector<py::object>& keep) {
  const Session::NamedValues named = CollectFeeds(*s.session, feeds, keep);
  RunOptions defaults;
  const RunOptions& options = run_options ? run_options->options : defaults;
  py::gil_scoped_release release;
  return s.session->Run(named, output_names, options);
}

py::list Run(PySession& s, const std::vector<std::string>& output_names, const py::dict& feeds,
             PyRunOptions* run_options) {
  std::vector<py::object> keep;
  return ArraysFromValues(*s.runtime, RunFeeds(s, output_names, feeds, run_options, keep));
}

py::list RunWithOrtValues(PySession& s, const std::vector<std::string>& output_names, const py::dict& feeds,
                          PyRunOptions* run_options) {
  std::vector<py::object> keep;
  std::vector<Value> results = RunFeeds(s, output_names, feeds, run_options, keep);
  py::list inputs;  // outputs that alias an input keep the inputs' memory alive
  for (const py::object& k : keep) inputs.append(k);
  py::list out;
  for (Value& v : results) out.append(WrapOrtValue(std::move(v), inputs));
  return out;
}

}  // namespace

py::list ArraysFromValues(Runtime& runtime, const std::vector<Value>& values, bool always_copy) {
  auto convert = [&](const Tensor& t) -> py::object {
    const bool on_host = t.memory_info().IsHostReadable();
    if (on_host && (always_copy || t.is_borrowed())) return ArrayViewOfHostTensor(t.CloneOnHost());
    return ArrayFromTensor(runtime, t);
  };
  py::list out;
  for (const Value& v : values) {
    if (v.is_none()) {
      out.append(py::none());
    } else if (v.is_tensor()) {
      out.append(convert(v.tensor()));
    } else {
      py::list items;
      for (const Tensor& t : v.sequence()) items.append(convert(t));
      out.append(items);
    }
  }
  return out;
}

void BindSession(py::module_& m) {
  m.def(
      "_read_model_metadata",
      [](const py::object& model) {
        if (py::isinstance<py::bytes>(model)) {
          const std::string bytes = model.cast<std::string>();
          return MetadataDict(ReadModelMetadata(bytes.data(), bytes.size()));
        }
        return MetadataDict(ReadModelMetadata(std::filesystem::path(py::str(model).cast<std::string>())));
      },
      py::arg("model"), "The model's metadata (a path or the model's bytes) without creating a session.");
  m.def("_graph_optimizer_pass_names", &GraphOptimizerPassNames,
        "The graph optimizer's pass names, in order (what session.disabled_optimizers may name).");
  py::class_<PySession, std::shared_ptr<PySession>>(m, "_Session")
      .def(py::init(&MakeSession), py::arg("model"), py::arg("options"), py::arg("providers"),
           py::arg("config") = std::map<std::string, std::string>{})
      .def("inputs", [](const PySession& s) { return NodeArgs(s.session->inputs()); })
      .def("outputs", [](const PySession& s) { return NodeArgs(s.session->outputs()); })
      .def("providers", [](const PySession& s) { return s.session->providers(); })
      .def("input_memory_info",
           [](const PySession& s, const std::string& name) { return s.session->InputMemoryInfo(name); })
      .def("output_memory_info",
           [](const PySession& s, const std::string& name) { return s.session->OutputMemoryInfo(name); })
      .def("input_ep_device",
           [](const PySession& s, const std::string& name) -> py::object {
             const EpDevice* device = s.session->InputEpDevice(name);
             if (device == nullptr) return py::none();
             return py::make_tuple(device->ep_name, device->device != nullptr ? device->device->ordinal : 0);
           })
      .def("graph_status", [](const PySession& s) { return s.session->GraphStatus(); })
      .def("automatic_graph_counts", [](const PySession& s) {
        return py::make_tuple(s.session->AutomaticGraphCaptures(), s.session->AutomaticGraphReplays());
      })
      .def("metadata", &Metadata)
      .def("run", &Run, py::arg("output_names"), py::arg("feeds"), py::arg("run_options") = nullptr)
      // onnxruntime's native order: feeds first (InferenceSession.run_with_ort_values takes output names first).
      .def(
          "run_with_ort_values",
          [](PySession& s, const py::dict& feeds, const std::vector<std::string>& output_names,
             PyRunOptions* run_options) { return RunWithOrtValues(s, output_names, feeds, run_options); },
          py::arg("feeds"), py::arg("output_names"), py::arg("run_options") = nullptr)
      .def("input_device_name", [](const PySession& s, const std::string& name) {
        return DeviceNameOf(*s.runtime, s.session->InputMemoryInfo(name));
      })
      .def("partition", [](const PySession& s) {
        py::list out;
        for (const PartitionEntry& e : s.session->Partition())
          out.append(py::make_tuple(e.node_name, e.op_type, e.ep, e.is_copy, e.copy_from, e.copy_to, e.domain));
        return out;
      })
      .def("release_memory", [](PySession& s) {
        py::gil_scoped_release release;
        return s.session->ReleaseMemory();
      })
      .def("synchronize", [](const PySession& s) {
        py::gil_scoped_release release;
        s.session->Synchronize();
      })
      .def("end_profiling", [](const PySession& s) {
        py::gil_scoped_release release;
        return s.session->EndProfiling();
      })
      .def("profiling_start_time_ns", [](const PySession& s) { return s.session->ProfilingStartTimeNs(); });
}

}  // namespace tessera::python
