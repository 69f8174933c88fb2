// tessera.TilePipeline's native half (_TilePipeline): tessera::TilePipeline over a _Session, numpy in and out.
#include "bindings.h"

namespace tessera::python {

namespace {

struct PyTilePipeline {
  std::shared_ptr<PySession> session;  // first: outlives the pipeline
  std::vector<py::object> keepalive;   // arrays the constant inputs borrow
  std::unique_ptr<TilePipeline> pipeline;
};

TileBlend ParseBlend(const std::string& name) {
  if (name == "crop") return TileBlend::kCrop;
  if (name == "linear") return TileBlend::kLinear;
  throw py::value_error("blend must be 'crop' or 'linear', got '" + name + "'");
}

TileStages ParseStages(const std::string& name) {
  if (name == "all") return TileStages::kAll;
  if (name == "copies_only") return TileStages::kCopiesOnly;
  if (name == "compute_only") return TileStages::kComputeOnly;
  throw py::value_error("stages must be 'all', 'copies_only' or 'compute_only', got '" + name + "'");
}

std::shared_ptr<PyTilePipeline> MakeTilePipeline(std::shared_ptr<PySession> session, std::pair<int64_t, int64_t> tile,
                                                 int64_t halo, int ring_depth, const std::string& blend,
                                                 const std::string& input_name, const std::string& output_name,
                                                 int host_threads, const py::dict& constant_inputs, bool sequential,
                                                 const std::string& stages, const std::string& trace_file) {
  auto result = std::make_shared<PyTilePipeline>();
  TilePipelineOptions o;
  o.tile_height = tile.first;
  o.tile_width = tile.second;
  o.halo = halo;
  o.ring_depth = ring_depth;
  o.blend = ParseBlend(blend);
  o.input_name = input_name;
  o.output_name = output_name;
  o.host_threads = host_threads;
  o.sequential = sequential;
  o.stages = ParseStages(stages);
  o.trace_file = trace_file;
  for (const auto& [key, value] : constant_inputs) {
    const std::string name = py::cast<std::string>(key);
    if (py::isinstance<PyOrtValue>(value)) {
      o.constant_inputs.push_back({name, py::cast<PyOrtValue&>(value).value});
      result->keepalive.push_back(py::reinterpret_borrow<py::object>(value));
    } else {
      py::object keep;
      o.constant_inputs.push_back({name, Value(HostTensorFromArray(value, keep))});
      result->keepalive.push_back(keep);
    }
  }
  result->session = std::move(session);
  result->pipeline = std::make_unique<TilePipeline>(result->session->runtime->env(), *result->session->session, o);
  return result;
}

}  // namespace

void BindTilePipeline(py::module_& m) {
  py::class_<PyTilePipeline, std::shared_ptr<PyTilePipeline>>(m, "_TilePipeline")
      .def(py::init(&MakeTilePipeline), py::arg("session"), py::arg("tile"), py::arg("halo"), py::arg("ring_depth"),
           py::arg("blend"), py::arg("input_name"), py::arg("output_name"), py::arg("host_threads"),
           py::arg("constant_inputs"), py::arg("sequential"), py::arg("stages"), py::arg("trace_file"))
      .def("run",
           [](PyTilePipeline& p, const py::handle& image, const py::object& output) -> py::object {
             // An OrtValue image (pinned or device memory: windows copied as regions) or a numpy array.
             py::object keep;
             const Tensor input = py::isinstance<PyOrtValue>(image) ? py::cast<PyOrtValue&>(image).tensor()
                                                                    : HostTensorFromArray(image, keep);
             if (!output.is_none()) {
               if (!py::isinstance<PyOrtValue>(output))
                 throw py::type_error("output must be an OrtValue (e.g. OrtValue.ortvalue_from_shape_and_type(shape, "
                                      "numpy.float32, 'cuda_pinned', 0))");
               Tensor out = py::cast<PyOrtValue&>(output).tensor();  // shares the OrtValue's buffer
               py::gil_scoped_release release;
               p.pipeline->Run(input, out);
               return output;
             }
             Tensor result;
             {
               py::gil_scoped_release release;
               result = p.pipeline->Run(input);
             }
             return ArrayViewOfHostTensor(result);
           },
           py::arg("image"), py::arg("output") = py::none())
      .def("output_shape",
           [](PyTilePipeline& p, const std::vector<int64_t>& shape) {
             py::gil_scoped_release release;
             return p.pipeline->OutputShape(Shape(shape)).dims();
           },
           py::arg("image_shape"))
      .def("stats",
           [](const PyTilePipeline& p) {
             const TileRunStats& s = p.pipeline->stats();
             py::dict d;
             d["tiles"] = s.tiles;
             d["window"] = py::make_tuple(s.window_height, s.window_width);
             d["input_bytes"] = s.input_bytes;
             d["output_bytes"] = s.output_bytes;
             d["seconds"] = s.seconds;
             d["stage_seconds"] = s.stage_seconds;
             d["blend_seconds"] = s.blend_seconds;
             d["wait_seconds"] = s.wait_seconds;
             d["on_device"] = s.on_device;
             d["direct_upload"] = s.direct_upload;
             d["direct_download"] = s.direct_download;
             return d;
           })
      .def("trace", [](const PyTilePipeline& p) {
        py::list spans;
        for (const TileTraceSpan& s : p.pipeline->trace())
          spans.append(py::make_tuple(s.track, s.name, s.tile, s.start_us, s.end_us));
        return spans;
      });
}

}  // namespace tessera::python
