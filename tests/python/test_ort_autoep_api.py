"""The cases of ONNX Runtime's EP-agnostic device API tests (onnxruntime/test/python/onnxruntime_test_python_autoep.py,
MIT License, Microsoft), one test here per test there, written for Tessera through the `onnxruntime` names it
provides. onnxruntime's tests load its example plugin EP (example_plugin_ep, a CPU EP that pretends to own GPU
memory, vendor "Contoso"); here the plugin is Tessera's simulated-device EP (libtessera_testing_ep.so: a device of
its own, NPU type, with device and host-accessible memories), registered under the test's name, and the expected
values are that plugin's. mul_1.onnx is built with the onnx package. The CUDA cases run where Tessera's CUDA EP is.
Differences, by design:
- OrtValue.device_name() of host-accessible memory is "cpu" in Tessera (it is host-readable memory), so the cases
  that assert it is not check the value's memory_info instead.
- The delegate's exception arrives as Tessera's Fail (InvalidArgument), naming the delegate and the message.
- A memory no registered EP has is refused naming it ("unknown device 'cuda_pinned' with id 0 (available: ...)").
"""

import os

import numpy as np
import pytest
from onnx import TensorProto, helper

import tessera as onnxrt
from helpers import requires_testing_ep
from tessera.capi.onnxruntime_pybind11_state import Fail

EXAMPLE_EP_NAME = "example_ep"
TESTING = "TestingExecutionProvider"
X = np.array([[1.0, 2.0], [3.0, 4.0], [5.0, 6.0]], dtype=np.float32)
EXPECTED = np.array([[1.0, 4.0], [9.0, 16.0], [25.0, 36.0]], dtype=np.float32)


@pytest.fixture(scope="module")
def mul_1():
    """Y = X * X, X [3, 2] (onnxruntime's testdata mul_1.onnx)."""
    graph = helper.make_graph([helper.make_node("Mul", ["X", "X"], ["Y"])], "mul_1",
                              [helper.make_tensor_value_info("X", TensorProto.FLOAT, [3, 2])],
                              [helper.make_tensor_value_info("Y", TensorProto.FLOAT, [3, 2])])
    model = helper.make_model(graph, opset_imports=[helper.make_operatorsetid("", 13)], producer_name="tests")
    return model.SerializeToString()


@pytest.fixture
def example_ep():
    """The simulated-device plugin registered as EXAMPLE_EP_NAME for one test (the suite's own 'testing' registration
    is lifted meanwhile and restored after); yields its OrtEpDevice."""
    library = os.environ.get("TESSERA_TESTING_EP_PATH")
    if not library:
        pytest.skip("the simulated testing EP library is not built (TESSERA_TESTING_EP_PATH)")
    had_testing = any(d.ep_name == TESTING for d in onnxrt.get_ep_devices())
    if had_testing:
        onnxrt.unregister_execution_provider_library("testing")
    onnxrt.register_execution_provider_library(EXAMPLE_EP_NAME, os.path.realpath(library))
    try:
        device = next(d for d in onnxrt.get_ep_devices() if d.ep_name == TESTING)
        yield device
    finally:
        if any(d.ep_name == TESTING for d in onnxrt.get_ep_devices()):
            onnxrt.unregister_execution_provider_library(EXAMPLE_EP_NAME)
        if had_testing:
            onnxrt.register_execution_provider_library("testing", library)


def _cuda_device():
    return next((d for d in onnxrt.get_ep_devices() if d.ep_name == "CUDAExecutionProvider"), None)


def test_register_unregister_cuda_ep_library():
    """Tessera's CUDA EP is a plugin as onnxruntime's is: unregistering and registering its library again works."""
    if _cuda_device() is None:
        pytest.skip("needs Tessera's CUDA EP (a GPU)")
    library = os.path.join(os.path.dirname(os.environ.get("TESSERA_TESTING_EP_PATH", "")), "libtessera_cuda.so")
    if not os.path.isfile(library):
        pytest.skip("libtessera_cuda.so is not beside the testing EP library")
    onnxrt.unregister_execution_provider_library("cuda")
    assert _cuda_device() is None
    onnxrt.register_execution_provider_library("cuda", library)
    assert _cuda_device() is not None


def test_cuda_ep_register_and_inference(mul_1):
    device = _cuda_device()
    if device is None:
        pytest.skip("needs Tessera's CUDA EP (a GPU)")
    assert device.device.type == onnxrt.OrtHardwareDeviceType.GPU
    sess_options = onnxrt.SessionOptions()
    sess_options.add_provider_for_devices([device], {"prefer_nhwc": "1"})
    assert sess_options.has_providers()
    sess = onnxrt.InferenceSession(mul_1, sess_options=sess_options)
    assert sess.get_providers()[0] == "CUDAExecutionProvider"
    np.testing.assert_allclose(sess.run([], {"X": X})[0], EXPECTED, rtol=1e-05, atol=1e-08)


def test_cuda_prefer_gpu_and_inference(mul_1):
    if _cuda_device() is None:
        pytest.skip("needs Tessera's CUDA EP (a GPU)")
    sess_options = onnxrt.SessionOptions()
    sess_options.set_provider_selection_policy(onnxrt.OrtExecutionProviderDevicePolicy.PREFER_GPU)
    assert sess_options.has_providers()
    sess = onnxrt.InferenceSession(mul_1, sess_options=sess_options)
    assert sess.get_providers()[0] == "CUDAExecutionProvider"
    np.testing.assert_allclose(sess.run([], {"X": X})[0], EXPECTED, rtol=1e-05, atol=1e-08)


@requires_testing_ep
def test_ep_selection_delegate_and_inference(mul_1):
    """onnxruntime's test_cuda_ep_selection_delegate_and_inference, selecting the simulated device (and CUDA's
    where it is the case's subject: the delegate picks the first non-CPU device it is given)."""
    seen = {}

    def my_delegate(ep_devices, model_metadata, runtime_metadata, max_selections):
        seen["model_metadata"] = dict(model_metadata)
        seen["names"] = [d.ep_name for d in ep_devices]
        assert len(ep_devices) >= 2
        assert max_selections >= 2
        chosen = next(d for d in ep_devices if d.ep_name == TESTING)
        return [chosen, ep_devices[-1]]  # and the CPU EP's device, always last

    sess_options = onnxrt.SessionOptions()
    assert not sess_options.has_providers()
    sess_options.set_provider_selection_policy_delegate(my_delegate)
    assert sess_options.has_providers()
    sess = onnxrt.InferenceSession(mul_1, sess_options=sess_options)
    assert len(seen["model_metadata"]) > 0
    assert seen["model_metadata"]["producer_name"] == "tests"
    assert seen["names"][-1] == "CPUExecutionProvider"
    assert sess.get_providers() == [TESTING, "CPUExecutionProvider"]
    np.testing.assert_allclose(sess.run([], {"X": X})[0], EXPECTED, rtol=1e-05, atol=1e-08)


def test_custom_ep_selection_delegate_that_raises_error(mul_1):
    custom_error_message = "MY ERROR"

    def my_delegate_that_fails(ep_devices, model_metadata, runtime_metadata, max_selections):
        assert len(ep_devices) >= 1
        raise ValueError(custom_error_message)

    sess_options = onnxrt.SessionOptions()
    sess_options.set_provider_selection_policy_delegate(my_delegate_that_fails)
    with pytest.raises(Fail) as context:
        onnxrt.InferenceSession(mul_1, sess_options=sess_options)
    assert custom_error_message in str(context.value)
    # A delegate returning something else than the devices it was given is refused too.
    sess_options.set_provider_selection_policy_delegate(lambda devices, *rest: ["CPUExecutionProvider"])
    with pytest.raises(Fail, match="OrtEpDevice"):
        onnxrt.InferenceSession(mul_1, sess_options=sess_options)
    sess_options.set_provider_selection_policy_delegate(lambda devices, *rest: [])
    with pytest.raises(Fail, match="selected no EP device"):
        onnxrt.InferenceSession(mul_1, sess_options=sess_options)


def test_example_plugin_ep_devices(example_ep, mul_1):
    test_ep_device = example_ep
    assert any(d.ep_name == "CPUExecutionProvider" for d in onnxrt.get_ep_devices())
    # The getters; expected values are the simulated-device plugin's (src/providers/testing/testing_ep.cc).
    assert test_ep_device.ep_vendor == "Tessera"
    assert isinstance(test_ep_device.ep_metadata, dict)
    assert isinstance(test_ep_device.ep_options, dict)
    hw_device = test_ep_device.device
    assert hw_device.type == onnxrt.OrtHardwareDeviceType.NPU
    assert hw_device.vendor_id == 0xFFFE
    assert hw_device.device_id >= 0
    assert len(hw_device.vendor) > 0
    assert len(hw_device.metadata) > 0
    test_mem_info = test_ep_device.memory_info(onnxrt.OrtDeviceMemoryType.DEFAULT)
    assert test_mem_info is not None
    del test_mem_info
    test_sync_stream = test_ep_device.create_sync_stream()
    assert test_sync_stream is not None
    assert test_sync_stream.get_handle() is not None
    del test_sync_stream

    sess_options = onnxrt.SessionOptions()
    sess_options.add_provider_for_devices([test_ep_device], {})
    sess_options.log_severity_level = 1  # INFO
    assert sess_options.has_providers()
    sess = onnxrt.InferenceSession(mul_1, sess_options=sess_options)
    assert sess.get_providers()[0] == TESTING
    np.testing.assert_allclose(sess.run([], {"X": X})[0], EXPECTED, rtol=1e-05, atol=1e-08)
    del sess  # before the library is unregistered


def test_example_plugin_ep_data_transfer(example_ep):
    data = X
    data2 = data + 1
    # Device memory of the simulated device, named as onnxruntime names devices ("testing", its EP's short name).
    device_value = onnxrt.OrtValue.ortvalue_from_numpy(data, "testing", 0)
    assert device_value.memory_info() == example_ep.memory_info(onnxrt.OrtDeviceMemoryType.DEFAULT)
    np.testing.assert_equal(device_value.numpy(), data)  # copied back to the host
    device_value.update_inplace(data2)
    np.testing.assert_equal(device_value.numpy(), data2)
    device_value = None  # before the library is unregistered (its allocator goes with it)


def test_copy_tensors(example_ep):
    a = np.random.rand(3, 2).astype(np.float32)
    b = np.random.rand(3, 2).astype(np.float32)
    a_device = onnxrt.OrtValue.ortvalue_from_numpy(a, "testing", 0)
    b_device = onnxrt.OrtValue.ortvalue_from_numpy(b, "testing", 0)
    a_cpu_copy = onnxrt.OrtValue.ortvalue_from_shape_and_type(a.shape, a.dtype)
    b_cpu_copy = onnxrt.OrtValue.ortvalue_from_shape_and_type(b.shape, b.dtype)
    src_list = [a_device, b_device]
    dst_list = [a_cpu_copy, b_cpu_copy]
    onnxrt.copy_tensors(src_list, dst_list, None)  # no stream: synchronous
    del src_list, a_device, b_device
    np.testing.assert_array_equal(a_cpu_copy.numpy(), a)
    np.testing.assert_array_equal(b_cpu_copy.numpy(), b)


def test_ortvalue_from_shape_and_type_host_accessible_numpy_dtype(example_ep):
    mem_info = example_ep.memory_info(onnxrt.OrtDeviceMemoryType.HOST_ACCESSIBLE)
    assert mem_info is not None
    ort_value = onnxrt.OrtValue.ortvalue_from_shape_and_type([3, 2], np.float32, memory_info=mem_info)
    assert ort_value.shape() == [3, 2]
    assert ort_value.data_type() == "tensor(float)"
    assert ort_value.memory_info() == mem_info  # (onnxruntime: device_name() is not "cpu"; see the module doc)
    result = ort_value.numpy()
    assert result.shape == (3, 2)
    assert result.dtype == np.float32
    del ort_value


def test_ortvalue_from_shape_and_type_host_accessible_onnx_int_type(example_ep):
    mem_info = example_ep.memory_info(onnxrt.OrtDeviceMemoryType.HOST_ACCESSIBLE)
    ort_value = onnxrt.OrtValue.ortvalue_from_shape_and_type([4], TensorProto.FLOAT, memory_info=mem_info)
    assert ort_value.shape() == [4]
    assert ort_value.data_type() == "tensor(float)"
    assert ort_value.numpy().dtype == np.float32
    del ort_value


def test_ortvalue_host_accessible_zero_copy_numpy_view(example_ep):
    # Writing through one numpy view must be visible through the next: numpy() of host-accessible memory is a view.
    mem_info = example_ep.memory_info(onnxrt.OrtDeviceMemoryType.HOST_ACCESSIBLE)
    ort_value = onnxrt.OrtValue.ortvalue_from_shape_and_type([2, 3], np.float32, memory_info=mem_info)
    ort_value.numpy().fill(7.5)
    np.testing.assert_array_equal(ort_value.numpy(), np.full((2, 3), 7.5, dtype=np.float32))
    cpu_value = onnxrt.OrtValue.ortvalue_from_shape_and_type([2, 3], np.float32)
    cpu_value.numpy().fill(-1.25)
    np.testing.assert_array_equal(cpu_value.numpy(), np.full((2, 3), -1.25, dtype=np.float32))
    del ort_value, cpu_value


def test_ortvalue_from_shape_and_type_memory_info_no_allocator():
    if _cuda_device() is not None:
        pytest.skip("the bogus memory names a GPU's pinned memory, which this machine has")
    bogus_mem_info = onnxrt.OrtMemoryInfo.create_v2(
        "Bogus", onnxrt.OrtMemoryInfoDeviceType.GPU, 0xDEAD, 0, onnxrt.OrtDeviceMemoryType.HOST_ACCESSIBLE, 0,
        onnxrt.OrtAllocatorType.ORT_DEVICE_ALLOCATOR)
    with pytest.raises(onnxrt.InvalidArgument, match="unknown device 'cuda_pinned' with id 0"):
        onnxrt.OrtValue.ortvalue_from_shape_and_type([2], np.float32, memory_info=bogus_mem_info)
    with pytest.raises(onnxrt.InvalidArgument, match="memory_info must be"):
        onnxrt.OrtValue.ortvalue_from_shape_and_type([2], np.float32, memory_info="cpu")


def test_ortvalue_from_shape_and_onnx_type_memory_info_string_rejected(example_ep):
    mem_info = example_ep.memory_info(onnxrt.OrtDeviceMemoryType.HOST_ACCESSIBLE)
    with pytest.raises(onnxrt.InvalidArgument, match="string tensors can only live in host memory"):
        onnxrt.OrtValue.ortvalue_from_shape_and_type([2], TensorProto.STRING, memory_info=mem_info)


def test_ortvalue_from_shape_and_type_memory_info_overrides_device_args(example_ep):
    mem_info = example_ep.memory_info(onnxrt.OrtDeviceMemoryType.HOST_ACCESSIBLE)
    # Bogus device arguments beside a valid memory_info are ignored.
    ort_value = onnxrt.OrtValue.ortvalue_from_shape_and_type(
        [3], np.float32, device_type="cuda", device_id=99, vendor_id=0xFFFF, memory_info=mem_info)
    baseline = onnxrt.OrtValue.ortvalue_from_shape_and_type([3], np.float32, memory_info=mem_info)
    assert ort_value.memory_info() == baseline.memory_info() == mem_info
    assert ort_value.device_name() == baseline.device_name()
    del ort_value, baseline


def test_ortvalue_from_shape_and_type_default_memory_info(example_ep):
    # Device memory: numpy() copies through the plugin's data transfer rather than viewing it.
    mem_info = example_ep.memory_info(onnxrt.OrtDeviceMemoryType.DEFAULT)
    assert mem_info is not None
    ort_value = onnxrt.OrtValue.ortvalue_from_shape_and_type([2, 3], np.float32, memory_info=mem_info)
    assert ort_value.shape() == [2, 3]
    assert ort_value.data_type() == "tensor(float)"
    assert ort_value.device_name().lower() != "cpu"
    arr = ort_value.numpy()
    assert arr.shape == (2, 3)
    assert arr.dtype == np.float32
    del ort_value
