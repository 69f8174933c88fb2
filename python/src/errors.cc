// tessera::Error -> Python exceptions. Every class derives from tessera.TesseraError (a RuntimeError)
// through Fail, as in onnxruntime, so `except ort.capi...Fail` style handlers keep working:
//
//   TesseraError
//     Fail
//       InvalidArgument      ErrorCode::kInvalidArgument (also a ValueError)
//       InvalidModel         kInvalidModel (aliases InvalidGraph, InvalidProtobuf)
//       NotImplemented       kNotImplemented
//       OutOfMemory          kOutOfMemory
//       RuntimeException     kRuntime
//         Terminated         kTerminated
//       NoSuchFile           kIo
#include "bindings.h"

namespace tessera::python {

namespace {

struct ErrorClasses {
  PyObject* invalid_argument = nullptr;
  PyObject* invalid_model = nullptr;
  PyObject* not_implemented = nullptr;
  PyObject* out_of_memory = nullptr;
  PyObject* runtime = nullptr;
  PyObject* terminated = nullptr;
  PyObject* io = nullptr;
};

ErrorClasses& Classes() {
  static ErrorClasses classes;
  return classes;
}

PyObject* ClassFor(ErrorCode code) {
  const ErrorClasses& c = Classes();
  switch (code) {
    case ErrorCode::kInvalidArgument: return c.invalid_argument;
    case ErrorCode::kInvalidModel: return c.invalid_model;
    case ErrorCode::kNotImplemented: return c.not_implemented;
    case ErrorCode::kOutOfMemory: return c.out_of_memory;
    case ErrorCode::kRuntime: return c.runtime;
    case ErrorCode::kTerminated: return c.terminated;
    case ErrorCode::kIo: return c.io;
  }
  return c.runtime;
}

PyObject* NewClass(py::module_& m, const char* name, PyObject* base, const char* doc) {
  const std::string qualified = std::string("tessera.") + name;
  PyObject* cls = PyErr_NewExceptionWithDoc(qualified.c_str(), doc, base, nullptr);
  if (cls == nullptr) throw py::error_already_set();
  m.add_object(name, py::handle(cls));  // adds a reference; ours (never released) serves ClassFor
  return cls;
}

}  // namespace

void BindErrors(py::module_& m) {
  PyObject* root = NewClass(m, "TesseraError", PyExc_RuntimeError, "Base class of every Tessera error.");
  PyObject* fail = NewClass(m, "Fail", root, "A Tessera call failed (onnxruntime's generic error class).");
  ErrorClasses& c = Classes();
  const py::tuple argument_bases = py::make_tuple(py::handle(fail), py::handle(PyExc_ValueError));
  c.invalid_argument = NewClass(m, "InvalidArgument", argument_bases.ptr(), "A caller-supplied value is wrong.");
  c.invalid_model = NewClass(m, "InvalidModel", fail, "The model file or graph is malformed.");
  m.add_object("InvalidGraph", py::handle(c.invalid_model));
  m.add_object("InvalidProtobuf", py::handle(c.invalid_model));
  c.not_implemented = NewClass(m, "NotImplemented", fail, "No kernel or execution provider supports the request.");
  c.out_of_memory = NewClass(m, "OutOfMemory", fail, "An allocator could not satisfy a request.");
  c.runtime = NewClass(m, "RuntimeException", fail, "A kernel or device failed while running.");
  c.terminated = NewClass(m, "Terminated", c.runtime, "A run was cancelled through RunOptions.terminate.");
  c.io = NewClass(m, "NoSuchFile", fail, "A file could not be read or a library could not be loaded.");
  py::register_exception_translator([](std::exception_ptr error) {
    try {
      if (error) std::rethrow_exception(error);
    } catch (const Error& e) {
      PyErr_SetString(ClassFor(e.code()), e.what());
    }
  });
}

}  // namespace tessera::python
