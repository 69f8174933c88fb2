"""IOBinding on the CPU and across the simulated testing device."""

import numpy as np
import pytest

from helpers import requires_testing_ep
import onnx_models
import tessera as ort

TESTING = "TestingExecutionProvider"


def _inputs(shape=(2, 3)):
    rng = np.random.default_rng(3)
    return rng.standard_normal(shape, dtype=np.float32), rng.standard_normal(shape, dtype=np.float32)


def test_cpu_binding_with_numpy_inputs_and_cpu_outputs():
    session = ort.InferenceSession(onnx_models.add_relu())
    a, b = _inputs()
    binding = session.io_binding()
    binding.bind_cpu_input("A", a)
    binding.bind_cpu_input("B", b)
    binding.bind_output("S")
    binding.bind_output("R", "cpu")
    session.run_with_iobinding(binding)
    s, r = binding.copy_outputs_to_cpu()
    np.testing.assert_allclose(s, a + b, rtol=1e-6)
    np.testing.assert_allclose(r, np.maximum(a + b, 0), rtol=1e-6)
    outputs = binding.get_outputs()
    assert [o.device_name() for o in outputs] == ["cpu", "cpu"]
    np.testing.assert_allclose(outputs[1].numpy(), r)


def test_bind_input_and_output_by_pointer_writes_in_place():
    session = ort.InferenceSession(onnx_models.add_relu())
    a, b = _inputs()
    result = np.zeros((2, 3), np.float32)
    binding = session.io_binding()
    binding.bind_input("A", "cpu", 0, np.float32, a.shape, a.ctypes.data)
    binding.bind_input("B", "cpu", 0, np.float32, list(b.shape), b.ctypes.data)
    binding.bind_output("S", "cpu", 0, np.float32, result.shape, result.ctypes.data)
    binding.bind_output("R")
    session.run_with_iobinding(binding)
    np.testing.assert_allclose(result, a + b, rtol=1e-6)
    assert binding.get_outputs()[0].data_ptr() == result.ctypes.data
    with pytest.raises(ort.InvalidArgument, match="needs element_type and shape"):
        binding.bind_output("S", "cpu", 0, None, None, result.ctypes.data)


def test_preallocated_ortvalue_output_and_rebinding_inputs():
    session = ort.InferenceSession(onnx_models.add_relu())
    out = ort.OrtValue.ortvalue_from_shape_and_type([2, 3], np.float32)
    binding = session.io_binding()
    binding.bind_output("R")
    binding.bind_ortvalue_output("S", out)
    for scale in (1.0, 2.0):
        a, b = _inputs()
        binding.bind_ortvalue_input("A", ort.OrtValue.ortvalue_from_numpy(a * scale))
        binding.bind_cpu_input("B", b * scale)
        session.run_with_iobinding(binding)
        np.testing.assert_allclose(out.numpy(), (a + b) * scale, rtol=1e-6)
    copies = binding.copy_outputs_to_cpu()
    assert copies[1].ctypes.data != out.data_ptr()  # copy_outputs_to_cpu copies


def test_clearing_bindings():
    session = ort.InferenceSession(onnx_models.add_relu())
    a, b = _inputs()
    binding = session.io_binding()
    binding.bind_cpu_input("A", a)
    binding.bind_cpu_input("B", b)
    binding.bind_output("R")
    session.run_with_iobinding(binding)
    binding.clear_binding_outputs()
    assert binding.get_outputs() == []
    binding.clear_binding_inputs()
    binding.bind_output("R")
    with pytest.raises(ort.InvalidArgument, match="input 'A' was not given a value"):
        session.run_with_iobinding(binding)
    with pytest.raises(ort.InvalidArgument, match="model has no input 'nope'"):
        binding.bind_cpu_input("nope", a)
    with pytest.raises(ort.InvalidArgument, match="model has no output 'nope'"):
        binding.bind_output("nope")


@requires_testing_ep
def test_inputs_and_outputs_on_the_testing_device():
    session = ort.InferenceSession(onnx_models.add_relu(), providers=[TESTING])
    assert session.get_providers() == [TESTING, "CPUExecutionProvider"]
    assert session.get_input_device("A") == "testing"
    a, b = _inputs()
    binding = session.io_binding()
    binding.bind_ortvalue_input("A", ort.OrtValue.ortvalue_from_numpy(a, "testing", 0))
    binding.bind_ortvalue_input("B", ort.OrtValue.ortvalue_from_numpy(b, "testing", 0))
    binding.bind_output("S", "testing", 0)
    binding.bind_output("R", "testing", 0)
    session.run_with_iobinding(binding)
    outputs = binding.get_outputs()
    assert [o.device_name() for o in outputs] == ["testing", "testing"]
    s, r = binding.copy_outputs_to_cpu()
    np.testing.assert_allclose(s, a + b, rtol=1e-6)
    np.testing.assert_allclose(r, np.maximum(a + b, 0), rtol=1e-6)
    np.testing.assert_allclose(outputs[1].numpy(), r)


@requires_testing_ep
def test_device_output_preallocated_is_written_in_place_and_updated_inputs_are_seen():
    session = ort.InferenceSession(onnx_models.add_relu(), providers=[TESTING])
    a, b = _inputs()
    device_a = ort.OrtValue.ortvalue_from_numpy(a, "testing", 0)
    device_b = ort.OrtValue.ortvalue_from_numpy(b, "testing", 0)
    device_r = ort.OrtValue.ortvalue_from_shape_and_type([2, 3], np.float32, "testing", 0)
    binding = session.io_binding()
    binding.bind_ortvalue_input("A", device_a)
    binding.bind_ortvalue_input("B", device_b)
    binding.bind_ortvalue_output("R", device_r)
    binding.bind_output("S", "cpu")
    session.run_with_iobinding(binding)
    assert binding.get_outputs()[0].data_ptr() == device_r.data_ptr()
    np.testing.assert_allclose(device_r.numpy(), np.maximum(a + b, 0), rtol=1e-6)
    device_a.update_inplace(-a)  # the binding sees the new contents on the next run
    session.run_with_iobinding(binding)
    np.testing.assert_allclose(device_r.numpy(), np.maximum(b - a, 0), rtol=1e-6)
    assert binding.get_outputs()[1].device_name() == "cpu"


@requires_testing_ep
def test_cpu_inputs_to_a_device_session_and_unsynchronized_runs():
    session = ort.InferenceSession(onnx_models.add_relu(), providers=[TESTING])
    a, b = _inputs()
    binding = session.io_binding()
    binding.bind_cpu_input("A", a)
    binding.bind_cpu_input("B", b)
    binding.bind_output("R", "testing", 0)
    binding.bind_output("S", "cpu")
    run_options = ort.RunOptions()
    run_options.add_run_config_entry("disable_synchronize_execution_providers", "1")
    binding.synchronize_inputs()
    session.run_with_iobinding(binding, run_options)
    binding.synchronize_outputs()
    r, s = binding.copy_outputs_to_cpu()
    np.testing.assert_allclose(r, np.maximum(a + b, 0), rtol=1e-6)
    np.testing.assert_allclose(s, a + b, rtol=1e-6)


@requires_testing_ep
def test_bind_input_by_pointer_on_the_testing_device():
    session = ort.InferenceSession(onnx_models.add_relu(), providers=[TESTING])
    a, b = _inputs()
    device_a = ort.OrtValue.ortvalue_from_numpy(a, "testing", 0)
    binding = session.io_binding()
    binding.bind_input("A", "testing", 0, np.float32, [2, 3], device_a.data_ptr())
    binding.bind_cpu_input("B", b)
    binding.bind_output("S")
    binding.bind_output("R")
    session.run_with_iobinding(binding)
    s, r = binding.copy_outputs_to_cpu()
    np.testing.assert_allclose(s, a + b, rtol=1e-6)
