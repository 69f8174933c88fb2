// tessera.OrtValue: a tensor in any memory space (host, a device, host-accessible memory), created from
// numpy without copies on the host, copied to a device otherwise.
#include <sstream>
#include <utility>

#include "bindings.h"

namespace tessera::python {

namespace {

std::string TypeString(const Value& value) {
  if (value.is_none()) return "none";
  if (value.is_tensor()) return std::string("tensor(") + DataTypeName(value.tensor().type()) + ")";
  const TensorSequence& seq = value.sequence();
  return std::string("seq(tensor(") + (seq.empty() ? "undefined" : DataTypeName(seq[0].type())) + "))";
}

Tensor AllocateOn(Runtime& runtime, DataType type, const Shape& shape, const MemoryInfo& where) {
  if (where == MemoryInfo::Host()) return Tensor::Allocate(type, shape);
  if (type == DataType::kString) Fail(ErrorCode::kInvalidArgument, "string tensors can only live in host memory");
  return Tensor::Allocate(type, shape, runtime.AllocatorFor(where));
}

// A device given as its name ("cuda", "testing", "cuda_pinned", ...) with `device_id`, or as an object with
// device_name() and device_id() (capi's OrtDevice, as onnxruntime's C-level OrtValue takes it).
MemoryInfo DeviceArgument(Runtime& runtime, const py::handle& device, int device_id) {
  if (py::isinstance<py::str>(device)) return MemoryInfoForDevice(runtime, device.cast<std::string>(), device_id);
  if (py::hasattr(device, "device_name") && py::hasattr(device, "device_id"))
    return MemoryInfoForDevice(runtime, device.attr("device_name")().cast<std::string>(),
                               device.attr("device_id")().cast<int>());
  Fail(ErrorCode::kInvalidArgument, "a device must be a name such as \"cuda\" or an OrtDevice, got ",
       py::str(py::type::of(device)).cast<std::string>());
}

py::object FromNumpy(const py::handle& array, const py::handle& device_type, int device_id) {
  std::shared_ptr<Runtime> runtime = GetRuntime();
  py::object keepalive;
  Tensor host = HostTensorFromArray(array, keepalive);
  const MemoryInfo where = DeviceArgument(*runtime, device_type, device_id);
  if (where == MemoryInfo::Host()) {
    if (!host.is_borrowed()) keepalive = py::object();  // strings: the tensor owns its copy
    return py::cast(PyOrtValue{runtime, Value(host), keepalive});
  }
  Tensor placed = AllocateOn(*runtime, host.type(), host.shape(), where);
  {
    py::gil_scoped_release release;
    runtime->Copy(host, placed);
  }
  return py::cast(PyOrtValue{runtime, Value(placed), py::object()});
}

// `memory_info` (an EpDevice's memory_info(...)), when given, decides where; the device arguments are then ignored.
// The memory an OrtValue's memory_info argument names: an EpDevice's MemoryInfo, or an OrtMemoryInfo (memory.py,
// onnxruntime's description: device name, id, memory type).
MemoryInfo MemoryInfoArgument(Runtime& runtime, const py::handle& info) {
  if (py::isinstance<MemoryInfo>(info)) return info.cast<MemoryInfo>();
  if (py::hasattr(info, "_device") && py::hasattr(info, "device_id")) {
    const auto [name, host_accessible] = info.attr("_device")().cast<std::pair<std::string, bool>>();
    return MemoryInfoForDevice(runtime, host_accessible && name != "cpu" ? name + "_pinned" : name,
                               info.attr("device_id").cast<int>());
  }
  Fail(ErrorCode::kInvalidArgument, "memory_info must be a MemoryInfo (EpDevice.memory_info(...)) or an ",
       "OrtMemoryInfo, got ", py::str(py::type::of(info)).cast<std::string>());
}

py::object FromShapeAndType(const py::handle& shape, const py::handle& element_type, const py::handle& device_type,
                            int device_id, const py::handle& vendor_id, const py::handle& memory_info) {
  (void)vendor_id;  // onnxruntime's: the device name and id already name the memory here
  std::shared_ptr<Runtime> runtime = GetRuntime();
  const MemoryInfo where = !memory_info.is_none() ? MemoryInfoArgument(*runtime, memory_info)
                                                  : DeviceArgument(*runtime, device_type, device_id);
  Tensor tensor = AllocateOn(*runtime, DataTypeFromObject(element_type), ShapeFromSequence(shape), where);
  return py::cast(PyOrtValue{runtime, Value(tensor), py::object()});
}

void UpdateInplace(PyOrtValue& self, const py::handle& array) {
  py::object keepalive;
  const Tensor source = HostTensorFromArray(array, keepalive);
  Tensor target = self.tensor();
  if (source.type() != target.type() || source.NumElements() != target.NumElements())
    Fail(ErrorCode::kInvalidArgument, "update_inplace: the array (", source.Describe(), ") must match the value (",
         target.Describe(), ") in element type and element count");
  py::gil_scoped_release release;
  self.runtime->Copy(source, target);
}

py::array ToNumpy(const py::object& self_object) {
  PyOrtValue& self = self_object.cast<PyOrtValue&>();
  const Tensor& tensor = self.tensor();
  if (tensor.memory_info().IsHostReadable()) return ArrayViewOfHostTensor(tensor, self_object);
  return ArrayFromTensor(*self.runtime, tensor);
}

// onnxruntime's OrtValue.ortvalue_from_numpy_with_onnx_type: the array's bytes as elements of ONNX type
// `onnx_type` (for element types numpy lacks: bfloat16 from uint16 arrays, float8 from uint8); element sizes must
// match. Host memory, shared with the array.
py::object FromNumpyWithOnnxType(const py::handle& array, int onnx_type) {
  py::object keepalive;
  Tensor host = HostTensorFromArray(array, keepalive);
  if (onnx_type <= 0 || !IsKnownDataType(onnx_type))
    Fail(ErrorCode::kInvalidArgument, "ortvalue_from_numpy_with_onnx_type: ", onnx_type, " is not an ONNX element type");
  const auto type = static_cast<DataType>(onnx_type);
  if (type == DataType::kString || host.type() == DataType::kString || SizeOf(type) != SizeOf(host.type()))
    Fail(ErrorCode::kInvalidArgument, "ortvalue_from_numpy_with_onnx_type: the array's elements (",
         DataTypeName(host.type()), ") and ", DataTypeName(type), " differ in size");
  auto owner = std::make_shared<Tensor>(host);  // keeps a converted copy alive; a borrowed array via keepalive
  Tensor typed = Tensor::Share(type, host.shape(), owner, owner->raw_data(), host.SizeInBytes(), MemoryInfo::Host());
  return py::cast(PyOrtValue{GetRuntime(), Value(typed), keepalive});
}

// numpy's __array__ protocol: np.asarray(value) is a view of host memory (a copy of device memory); a `dtype`
// converts.
py::object AsArray(const py::object& self_object, const py::object& dtype, const py::object& copy) {
  py::object array = ToNumpy(self_object);
  if (!dtype.is_none()) {
    const py::object wanted = py::module_::import("numpy").attr("dtype")(dtype);
    const py::object have = array.attr("dtype");
    if (!have.equal(wanted)) return array.attr("astype")(wanted);
  }
  if (!copy.is_none() && copy.cast<bool>()) return array.attr("copy")();
  return array;
}

std::string Repr(const PyOrtValue& self) {
  std::ostringstream os;
  os << "OrtValue(";
  if (self.value.is_tensor())
    os << self.value.tensor().Describe();
  else
    os << TypeString(self.value);
  os << ")";
  return os.str();
}

}  // namespace

const Tensor& PyOrtValue::tensor() const {
  if (!value.is_tensor()) Fail(ErrorCode::kInvalidArgument, "the OrtValue holds ", TypeString(value), ", not a tensor");
  return value.tensor();
}

Value ValueFromFeed(const py::handle& feed, py::object& keepalive) {
  if (py::isinstance<PyOrtValue>(feed)) {
    keepalive = py::reinterpret_borrow<py::object>(feed);
    return feed.cast<const PyOrtValue&>().value;
  }
  return Value(HostTensorFromArray(feed, keepalive));
}

py::object WrapOrtValue(Value value, py::object keepalive) {
  return py::cast(PyOrtValue{GetRuntime(), std::move(value), std::move(keepalive)});
}

void BindValue(py::module_& m) {
  py::class_<PyOrtValue>(m, "OrtValue", "A tensor in host or device memory.")
      .def_static("ortvalue_from_numpy", &FromNumpy, py::arg("numpy_obj"), py::arg("device_type") = "cpu",
                  py::arg("device_id") = 0,
                  "A value holding the array: shares its memory on the CPU (when C-contiguous and aligned), "
                  "copies it to other devices.")
      .def_static("ortvalue_from_shape_and_type", &FromShapeAndType, py::arg("shape"), py::arg("element_type"),
                  py::arg("device_type") = "cpu", py::arg("device_id") = 0, py::arg("vendor_id") = py::none(),
                  py::arg("memory_info") = py::none(),
                  "An uninitialized tensor allocated on the device, or in `memory_info` (an EpDevice's "
                  "memory_info(OrtDeviceMemoryType...)) when given; element_type: a numpy type or an ONNX element "
                  "type number.")
      .def("update_inplace", &UpdateInplace, py::arg("np_arr"),
           "Copies the array into this value's existing buffer (any device); type and size must match.")
      .def("numpy", &ToNumpy, "A numpy array: a view of host memory, a copy of device memory.")
      .def("data_ptr", [](const PyOrtValue& v) { return reinterpret_cast<uintptr_t>(v.tensor().raw_data()); })
      .def("device_name", [](const PyOrtValue& v) { return DeviceNameOf(*v.runtime, v.tensor().memory_info()); })
      .def("memory_info", [](const PyOrtValue& v) { return v.tensor().memory_info(); })
      .def("shape", [](const PyOrtValue& v) { return v.tensor().shape().dims(); })
      .def("data_type", [](const PyOrtValue& v) { return TypeString(v.value); })
      .def("element_type", [](const PyOrtValue& v) { return static_cast<int>(v.tensor().type()); },
           "The ONNX element type (TensorProto.DataType: 1 float, 10 float16, 7 int64, ...), as onnxruntime's.")
      .def("numpy_type", [](const PyOrtValue& v) { return DtypeFromDataType(v.tensor().type()).attr("type"); },
           "The numpy scalar type of the elements (numpy.float32, ...).")
      .def("tensor_size_in_bytes", [](const PyOrtValue& v) { return v.tensor().SizeInBytes(); })
      .def_static("ortvalue_from_numpy_with_onnx_type", &FromNumpyWithOnnxType, py::arg("data"), py::arg("onnx_element_type"))
      .def("__array__", &AsArray, py::arg("dtype") = py::none(), py::kw_only(), py::arg("copy") = py::none())
      // onnxruntime's Python OrtValue wraps a native one (`_ortvalue`, `_get_c_value()`); Tessera's is both.
      .def_property_readonly("_ortvalue", [](const py::object& self) { return self; })
      .def("_get_c_value", [](const py::object& self) { return self; })
      .def("is_tensor", [](const PyOrtValue& v) { return v.value.is_tensor(); })
      .def("is_tensor_sequence", [](const PyOrtValue& v) { return v.value.is_sequence(); })
      .def("has_value", [](const PyOrtValue& v) { return !v.value.is_none(); })
      .def("__repr__", &Repr);
}

}  // namespace tessera::python
