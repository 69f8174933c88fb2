"""onnxruntime's model compile API (``ModelCompiler``, 1.22+) over Tessera's optimized-model writer.

onnxruntime compiles a model for EPs that build their own programs ahead of time (EPContext nodes: QNN, OpenVINO,
TensorRT RTX, ...). Tessera's EPs compile nothing ahead of time -- the CPU, CUDA and Vulkan EPs run ONNX nodes and
keep their tuning in the tuning cache -- so compiling writes the model as the session would run it: its graph at
``graph_optimization_level`` (onnxruntime's default here: ORT_DISABLE_ALL, the model as given), with Tessera's fused
ops (domain ai.tessera) for the session's providers at ORT_ENABLE_ALL, and large initializers in an external file
when ``external_initializers_file_path`` names one, or wherever ``get_initializer_location_func`` puts each. The
result loads in any Tessera session.

    compiler = tessera.ModelCompiler(tessera.SessionOptions(), "model.onnx",
                                     graph_optimization_level=tessera.GraphOptimizationLevel.ORT_ENABLE_EXTENDED)
    compiler.compile_to_file("model.compiled.onnx")
"""

import enum
import os
import tempfile

from . import _tessera
from .session import InferenceSession


class OrtCompileApiFlags(enum.IntFlag):
    NONE = 0
    ERROR_IF_NO_NODES_COMPILED = 1  # Tessera's EPs compile no nodes: always an error
    ERROR_IF_OUTPUT_FILE_EXISTS = 2


class ModelCompiler:
    """Writes a model as a Tessera session built with ``sess_options`` runs it (see the module's note).

    ``input_model_path_or_bytes``: a file path or the serialized model. ``embed_compiled_data_into_model`` is accepted
    (there is no compiled data). ``external_initializers_file_path`` / ``external_initializers_size_threshold``:
    initializers of at least that many bytes go to that file, beside the output model. ``flags``:
    OrtCompileApiFlags.

    ``get_initializer_location_func(name, value: OrtValue, external_info: OrtExternalInitializerInfo | None)
    -> OrtExternalInitializerInfo | None`` chooses instead, for every initializer of the output model but string
    tensors: None keeps it inside the model; an OrtExternalInitializerInfo(filepath, file_offset, byte_size) makes it
    external data there (the function has written ``value``'s bytes there, or returns ``external_info``: where the
    input model kept this initializer as external data, its path absolute, given when the optimizations left the
    initializer as loaded). A relative filepath is written as given (ONNX resolves it against the model's folder);
    an absolute one relative to the output model's folder (compile_to_bytes / compile_to_stream: to the current
    directory). ``byte_size`` must be the initializer's size; what the function raises fails the compile (Fail)."""

    def __init__(self, sess_options, input_model_path_or_bytes, embed_compiled_data_into_model=False,
                 external_initializers_file_path=None, external_initializers_size_threshold=1024,
                 flags=OrtCompileApiFlags.NONE, graph_optimization_level=None, get_initializer_location_func=None):
        if isinstance(input_model_path_or_bytes, (bytes, bytearray, memoryview)):
            self._model = bytes(input_model_path_or_bytes)
            self._model_path = None
        elif isinstance(input_model_path_or_bytes, (str, os.PathLike)):
            self._model = self._model_path = os.fspath(input_model_path_or_bytes)
        else:
            raise TypeError(f"ModelCompiler: unable to load from type '{type(input_model_path_or_bytes)}'")
        if get_initializer_location_func is not None and not callable(get_initializer_location_func):
            raise TypeError("ModelCompiler: get_initializer_location_func must be callable")
        self._location_func = get_initializer_location_func
        self._options = (sess_options if sess_options is not None else _tessera.SessionOptions())._copy()
        self._options.graph_optimization_level = (graph_optimization_level if graph_optimization_level is not None
                                                  else _tessera.GraphOptimizationLevel.ORT_DISABLE_ALL)
        self._external_file = os.fspath(external_initializers_file_path) if external_initializers_file_path else None
        self._threshold = int(external_initializers_size_threshold)
        self._flags = OrtCompileApiFlags(int(flags))
        self.embed_compiled_data_into_model = bool(embed_compiled_data_into_model)

    def compile_to_file(self, output_model_path=None):
        """Writes the compiled model to ``output_model_path`` (default: beside a file input, named
        ``<input>_ctx.onnx``)."""
        if output_model_path is None:
            if self._model_path is None:
                raise _tessera.InvalidArgument("ModelCompiler: a model given as bytes needs an output_model_path")
            stem, _ = os.path.splitext(self._model_path)
            output_model_path = stem + "_ctx.onnx"
        output_model_path = os.fspath(output_model_path)
        self._check_flags()
        if self._flags & OrtCompileApiFlags.ERROR_IF_OUTPUT_FILE_EXISTS and os.path.exists(output_model_path):
            raise _tessera.Fail(f"ModelCompiler: the output model '{output_model_path}' exists already")
        self._write(output_model_path)

    def compile_to_bytes(self):
        """Returns the compiled model, serialized. Initializers stay inside it (external_initializers_file_path
        applies to compile_to_file)."""
        self._check_flags()
        with tempfile.TemporaryDirectory(prefix="tessera_compile_") as folder:
            path = os.path.join(folder, "model.onnx")
            self._write(path, external=False, locations_from=os.getcwd())
            with open(path, "rb") as f:
                return f.read()

    def compile_to_stream(self, write_func):
        """Calls ``write_func(buffer: bytes)`` with the compiled model, in pieces of at most 1 MiB; an exception it
        raises becomes a Fail naming it."""
        data = self.compile_to_bytes()
        piece = 1 << 20
        for at in range(0, len(data), piece):
            try:
                write_func(data[at:at + piece])
            except Exception as error:  # noqa: BLE001 -- the caller's functor: any failure is reported as Fail
                raise _tessera.Fail(f"ModelCompiler: the write function failed: {type(error).__name__}: {error}") \
                    from error

    def _check_flags(self):
        if self._flags & OrtCompileApiFlags.ERROR_IF_NO_NODES_COMPILED:
            raise _tessera.Fail("ModelCompiler: Unable to compile any nodes: Tessera's execution providers run ONNX "
                                "nodes and compile none ahead of time (no EPContext nodes)")

    def _write(self, path, external=True, locations_from=None):
        """``locations_from``: the folder that absolute locations are made relative to, when it is not the output
        model's (a model returned as bytes)."""
        options = self._options._copy()
        options.optimized_model_filepath = path
        if self._location_func is not None:
            user_func = self._location_func

            def where(name, value, external_info):
                info = user_func(name, value, external_info)
                if info is not None and locations_from is not None and isinstance(info, _tessera.OrtExternalInitializerInfo) \
                        and os.path.isabs(info.filepath):
                    info = _tessera.OrtExternalInitializerInfo(os.path.relpath(info.filepath, locations_from),
                                                               info.file_offset, info.byte_size)
                return info

            options._set_initializer_location_func(where)
        elif external and self._external_file:
            options.add_session_config_entry("session.optimized_model_external_initializers_file_name",
                                             self._external_file)
            options.add_session_config_entry("session.optimized_model_external_initializers_min_size_in_bytes",
                                             str(self._threshold))
        InferenceSession(self._model, sess_options=options)
