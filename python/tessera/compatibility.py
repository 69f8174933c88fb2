"""onnxruntime's EP-compatibility queries (onnxruntime.capi.onnxruntime_pybind11_state): whether a model compiled for an
EP suits the EP devices at hand, and whether an EP can drive a hardware device.

Tessera's EPs compile nothing ahead of time: every EP runs the ONNX graph itself, so a model's compatibility string
(metadata "ep_compatibility_info.<EP type>", which EPs that compile write) never decides anything here and
get_model_compatibility_for_ep_devices answers EP_NOT_APPLICABLE. An EP suits a hardware device when it offers an
EP device on it (get_ep_devices()).
"""

import enum

from . import _tessera


class OrtCompiledModelCompatibility(enum.Enum):
    EP_NOT_APPLICABLE = 0
    EP_SUPPORTED_OPTIMAL = 1
    EP_SUPPORTED_PREFER_RECOMPILATION = 2
    EP_UNSUPPORTED = 3


class OrtDeviceEpIncompatibilityReason(enum.Enum):
    NONE = 0
    DRIVER_INCOMPATIBLE = 1
    DEVICE_INCOMPATIBLE = 2
    MISSING_DEPENDENCY = 4
    UNKNOWN = -2147483648


_PREFIX = "ep_compatibility_info."


def _require(condition, message):
    if not condition:
        raise _tessera.InvalidArgument(message)


def get_compatibility_info_from_model(model_path, ep_type):
    """The compatibility string the model's metadata holds for `ep_type`, or None."""
    _require(isinstance(model_path, str) and model_path, "model_path must be a non-empty path")
    _require(isinstance(ep_type, str) and ep_type, "ep_type must be a non-empty EP type")
    return _tessera._read_model_metadata(model_path)["custom_metadata_map"].get(_PREFIX + ep_type)


def get_compatibility_info_from_model_bytes(model_bytes, ep_type):
    """As get_compatibility_info_from_model, for a model's serialized bytes."""
    _require(isinstance(model_bytes, (bytes, bytearray)) and len(model_bytes) > 0, "model_bytes must not be empty")
    _require(isinstance(ep_type, str) and ep_type, "ep_type must be a non-empty EP type")
    return _tessera._read_model_metadata(bytes(model_bytes))["custom_metadata_map"].get(_PREFIX + ep_type)


def get_model_compatibility_for_ep_devices(ep_devices, compatibility_info):
    """How a model compiled with `compatibility_info` suits these EP devices (all of one EP)."""
    if not isinstance(compatibility_info, str):
        raise TypeError("compatibility_info must be a str")
    devices = list(ep_devices)
    _require(len(devices) > 0, "ep_devices must name at least one EP device")
    _require(len({d.ep_name for d in devices}) == 1, "ep_devices must all belong to one execution provider")
    return OrtCompiledModelCompatibility.EP_NOT_APPLICABLE


def _same_device(a, b):
    return (a.type, a.vendor_id, a.device_id, a.ordinal) == (b.type, b.vendor_id, b.device_id, b.ordinal)


def get_hardware_device_ep_incompatibility_details(ep_name, hardware_device):
    """{"reasons_bitmask", "notes", "error_code"}: 0 when `ep_name` offers an EP device on `hardware_device`, else
    DEVICE_INCOMPATIBLE with a note saying which devices that EP drives."""
    _require(isinstance(ep_name, str) and ep_name, "ep_name must be a non-empty EP name")
    drives = [d.device for d in _tessera.get_ep_devices() if d.ep_name == ep_name]
    _require(len(drives) > 0, f"no execution provider named '{ep_name}' is registered")
    if any(_same_device(d, hardware_device) for d in drives):
        return {"reasons_bitmask": 0, "notes": "", "error_code": 0}
    names = ", ".join(repr(d) for d in drives)
    return {
        "reasons_bitmask": OrtDeviceEpIncompatibilityReason.DEVICE_INCOMPATIBLE.value,
        "notes": f"{ep_name} drives {names}",
        "error_code": 0,
    }
