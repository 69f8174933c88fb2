// `_IOBinding`: the native IO binding behind tessera.IOBinding. Inputs and outputs bound here stay
// bound across runs; the Python objects whose memory they borrow are kept alive until unbound.
#include "bindings.h"

namespace tessera::python {

namespace {

struct PyIoBinding {
  std::shared_ptr<PySession> session;  // first: outlives the binding's values
  IoBinding binding;
  std::map<std::string, py::object> input_keep;
  std::map<std::string, py::object> output_keep;

  explicit PyIoBinding(std::shared_ptr<PySession> s) : session(std::move(s)), binding(*session->session) {}

  Runtime& runtime() const { return *session->runtime; }
  // What results may borrow from: every bound input and preallocated output.
  py::list Borrowed() const {
    py::list all;
    for (const auto& [name, obj] : input_keep) all.append(obj);
    for (const auto& [name, obj] : output_keep) all.append(obj);
    return all;
  }
};

// Caller memory at `address` as a tensor (ORT's bind_input / bind_output with buffer_ptr).
Tensor WrapAddress(Runtime& runtime, const std::string& device_type, int device_id, const py::handle& element_type,
                   const py::handle& shape, uintptr_t address) {
  const MemoryInfo where = MemoryInfoForDevice(runtime, device_type, device_id);
  const DataType type = DataTypeFromObject(element_type);
  const Shape dims = ShapeFromSequence(shape);
  const size_t bytes = static_cast<size_t>(dims.NumElements()) * SizeOf(type);
  return Tensor::Wrap(type, dims, reinterpret_cast<void*>(address), bytes, where);
}

void BindCpuInput(PyIoBinding& b, const std::string& name, const py::handle& array) {
  py::object keepalive;
  Tensor tensor = HostTensorFromArray(array, keepalive);
  b.binding.BindInput(name, Value(tensor));
  b.input_keep[name] = keepalive;
}

void BindInput(PyIoBinding& b, const std::string& name, const std::string& device_type, int device_id,
               const py::handle& element_type, const py::handle& shape, uintptr_t buffer_ptr) {
  b.binding.BindInput(name, Value(WrapAddress(b.runtime(), device_type, device_id, element_type, shape, buffer_ptr)));
  b.input_keep.erase(name);
}

void BindOrtValueInput(PyIoBinding& b, const std::string& name, const py::object& ortvalue) {
  b.binding.BindInput(name, ortvalue.cast<const PyOrtValue&>().value);
  b.input_keep[name] = ortvalue;
}

void BindOutput(PyIoBinding& b, const std::string& name, const std::string& device_type, int device_id,
                const py::object& element_type, const py::object& shape, const py::object& buffer_ptr) {
  if (buffer_ptr.is_none()) {
    b.binding.BindOutput(name, MemoryInfoForDevice(b.runtime(), device_type, device_id));
  } else {
    if (element_type.is_none() || shape.is_none())
      Fail(ErrorCode::kInvalidArgument, "bind_output('", name, "'): a buffer_ptr needs element_type and shape");
    const uintptr_t address = buffer_ptr.cast<uintptr_t>();
    b.binding.BindOutput(name, Value(WrapAddress(b.runtime(), device_type, device_id, element_type, shape, address)));
  }
  b.output_keep.erase(name);
}

void BindOrtValueOutput(PyIoBinding& b, const std::string& name, const py::object& ortvalue) {
  b.binding.BindOutput(name, ortvalue.cast<const PyOrtValue&>().value);
  b.output_keep[name] = ortvalue;
}

py::list GetOutputs(const PyIoBinding& b) {
  const py::list borrowed = b.Borrowed();
  py::list out;
  for (const Value& v : b.binding.BoundOutputs()) out.append(WrapOrtValue(v, borrowed));
  return out;
}

void RunBinding(PyIoBinding& b, PyRunOptions* run_options) {
  RunOptions defaults;
  const RunOptions& options = run_options ? run_options->options : defaults;
  py::gil_scoped_release release;
  b.session->session->Run(b.binding, options);
}

}  // namespace

void BindIoBinding(py::module_& m) {
  py::class_<PyIoBinding>(m, "_IOBinding")
      .def(py::init<std::shared_ptr<PySession>>(), py::arg("session"))
      .def("bind_cpu_input", &BindCpuInput, py::arg("name"), py::arg("arr_on_cpu"))
      .def("bind_input", &BindInput, py::arg("name"), py::arg("device_type"), py::arg("device_id"),
           py::arg("element_type"), py::arg("shape"), py::arg("buffer_ptr"))
      .def("bind_ortvalue_input", &BindOrtValueInput, py::arg("name"), py::arg("ortvalue"))
      .def("bind_output", &BindOutput, py::arg("name"), py::arg("device_type") = "cpu", py::arg("device_id") = 0,
           py::arg("element_type") = py::none(), py::arg("shape") = py::none(), py::arg("buffer_ptr") = py::none())
      .def("bind_ortvalue_output", &BindOrtValueOutput, py::arg("name"), py::arg("ortvalue"))
      .def("get_outputs", &GetOutputs)
      .def("output_names", [](const PyIoBinding& b) { return b.binding.BoundOutputNames(); })
      .def("copy_outputs_to_cpu", [](const PyIoBinding& b) {
        return ArraysFromValues(b.runtime(), b.binding.BoundOutputs(), /*always_copy=*/true);
      })
      .def("clear_binding_inputs", [](PyIoBinding& b) {
        b.binding.ClearBoundInputs();
        b.input_keep.clear();
      })
      .def("clear_binding_outputs", [](PyIoBinding& b) {
        b.binding.ClearBoundOutputs();
        b.output_keep.clear();
      })
      .def("synchronize_inputs", [](PyIoBinding& b) {
        py::gil_scoped_release release;
        b.binding.SynchronizeInputs();
      })
      .def("synchronize_outputs", [](PyIoBinding& b) {
        py::gil_scoped_release release;
        b.binding.SynchronizeOutputs();
      })
      .def("run", &RunBinding, py::arg("run_options") = nullptr);
}

}  // namespace tessera::python
