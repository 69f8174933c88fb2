// tessera.GenerationLoop's native half (_GenerationLoop): tessera::GenerationLoop over a _Session, token lists in
// and out.
#include "bindings.h"

namespace tessera::python {

namespace {

struct PyGenerationLoop {
  std::shared_ptr<PySession> session;         // first: outlive the loop
  std::shared_ptr<PySession> prompt_session;  // may be null
  std::unique_ptr<GenerationLoop> loop;
};

std::shared_ptr<PyGenerationLoop> MakeGenerationLoop(std::shared_ptr<PySession> session, const py::dict& names,
                                                     int cache_length_axis, int64_t eos_token, bool use_graphs,
                                                     std::shared_ptr<PySession> prompt_session) {
  GenerationLoopOptions o;
  for (const auto& [key, value] : names) {
    const std::string k = py::cast<std::string>(key), v = py::cast<std::string>(value);
    if (k == "input_ids") o.input_ids = v;
    else if (k == "position") o.position = v;
    else if (k == "next_token") o.next_token = v;
    else if (k == "next_position") o.next_position = v;
    else if (k == "past_prefix") o.past_prefix = v;
    else if (k == "present_prefix") o.present_prefix = v;
    else throw py::value_error("GenerationLoop: unknown name '" + k + "'");
  }
  o.cache_length_axis = cache_length_axis;
  o.eos_token = eos_token;
  o.use_graphs = use_graphs;
  auto result = std::make_shared<PyGenerationLoop>();
  result->session = std::move(session);
  result->prompt_session = std::move(prompt_session);
  if (result->prompt_session) o.prompt_session = result->prompt_session->session.get();
  result->loop = std::make_unique<GenerationLoop>(result->session->runtime->env(), *result->session->session, o);
  return result;
}

}  // namespace

void BindGenerationLoop(py::module_& m) {
  py::class_<PyGenerationLoop, std::shared_ptr<PyGenerationLoop>>(m, "_GenerationLoop")
      .def(py::init(&MakeGenerationLoop), py::arg("session"), py::arg("names"), py::arg("cache_length_axis"),
           py::arg("eos_token"), py::arg("use_graphs"), py::arg("prompt_session") = nullptr)
      .def(
          "generate",
          [](PyGenerationLoop& g, const std::vector<std::vector<int64_t>>& prompts, size_t max_new_tokens) {
            py::gil_scoped_release release;
            return g.loop->Generate(prompts, max_new_tokens);
          },
          py::arg("prompts"), py::arg("max_new_tokens"))
      .def_property_readonly("max_length", [](const PyGenerationLoop& g) { return g.loop->max_length(); })
      .def_property_readonly("batch", [](const PyGenerationLoop& g) { return g.loop->batch(); })
      .def("stats", [](const PyGenerationLoop& g) {
        const GenerationLoop::Stats& s = g.loop->last_stats();
        py::dict d;
        d["prompt_tokens"] = s.prompt_tokens;
        d["new_tokens"] = s.new_tokens;
        d["steps"] = s.steps;
        d["prompt_runs"] = s.prompt_runs;
        d["graph_replays"] = s.graph_replays;
        d["total_ms"] = s.total_ms;
        return d;
      });
}

}  // namespace tessera::python
