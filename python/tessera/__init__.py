"""Tessera: an ONNX runtime built around device-resident tensors, with onnxruntime's Python API.

    import tessera as ort
    session = ort.InferenceSession("model.onnx", providers=["CPUExecutionProvider"])
    outputs = session.run(None, {"input": array})
"""

from ._tessera import (  # noqa: F401
    EpDevice,
    ExecutionMode,
    Fail,
    GraphOptimizationLevel,
    HardwareDevice,
    InvalidArgument,
    InvalidGraph,
    InvalidModel,
    InvalidProtobuf,
    MemoryInfo,
    NoSuchFile,
    NotImplemented,
    OrtDeviceMemoryType,
    OrtExecutionProviderDevicePolicy,
    OrtExternalInitializerInfo,
    OrtHardwareDeviceType,
    OrtSyncStream,
    OrtValue,
    OutOfMemory,
    RunOptions,
    RuntimeException,
    SessionOptions,
    Terminated,
    TesseraError,
    __version__,
    copy_tensors,
    from_dlpack,
    get_ep_devices,
    get_hardware_devices,
    set_default_logger_severity,
    set_global_thread_pool_sizes,
)
from .providers import (  # noqa: F401
    get_all_providers,
    get_available_providers,
    get_device,
    register_execution_provider_library,
    unregister_execution_provider_library,
)
from .memory import (  # noqa: F401
    OrtAllocatorType,
    OrtArenaCfg,
    OrtDevice,
    OrtDeviceVendorId,
    OrtMemoryInfo,
    OrtMemoryInfoDeviceType,
    OrtMemType,
    create_and_register_allocator,
    create_and_register_allocator_v2,
)
from .parallel import DataParallelSession  # noqa: F401
from .preload import preload_dlls, _get_nvidia_dll_paths  # noqa: F401
from .pipelines import GenerationLoop, TilePipeline  # noqa: F401
from .session import InferenceSession, IOBinding, ModelMetadata, NodeArg  # noqa: F401
from .compile import ModelCompiler, OrtCompileApiFlags  # noqa: F401
from . import providers as _providers

_providers._register_plugins_beside_package()


def get_version_string():
    return __version__


def get_build_info():
    """A one-line description of this build, as onnxruntime's get_build_info gives one."""
    return (f"Build Info: Tessera {__version__}; execution providers available: "
            f"{', '.join(get_available_providers())}")


def disable_telemetry_events():
    """Accepted for compatibility: Tessera collects and sends no telemetry."""


def enable_telemetry_events():
    """Accepted for compatibility: Tessera collects and sends no telemetry."""
