"""onnx's Backend interface (onnx.backend.base) over Tessera sessions, as onnxruntime.backend offers it, for code and
test runners written against that interface:

    import tessera.backend as backend
    rep = backend.prepare("model.onnx", device="CPU")     # or a ModelProto, or the model's bytes
    outputs = rep.run(x)                                   # one array, a list in input order, or a dict by name
    outputs = backend.run_model(model, [x, y], device="CUDA:0")

Devices are onnx's strings: "CPU", "CUDA" or "CUDA:<ordinal>" (with the CPU EP as the fallback). Keyword arguments of
prepare/run_model set SessionOptions attributes (e.g. graph_optimization_level, intra_op_num_threads); those of run
set RunOptions attributes. An unknown one is an error naming it. Needs the onnx package (imported with this module).
"""

from onnx import ModelProto
from onnx.backend.base import Backend, BackendRep

from . import _tessera
from .providers import get_available_providers
from .session import InferenceSession

# The newest default-domain opset Tessera's loader takes (docs/ARCHITECTURE.md, "Session creation").
_LATEST_OPSET = 23


def _providers_for(device):
    """onnx's device string -> (providers, provider options)."""
    name, _, ordinal = str(device or "CPU").upper().partition(":")
    if name == "CPU" and not ordinal:
        return ["CPUExecutionProvider"], None
    if name == "CUDA":
        if "CUDAExecutionProvider" not in get_available_providers():
            raise RuntimeError(f"device '{device}': Tessera's CUDA execution provider is not available here")
        options = {"device_id": int(ordinal)} if ordinal else {}
        return ["CUDAExecutionProvider", "CPUExecutionProvider"], [options, {}]
    raise RuntimeError(f"device '{device}' is not supported (devices: CPU, CUDA, CUDA:<ordinal>)")


def _set_attributes(target, kwargs, what):
    for key, value in kwargs.items():
        if not hasattr(target, key):
            raise RuntimeError(f"unknown {what} option '{key}'")
        setattr(target, key, value)


class TesseraBackendRep(BackendRep):
    """A prepared model: run(inputs, **run_options) -> the outputs, in the model's output order."""

    def __init__(self, session):
        self._session = session

    def run(self, inputs, **kwargs):
        run_options = _tessera.RunOptions()
        _set_attributes(run_options, kwargs, "RunOptions")
        names = [i.name for i in self._session.get_inputs()]
        if isinstance(inputs, dict):
            feeds = inputs
        elif isinstance(inputs, (list, tuple)):
            if len(inputs) != len(names):
                raise RuntimeError(f"the model takes {len(names)} input(s) ({', '.join(names)}), {len(inputs)} given")
            feeds = dict(zip(names, inputs))
        else:
            if len(names) != 1:
                raise RuntimeError(f"the model takes {len(names)} inputs ({', '.join(names)}): pass a list or a dict")
            feeds = {names[0]: inputs}
        return self._session.run(None, feeds, run_options)


class TesseraBackend(Backend):
    @classmethod
    def is_compatible(cls, model, device="CPU", **kwargs):
        """Whether the device is available and the model's default-domain opset is one Tessera loads."""
        if not cls.supports_device(device):
            return False
        if isinstance(model, ModelProto):
            for opset in model.opset_import:
                if opset.domain in ("", "ai.onnx") and opset.version > _LATEST_OPSET:
                    return False
        return True

    @classmethod
    def supports_device(cls, device):
        try:
            _providers_for(device)
            return True
        except (RuntimeError, ValueError):
            return False

    @classmethod
    def prepare(cls, model, device="CPU", **kwargs):
        if isinstance(model, TesseraBackendRep):
            return model
        if isinstance(model, InferenceSession):
            return TesseraBackendRep(model)
        if isinstance(model, ModelProto):
            model = model.SerializeToString()
        options = _tessera.SessionOptions()
        _set_attributes(options, kwargs, "SessionOptions")
        providers, provider_options = _providers_for(device)
        return TesseraBackendRep(InferenceSession(model, options, providers, provider_options))

    @classmethod
    def run_model(cls, model, inputs, device="CPU", **kwargs):
        return cls.prepare(model, device, **kwargs).run(inputs)


is_compatible = TesseraBackend.is_compatible
prepare = TesseraBackend.prepare
run = TesseraBackend.run_model
run_model = TesseraBackend.run_model
supports_device = TesseraBackend.supports_device
