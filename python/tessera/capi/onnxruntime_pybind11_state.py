"""The names onnxruntime.capi.onnxruntime_pybind11_state exports that scripts catch or use."""

from .._tessera import (  # noqa: F401
    Fail,
    get_ep_devices,
    get_hardware_devices,
    InvalidArgument,
    InvalidGraph,
    InvalidProtobuf,
    NoSuchFile,
    NotImplemented,
    OrtValue,
    RunOptions,
    RuntimeException,
    SessionOptions,
)
from ..compatibility import (  # noqa: F401
    OrtCompiledModelCompatibility,
    OrtDeviceEpIncompatibilityReason,
    get_compatibility_info_from_model,
    get_compatibility_info_from_model_bytes,
    get_hardware_device_ep_incompatibility_details,
    get_model_compatibility_for_ep_devices,
)
