"""Providers, EP selection, EP-device discovery and plugin registration."""

import os
import warnings

import numpy as np
import pytest

from helpers import requires_testing_ep
import onnx_models
import tessera as ort

CPU, TESTING = "CPUExecutionProvider", "TestingExecutionProvider"


def _run_add_relu(session):
    a = np.array([[1, -2, 3], [-4, 5, -6]], np.float32)
    s, r = session.run(None, {"A": a, "B": a})
    np.testing.assert_array_equal(r, np.maximum(2 * a, 0))


def test_available_and_all_providers():
    available = ort.get_available_providers()
    assert available[-1] == CPU
    assert set(available) <= set(ort.get_all_providers())
    assert {"CUDAExecutionProvider", TESTING, CPU} <= set(ort.get_all_providers())
    assert ort.get_device() in ("CPU", "GPU")
    if "CUDAExecutionProvider" not in available:
        assert ort.get_device() == "CPU"


def test_default_session_runs_on_the_cpu_only():
    session = ort.InferenceSession(onnx_models.add_relu())
    assert session.get_providers() == [CPU]
    assert session.get_provider_options() == {CPU: {}}


def test_unavailable_provider_is_skipped_with_a_warning():
    # An EP of onnxruntime builds that this machine lacks: skipped with onnxruntime's warning.
    with pytest.warns(RuntimeWarning, match="'TensorrtExecutionProvider' is not in available provider names"):
        session = ort.InferenceSession(onnx_models.add_relu(), providers=["TensorrtExecutionProvider", CPU])
    assert session.get_providers() == [CPU]
    _run_add_relu(session)
    # A name no runtime knows: onnxruntime's "Unknown Provider Type" error.
    with pytest.raises(RuntimeError, match="Unknown Provider Type: NoSuchExecutionProvider"):
        ort.InferenceSession(onnx_models.add_relu(), providers=["NoSuchExecutionProvider", CPU])


def test_malformed_provider_arguments():
    model = onnx_models.add_relu()
    with pytest.raises(ValueError, match="same length"):
        ort.InferenceSession(model, providers=[CPU], provider_options=[{}, {}])
    with pytest.raises(ValueError, match="duplicate"):
        ort.InferenceSession(model, providers=[CPU, CPU])
    with pytest.raises(ValueError, match="strings or"):
        ort.InferenceSession(model, providers=[42])


@requires_testing_ep
def test_testing_provider_with_cpu_fallback():
    # Sub has no testing-device kernel: it falls back to the CPU EP.
    session = ort.InferenceSession(onnx_models.binary("Sub", shape=(2, 3)), providers=[TESTING])
    assert session.get_providers() == [TESTING, CPU]
    a = np.ones((2, 3), np.float32)
    np.testing.assert_array_equal(session.run(None, {"A": 3 * a, "B": a})[0], 2 * a)
    assert ("Sub", CPU) in [(op, ep) for _, op, ep, *_ in session.get_partition()]


@requires_testing_ep
def test_disabling_cpu_fallback():
    options = ort.SessionOptions()
    options.add_session_config_entry("session.disable_cpu_ep_fallback", "1")
    session = ort.InferenceSession(onnx_models.add_relu(), options, providers=[TESTING])
    assert session.get_providers() == [TESTING]
    _run_add_relu(session)
    with pytest.raises(ort.NotImplemented, match=r"Sub.*TestingExecutionProvider"):
        ort.InferenceSession(onnx_models.binary("Sub", shape=(2, 3)), options, providers=[TESTING])


@requires_testing_ep
def test_provider_options_as_tuples_or_list():
    model = onnx_models.add_relu()
    by_tuple = ort.InferenceSession(model, providers=[(TESTING, {"memory_limit_bytes": 1 << 30}), CPU])
    assert by_tuple.get_provider_options()[TESTING] == {"memory_limit_bytes": str(1 << 30)}
    by_list = ort.InferenceSession(model, providers=[TESTING, CPU],
                                   provider_options=[{"memory_limit_bytes": "1048576", "device_id": 0}, {}])
    assert by_list.get_providers() == [TESTING, CPU]
    _run_add_relu(by_list)
    with pytest.raises(ort.InvalidArgument, match="no device with device_id 5"):
        ort.InferenceSession(model, providers=[(TESTING, {"device_id": 5})])


@requires_testing_ep
def test_set_providers_recreates_the_session():
    session = ort.InferenceSession(onnx_models.add_relu())
    assert session.get_providers() == [CPU]
    session.set_providers([TESTING])
    assert session.get_providers() == [TESTING, CPU]
    _run_add_relu(session)
    session.set_providers([CPU])
    assert session.get_providers() == [CPU]
    _run_add_relu(session)


@requires_testing_ep
def test_selection_policy_and_ep_devices():
    options = ort.SessionOptions()
    options.set_provider_selection_policy(ort.OrtExecutionProviderDevicePolicy.PREFER_NPU)
    gpus = [p for p in ort.get_available_providers() if p == "CUDAExecutionProvider"]  # NPUs, then GPUs, then CPU
    assert ort.InferenceSession(onnx_models.add_relu(), options).get_providers() == [TESTING, *gpus, CPU]
    options.set_provider_selection_policy(ort.OrtExecutionProviderDevicePolicy.PREFER_CPU)
    assert ort.InferenceSession(onnx_models.add_relu(), options).get_providers()[0] == CPU
    by_devices = ort.SessionOptions()
    by_devices.add_provider_for_devices([d for d in ort.get_ep_devices() if d.ep_name == TESTING], {})
    session = ort.InferenceSession(onnx_models.add_relu(), by_devices)
    assert session.get_providers() == [TESTING, CPU]
    _run_add_relu(session)


def test_hardware_and_ep_devices():
    hardware = ort.get_hardware_devices()
    assert hardware[0].type == ort.OrtHardwareDeviceType.CPU
    assert isinstance(hardware[0].vendor_id, int) and isinstance(hardware[0].metadata, dict)
    ep_devices = ort.get_ep_devices()
    cpu = ep_devices[0]
    assert cpu.ep_name == CPU and cpu.ep_vendor == "Tessera"
    assert cpu.device.type == ort.OrtHardwareDeviceType.CPU
    assert cpu.memory_info(ort.OrtDeviceMemoryType.DEFAULT) == cpu.device_memory_info
    assert cpu.device_memory_info.is_host_readable and cpu.device_memory_info.device_type == "cpu"
    assert cpu.memory_info(ort.OrtDeviceMemoryType.HOST_ACCESSIBLE) is None
    assert hash(cpu.device_memory_info) == hash(ort.get_ep_devices()[0].device_memory_info)


@requires_testing_ep
def test_testing_device_is_discovered():
    npu = [h for h in ort.get_hardware_devices() if h.type == ort.OrtHardwareDeviceType.NPU]
    assert npu and npu[0].vendor_id == 0xFFFE and npu[0].device_id == 1
    testing = [d for d in ort.get_ep_devices() if d.ep_name == TESTING][0]
    assert testing.device.vendor_id == 0xFFFE
    assert testing.device_memory_info.device_type == "npu"
    assert testing.host_accessible_memory_info.memory_type == "host_accessible"
    assert testing.device_memory_info != testing.host_accessible_memory_info


def test_plugin_registration_errors(tmp_path):
    with pytest.raises(ort.NoSuchFile, match="cannot load EP library"):
        ort.register_execution_provider_library("bogus", str(tmp_path / "libtessera_bogus.so"))
    with pytest.raises(ort.InvalidArgument, match="no EP library is registered as 'bogus'"):
        ort.unregister_execution_provider_library("bogus")


@requires_testing_ep
def test_registering_a_name_twice_is_rejected():
    with pytest.raises(ort.InvalidArgument, match="already registered as 'testing'"):
        ort.register_execution_provider_library("testing", os.environ["TESSERA_TESTING_EP_PATH"])


def test_logger_severity():
    ort.set_default_logger_severity(3)
    with pytest.raises(ort.InvalidArgument):
        ort.set_default_logger_severity(7)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        ort.set_default_logger_severity(2)
