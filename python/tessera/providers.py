"""Execution providers: discovery, plugin registration and onnxruntime-style provider arguments."""

import os
import re
import warnings

from . import _tessera

CPU_EP = "CPUExecutionProvider"
CUDA_EP = "CUDAExecutionProvider"
TESTING_EP = "TestingExecutionProvider"
VULKAN_EP = "VulkanExecutionProvider"

# Every EP type this version of Tessera knows, whether or not it is available on this machine.
_KNOWN_EPS = [CUDA_EP, VULKAN_EP, TESTING_EP, CPU_EP]
# Execution providers of onnxruntime builds: naming one that is not available here is a warning (scripts written for
# several machines list them), naming anything else an error ("Unknown Provider Type"), as in onnxruntime.
_ONNXRUNTIME_EPS = {
    "TensorrtExecutionProvider", "NvTensorRTRTXExecutionProvider", "CUDAExecutionProvider",
    "MIGraphXExecutionProvider", "ROCMExecutionProvider", "OpenVINOExecutionProvider", "DnnlExecutionProvider",
    "VitisAIExecutionProvider", "QNNExecutionProvider", "NnapiExecutionProvider", "VSINPUExecutionProvider",
    "JsExecutionProvider", "CoreMLExecutionProvider", "ArmNNExecutionProvider", "ACLExecutionProvider",
    "DmlExecutionProvider", "RknpuExecutionProvider", "WebNNExecutionProvider", "WebGpuExecutionProvider",
    "XnnpackExecutionProvider", "CANNExecutionProvider", "AzureExecutionProvider", "SNPEExecutionProvider",
    "TvmExecutionProvider", "CPUExecutionProvider",
}
_PLUGIN_FILE = re.compile(r"libtessera_(\w+?)(?:_ep)?\.so")
_registered_plugins = {}  # registration name -> library path


def register_execution_provider_library(registration_name, path):
    """Loads an EP plugin library, e.g. ("cuda", ".../libtessera_cuda.so")."""
    _tessera.register_execution_provider_library(registration_name, os.fspath(path))
    _registered_plugins[registration_name] = os.fspath(path)


def unregister_execution_provider_library(registration_name):
    """Unloads a plugin; every session and value using it must be gone first."""
    _tessera.unregister_execution_provider_library(registration_name)
    _registered_plugins.pop(registration_name, None)


def _register_plugins_beside_package():
    """Registers libtessera_<name>.so found beside the extension or libtessera.so (the simulated testing
    device only when TESSERA_TESTING_EP_PATH names its library)."""
    folders = [os.path.dirname(os.path.abspath(__file__)), _tessera._core_library_dir()]
    for folder in dict.fromkeys(f for f in folders if f and os.path.isdir(f)):
        for file_name in sorted(os.listdir(folder)):
            match = _PLUGIN_FILE.fullmatch(file_name)
            if not match or match.group(1) == "testing" or match.group(1) in _registered_plugins:
                continue
            _try_register(match.group(1), os.path.join(folder, file_name))
    testing_library = os.environ.get("TESSERA_TESTING_EP_PATH")
    if testing_library and "testing" not in _registered_plugins:
        _try_register("testing", testing_library)


def _try_register(name, path):
    try:
        register_execution_provider_library(name, path)
    except _tessera.TesseraError as error:
        warnings.warn(f"tessera: skipping EP library {path}: {error}", RuntimeWarning, stacklevel=3)


def get_available_providers():
    """EP types that can run here, in default priority order (the CPU EP last)."""
    names = _tessera._ep_names()
    return [n for n in names if n != CPU_EP] + [CPU_EP]


def get_all_providers():
    """Every EP type Tessera knows, available here or not."""
    extra = [n for n in _tessera._ep_names() if n not in _KNOWN_EPS]
    return _KNOWN_EPS[:-1] + extra + [CPU_EP]


def get_device():
    """"GPU" when a GPU execution provider device exists, else "CPU"."""
    for ep_device in _tessera.get_ep_devices():
        if ep_device.ep_name == CUDA_EP or ep_device.device.type == _tessera.OrtHardwareDeviceType.GPU:
            return "GPU"
    return "CPU"


def _device_index(ep_name, device_id):
    """The index among `ep_name`'s EP devices of the one driving device ordinal `device_id`."""
    devices = [d for d in _tessera.get_ep_devices() if d.ep_name == ep_name]
    for d in devices:
        if d.device.ordinal == device_id:
            return d.index
    ordinals = [d.device.ordinal for d in devices]
    raise _tessera.InvalidArgument(f"{ep_name} has no device with device_id {device_id} (devices: {ordinals})")


def _option_string(value):
    if isinstance(value, bool):
        return "1" if value else "0"
    return str(value)


def normalize_providers(providers, provider_options):
    """onnxruntime's provider arguments -> [(ep type, {str: str}, device index)].

    Names that are not available here are skipped with a warning, as onnxruntime does. "device_id"
    selects which of the EP's devices to use (its ordinal); it is passed on to the CUDA EP, which
    validates it, and consumed here for other EPs."""
    if providers is None:
        return []
    if provider_options is not None and len(provider_options) != len(providers):
        raise ValueError("'providers' and 'provider_options' should be the same length if both are given.")
    available = get_available_providers()
    result, seen = [], set()
    for i, provider in enumerate(providers):
        if isinstance(provider, str):
            name, options = provider, (provider_options[i] if provider_options is not None else {})
        elif isinstance(provider, (tuple, list)) and len(provider) == 2 and isinstance(provider[0], str) \
                and isinstance(provider[1], dict):
            if provider_options is not None:
                raise ValueError("'provider_options' must not be given when 'providers' has (name, options) tuples.")
            name, options = provider
        else:
            raise ValueError("'providers' values must be either strings or (string, dict) tuples.")
        if name in seen:
            raise ValueError("'providers' has a duplicate entry.")
        seen.add(name)
        if name not in available and name not in _ONNXRUNTIME_EPS and name not in get_all_providers():
            raise _tessera.Fail(f"Unknown Provider Type: {name} (known here: {', '.join(get_all_providers())})")
        if name not in available:
            warnings.warn(f"Specified provider '{name}' is not in available provider names. "
                          f"Available providers: '{', '.join(available)}'", RuntimeWarning, stacklevel=4)
            continue
        options = {str(k): _option_string(v) for k, v in options.items()}
        device_id = int(options.get("device_id", 0))
        if name != CUDA_EP:
            options.pop("device_id", None)
        result.append((name, options, _device_index(name, device_id)))
    return result
