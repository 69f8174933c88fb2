"""onnxruntime's onnxruntime_test_python_ep_compatibility.py (MIT License, Microsoft), mirrored: the same calls and
expectations through tessera.capi.onnxruntime_pybind11_state. Tessera's EPs compile no models, so every EP answers
EP_NOT_APPLICABLE; the compatibility strings come from the model's metadata ("ep_compatibility_info.<EP type>").
"""

import os
import tempfile

import onnx
import pytest

from tessera.capi.onnxruntime_pybind11_state import (
    OrtCompiledModelCompatibility,
    OrtDeviceEpIncompatibilityReason,
    get_compatibility_info_from_model,
    get_compatibility_info_from_model_bytes,
    get_ep_devices,
    get_hardware_device_ep_incompatibility_details,
    get_hardware_devices,
    get_model_compatibility_for_ep_devices,
)


def _create_model_with_compatibility_metadata(ep_compatibility_info=None):
    graph = onnx.helper.make_graph([], "test_graph", [], [])
    model = onnx.helper.make_model(graph, opset_imports=[onnx.helper.make_opsetid("", 13)])
    for ep_type, compat_info in (ep_compatibility_info or {}).items():
        entry = onnx.StringStringEntryProto()
        entry.key = f"ep_compatibility_info.{ep_type}"
        entry.value = compat_info
        model.metadata_props.append(entry)
    return model.SerializeToString()


def test_invalid_args():
    with pytest.raises(RuntimeError):
        get_model_compatibility_for_ep_devices([], "info")
    with pytest.raises(TypeError):
        get_model_compatibility_for_ep_devices(get_ep_devices(), None)


def test_basic_smoke():
    cpu_devices = [d for d in get_ep_devices() if d.ep_name == "CPUExecutionProvider"]
    assert cpu_devices
    status = get_model_compatibility_for_ep_devices([cpu_devices[0]], "arbitrary-compat-string")
    assert status == OrtCompiledModelCompatibility.EP_NOT_APPLICABLE


def test_get_compatibility_info_from_model_bytes_with_metadata():
    model_data = _create_model_with_compatibility_metadata({"TestCompatEP": "test_compat_v1.0_driver_123"})
    assert get_compatibility_info_from_model_bytes(model_data, "TestCompatEP") == "test_compat_v1.0_driver_123"


def test_get_compatibility_info_from_model_bytes_not_found():
    model_data = _create_model_with_compatibility_metadata({"DifferentEP": "some_value"})
    assert get_compatibility_info_from_model_bytes(model_data, "NonExistentEP") is None


def test_get_compatibility_info_from_model_bytes_no_metadata():
    assert get_compatibility_info_from_model_bytes(_create_model_with_compatibility_metadata(), "AnyEP") is None


def test_get_compatibility_info_from_model_bytes_invalid_data():
    with pytest.raises(RuntimeError):
        get_compatibility_info_from_model_bytes(b"this is not a valid ONNX model", "TestEP")


def test_get_compatibility_info_from_model_bytes_invalid_args():
    with pytest.raises(RuntimeError):
        get_compatibility_info_from_model_bytes(b"", "TestEP")
    with pytest.raises(RuntimeError):
        get_compatibility_info_from_model_bytes(b"data", "")


def test_get_compatibility_info_from_model_file_with_metadata():
    model_data = _create_model_with_compatibility_metadata({"TestCompatEP": "file_compat_v2.0"})
    with tempfile.NamedTemporaryFile(suffix=".onnx", delete=False) as f:
        f.write(model_data)
        model_path = f.name
    try:
        assert get_compatibility_info_from_model(model_path, "TestCompatEP") == "file_compat_v2.0"
    finally:
        os.unlink(model_path)


def test_get_compatibility_info_from_model_file_not_found():
    with pytest.raises(RuntimeError):
        get_compatibility_info_from_model("nonexistent_model_path.onnx", "TestEP")


def test_get_compatibility_info_from_model_invalid_args():
    with pytest.raises(RuntimeError):
        get_compatibility_info_from_model("", "TestEP")
    with pytest.raises(RuntimeError):
        get_compatibility_info_from_model("model.onnx", "")


def test_get_hardware_devices_returns_devices():
    devices = get_hardware_devices()
    assert len(devices) > 0
    for device in devices:
        assert device.type.value in [0, 1, 2]
        assert device.vendor is not None


def test_get_hardware_device_ep_incompatibility_details_cpu_ep():
    cpu_devices = [d for d in get_hardware_devices() if d.type.value == 0]
    assert cpu_devices
    details = get_hardware_device_ep_incompatibility_details("CPUExecutionProvider", cpu_devices[0])
    assert isinstance(details, dict)
    assert {"reasons_bitmask", "notes", "error_code"} <= set(details)
    assert details["reasons_bitmask"] == 0
    assert details["error_code"] == 0


def test_get_hardware_device_ep_incompatibility_details_invalid_ep():
    with pytest.raises(RuntimeError):
        get_hardware_device_ep_incompatibility_details("", get_hardware_devices()[0])


def test_ortdevice_ep_incompatibility_reason_enum():
    assert OrtDeviceEpIncompatibilityReason.NONE.value == 0
    assert OrtDeviceEpIncompatibilityReason.DRIVER_INCOMPATIBLE.value == 1
    assert OrtDeviceEpIncompatibilityReason.DEVICE_INCOMPATIBLE.value == 2
    assert OrtDeviceEpIncompatibilityReason.MISSING_DEPENDENCY.value == 4
    assert OrtDeviceEpIncompatibilityReason.UNKNOWN.value == -2147483648


def test_a_device_the_ep_does_not_drive_is_reported():
    """Tessera: the simulated device's EP does not drive the CPU."""
    ep_names = {d.ep_name for d in get_ep_devices()}
    other = next((n for n in sorted(ep_names) if n != "CPUExecutionProvider"), None)
    if other is None:
        pytest.skip("only the CPU EP is registered here")
    cpu = [d for d in get_hardware_devices() if d.type.value == 0][0]
    details = get_hardware_device_ep_incompatibility_details(other, cpu)
    assert details["reasons_bitmask"] == OrtDeviceEpIncompatibilityReason.DEVICE_INCOMPATIBLE.value
    assert other in details["notes"]
