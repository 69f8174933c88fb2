"""InferenceSession and IOBinding with onnxruntime's Python API."""

import os
import threading
import warnings

import numpy as np

from . import _tessera
from .providers import normalize_providers


_NUMPY_TYPES = {
    "tensor(float)": np.float32, "tensor(double)": np.float64, "tensor(float16)": np.float16,
    "tensor(int8)": np.int8, "tensor(int16)": np.int16, "tensor(int32)": np.int32, "tensor(int64)": np.int64,
    "tensor(uint8)": np.uint8, "tensor(uint16)": np.uint16, "tensor(uint32)": np.uint32,
    "tensor(uint64)": np.uint64, "tensor(bool)": np.bool_, "tensor(string)": object,
}


def _numpy_dtype(type_string):
    return _NUMPY_TYPES.get(type_string)


class NodeArg:
    """A model input or output: name, shape (ints, symbolic names, None for unknown) and type."""

    def __init__(self, name, shape, type):
        self.name = name
        self.shape = shape
        self.type = type

    def __repr__(self):
        return f"NodeArg(name='{self.name}', type='{self.type}', shape={self.shape})"


class ModelMetadata:
    """The model's metadata, as onnxruntime.ModelMetadata."""

    def __init__(self, fields):
        self.producer_name = fields["producer_name"]
        self.producer_version = fields["producer_version"]
        self.graph_name = fields["graph_name"]
        self.graph_description = ""
        self.domain = fields["domain"]
        self.description = fields["description"]
        self.version = fields["version"]
        self.custom_metadata_map = dict(fields["custom_metadata_map"])


_ASYNC_RUNNER = None
_ASYNC_RUNNER_LOCK = threading.Lock()


def _async_runner():
    """The thread pool behind InferenceSession.run_async (created on first use, one thread per core)."""
    global _ASYNC_RUNNER
    with _ASYNC_RUNNER_LOCK:
        if _ASYNC_RUNNER is None:
            from concurrent.futures import ThreadPoolExecutor
            _ASYNC_RUNNER = ThreadPoolExecutor(max_workers=os.cpu_count() or 2, thread_name_prefix="tessera-run-async")
        return _ASYNC_RUNNER


# onnxruntime's graph transformer names (what onnxruntime's `disabled_optimizers` takes) -> the Tessera pass doing
# that work. Names without a counterpart are ignored with a warning, as onnxruntime ignores names it does not have.
_ORT_OPTIMIZER_PASSES = {
    "ConstantFolding": "constant_folding",
    "CastElimination": "cast_elimination",
    "ConvBNFusion": "conv_bn_folding",
    "ConvActivationFusion": "conv_activation_fusion",
    "ConvAddActivationFusion": "conv_activation_fusion",
    "LayerNormFusion": "layer_norm_fusion",
    "SimplifiedLayerNormFusion": "layer_norm_fusion",
    "GeluFusion": "gelu_fusion",
    "FastGeluFusion": "gelu_fusion",
    "BiasGeluFusion": "gelu_fusion",
    "QuickGeluFusion": "silu_fusion",
    "SkipLayerNormFusion": "skip_layer_norm_fusion",
    "AttentionFusion": "attention_fusion",
    "MatMulAddFusion": "matmul_epilogue_fusion",
    "MatMulScaleFusion": "matmul_epilogue_fusion",
    "GemmActivationFusion": "matmul_epilogue_fusion",
    "MatMulIntegerToFloatFusion": "integer_matmul_fusion",
    "DynamicQuantizeMatMulFusion": "integer_matmul_fusion",
    "NchwcTransformer": "nchwc_layout",
    "TransposeOptimizer": "transpose_elimination",
}


def _disabled_optimizers_config(sess_options, names):
    """The session.disabled_optimizers entry for onnxruntime's `disabled_optimizers` argument: Tessera pass names
    as they are, onnxruntime transformer names translated, both added to what sess_options already disables."""
    known = set(_tessera._graph_optimizer_pass_names())
    try:
        existing = sess_options.get_session_config_entry("session.disabled_optimizers")
    except Exception:  # no such entry (onnxruntime's API raises too)
        existing = ""
    passes = [p for p in existing.split(",") if p]
    for name in names:
        name = str(name)
        if name in known:
            passes.append(name)
        elif name in _ORT_OPTIMIZER_PASSES:
            passes.append(_ORT_OPTIMIZER_PASSES[name])
        else:
            warnings.warn(f"disabled_optimizers: '{name}' is not a Tessera pass or an onnxruntime transformer Tessera "
                          f"has a counterpart for; ignored (Tessera's passes: {', '.join(sorted(known))})",
                          stacklevel=3)
    return ",".join(dict.fromkeys(passes))


class InferenceSession:
    """A loaded model ready to run: `InferenceSession(path_or_bytes, sess_options, providers, provider_options)`.

    providers: EP types in priority order ("CUDAExecutionProvider", "CPUExecutionProvider", ...), or
    (name, options dict) tuples; unavailable ones are skipped with a warning. When None, the
    SessionOptions' provider selection policy decides (the default is the CPU only). The CPU EP is
    appended as fallback unless the config entry "session.disable_cpu_ep_fallback" is "1".
    """

    def __init__(self, path_or_bytes, sess_options=None, providers=None, provider_options=None, **kwargs):
        if isinstance(path_or_bytes, (bytes, bytearray, memoryview)):
            self._model = bytes(path_or_bytes)
            self._model_path = None
        elif isinstance(path_or_bytes, (str, os.PathLike)):
            self._model = os.fspath(path_or_bytes)
            self._model_path = self._model
        else:
            raise TypeError(f"Unable to load from type '{type(path_or_bytes)}'")
        self._sess_options = sess_options if sess_options is not None else _tessera.SessionOptions()
        self._config = {}
        disabled = kwargs.pop("disabled_optimizers", None)
        if disabled is not None:
            self._config["session.disabled_optimizers"] = _disabled_optimizers_config(self._sess_options, disabled)
        for key in kwargs:
            warnings.warn(f"InferenceSession: argument '{key}' is not supported; ignored", stacklevel=2)
        self._create(providers, provider_options)

    def _create(self, providers, provider_options):
        normalized = normalize_providers(providers, provider_options)
        self._sess = _tessera._Session(self._model, self._sess_options, normalized, self._config)
        self._provider_options = {name: options for name, options, _ in normalized}
        self._inputs = [NodeArg(*a) for a in self._sess.inputs()]
        self._input_dtypes = {i.name: _numpy_dtype(i.type) for i in self._inputs}
        self._input_types = {i.name: i.type for i in self._inputs}
        self._outputs = [NodeArg(*a) for a in self._sess.outputs()]

    def get_inputs(self):
        return list(self._inputs)

    def get_outputs(self):
        return list(self._outputs)

    def get_overridable_initializers(self):
        return []

    def get_modelmeta(self):
        return ModelMetadata(self._sess.metadata())

    def get_providers(self):
        return self._sess.providers()

    def get_input_memory_infos(self):
        """Per input, the MemoryInfo it is read from without a copy (onnxruntime 1.23+)."""
        return [self._sess.input_memory_info(i.name) for i in self._inputs]

    def get_output_memory_infos(self):
        """Per output, the MemoryInfo it is produced in (onnxruntime 1.23+)."""
        return [self._sess.output_memory_info(o.name) for o in self._outputs]

    def get_input_epdevices(self):
        """Per input, the EP device whose memory it is read from, or None for host memory (onnxruntime 1.23+)."""
        devices = _tessera.get_ep_devices()
        result = []
        for i in self._inputs:
            found = self._sess.input_ep_device(i.name)
            match = None
            if found is not None:
                ep_name, ordinal = found
                match = next((d for d in devices if d.ep_name == ep_name and d.device.ordinal == ordinal), None)
            result.append(match)
        return result

    def get_graph_status(self):
        """How runs use CUDA graphs: "automatic: ..." (the session captures and replays Run and IO-binding runs by
        itself; CUDA provider option automatic_cuda_graphs, on by default), "explicit: ..." (enable_cuda_graph), or
        "eager: <why no graph is used>". (Tessera addition.)"""
        return self._sess.graph_status()

    def get_automatic_graph_counts(self):
        """(graphs captured, runs replayed) by automatic graphs so far. (Tessera addition.)"""
        captures, replays = self._sess.automatic_graph_counts()
        return {"captures": captures, "replays": replays}

    def get_provider_options(self):
        return {name: dict(self._provider_options.get(name, {})) for name in self.get_providers()}

    def get_session_options(self):
        return self._sess_options

    def set_providers(self, providers=None, provider_options=None):
        """Re-creates the session with other providers (the model and session options are kept)."""
        self._create(providers, provider_options)

    def disable_fallback(self):
        """Accepted for compatibility: Tessera never retries a failed run on another provider."""

    def enable_fallback(self):
        """Accepted for compatibility (see disable_fallback)."""

    def release_memory(self):
        """Gives back the device and host memory the session reserved but no value uses (arena regions, stream
        caches); arrays and OrtValues the caller holds stay valid and later runs reserve again. Returns the bytes
        released. onnxruntime's run config entry "memory.enable_memory_arena_shrinkage" ("cpu:0;gpu:0") does the
        same at the end of one run. (Tessera addition.)"""
        return self._sess.release_memory()

    def run_async(self, output_names, input_feed, callback, user_data, run_options=None):
        """Starts the run on a background thread and returns at once (onnxruntime's InferenceSession.run_async).
        When it ends, `callback(outputs, user_data, error)` is called on that thread: `outputs` is what run() would
        return and `error` is "" on success; on failure `outputs` is None and `error` the message."""
        feed = dict(input_feed)  # the caller may reuse its dict at once

        def work():
            try:
                outputs = self.run(output_names, feed, run_options)
            except Exception as e:  # noqa: BLE001 -- reported to the callback, as onnxruntime does
                callback(None, user_data, str(e) or type(e).__name__)
            else:
                callback(outputs, user_data, "")

        _async_runner().submit(work)

    def run(self, output_names, input_feed, run_options=None):
        """Runs the model; returns numpy arrays for `output_names` (all outputs when None or empty).

        Inputs are numpy arrays (shared without copies when C-contiguous and aligned) or OrtValues."""
        if not isinstance(input_feed, dict):
            raise TypeError("input_feed must be a dict of input name -> numpy array or OrtValue")
        missing = [i.name for i in self._inputs if i.name not in input_feed]
        if missing:  # onnxruntime's message, which scripts match
            raise _tessera.InvalidArgument(
                f"Required inputs ({missing}) are missing from input feed ({list(input_feed)}).")
        feeds = {name: self._as_feed(name, value) for name, value in input_feed.items()}
        return self._sess.run(list(output_names or []), feeds, run_options)

    def _as_feed(self, name, value):
        """Python scalars and lists become arrays of the input's element type, as in onnxruntime."""
        if isinstance(value, np.ndarray) and value.dtype.kind == "V" and self._input_types.get(name) == "tensor(string)":
            # numpy void arrays (raw bytes) fed to a string input: one bytes object per element, as onnxruntime reads them
            return np.array([bytes(v) for v in value.ravel()], dtype=object).reshape(value.shape)
        if value is None or isinstance(value, (np.ndarray, _tessera.OrtValue)) or self._input_dtypes.get(name) is None:
            return value
        return np.asarray(value, dtype=self._input_dtypes[name])

    def run_with_ort_values(self, output_names, input_dict_ort_values, run_options=None):
        """Like run, with OrtValues in and out (outputs stay where the model produced them on the host)."""
        return list(self._sess.run_with_ort_values(input_dict_ort_values, list(output_names or []), run_options))

    def io_binding(self):
        return IOBinding(self)

    def run_with_iobinding(self, iobinding, run_options=None):
        iobinding._iobinding.run(run_options)

    def end_profiling(self):
        """Writes the profile (SessionOptions.enable_profiling) and returns its path; "" when not profiling."""
        return self._sess.end_profiling()

    def get_profiling_start_time_ns(self):
        """When profiling started, in nanoseconds since the epoch (0 when not profiling)."""
        return self._sess.profiling_start_time_ns()

    def get_provider_graph_assignment_info(self):
        """onnxruntime's record of which EP runs which nodes (session config entry
        "session.record_ep_graph_assignment_info" = "1"): a list of subgraphs, each with `ep_name` and `get_nodes()`
        (objects with `domain`, `op_type`, `name`), in execution order. Nodes of the CPU EP are one subgraph each, as
        onnxruntime assigns them; consecutive nodes of another EP form one subgraph. The nodes are those the session
        runs, after graph optimizations (fused nodes under their fused names)."""
        try:
            recorded = self._sess_options.get_session_config_entry("session.record_ep_graph_assignment_info")
        except Exception:
            recorded = ""
        if recorded != "1":
            raise _tessera.Fail("Session configuration entry 'session.record_ep_graph_assignment_info' must be set to "
                                "\"1\" to query the EP graph assignment info")
        subgraphs = []
        for name, op_type, ep, is_copy, _, _, domain in self._sess.partition():
            if is_copy:
                continue
            node = EpAssignedNode(domain, op_type, name)
            if subgraphs and subgraphs[-1].ep_name == ep and ep != "CPUExecutionProvider":
                subgraphs[-1]._nodes.append(node)
            else:
                subgraphs.append(EpAssignedSubgraph(ep, [node]))
        return subgraphs

    # Tessera additions.
    def get_partition(self):
        """(node, op type, EP, is_copy, copy_from, copy_to, domain) for every plan step, in order."""
        return self._sess.partition()

    def get_input_device(self, name):
        """The device an input is read from without a copy ("cpu", "cuda", "testing", ...)."""
        return self._sess.input_device_name(name)


class EpAssignedNode:
    """A node of InferenceSession.get_provider_graph_assignment_info()."""

    def __init__(self, domain, op_type, name):
        self.domain, self.op_type, self.name = domain, op_type, name

    def __repr__(self):
        return f"EpAssignedNode({self.domain}:{self.op_type}/{self.name})"


class EpAssignedSubgraph:
    """Nodes one EP runs (InferenceSession.get_provider_graph_assignment_info())."""

    def __init__(self, ep_name, nodes):
        self.ep_name, self._nodes = ep_name, nodes

    def get_nodes(self):
        return list(self._nodes)

    def __repr__(self):
        return f"EpAssignedSubgraph({self.ep_name}, {len(self._nodes)} nodes)"


class IOBinding:
    """Inputs and outputs bound to memory on any device, reused across runs (onnxruntime.IOBinding)."""

    def __init__(self, session):
        self._iobinding = _tessera._IOBinding(session._sess)

    def bind_cpu_input(self, name, arr_on_cpu):
        self._iobinding.bind_cpu_input(name, arr_on_cpu)

    def bind_input(self, name, device_type, device_id, element_type, shape, buffer_ptr):
        self._iobinding.bind_input(name, device_type, device_id, element_type, shape, buffer_ptr)

    def bind_ortvalue_input(self, name, ortvalue):
        self._iobinding.bind_ortvalue_input(name, ortvalue)

    def bind_output(self, name, device_type="cpu", device_id=0, element_type=None, shape=None, buffer_ptr=None):
        self._iobinding.bind_output(name, device_type, device_id, element_type, shape, buffer_ptr)

    def bind_ortvalue_output(self, name, ortvalue):
        self._iobinding.bind_ortvalue_output(name, ortvalue)

    def get_outputs(self):
        return self._iobinding.get_outputs()

    def copy_outputs_to_cpu(self):
        return self._iobinding.copy_outputs_to_cpu()

    def clear_binding_inputs(self):
        self._iobinding.clear_binding_inputs()

    def clear_binding_outputs(self):
        self._iobinding.clear_binding_outputs()

    def synchronize_inputs(self):
        self._iobinding.synchronize_inputs()

    def synchronize_outputs(self):
        self._iobinding.synchronize_outputs()
