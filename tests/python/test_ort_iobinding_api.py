"""The cases of ONNX Runtime's own IOBinding API tests (onnxruntime/test/python/onnxruntime_test_python_iobinding.py,
MIT License, Microsoft), one test here per test there, written for Tessera: the same calls through the `onnxruntime`
names Tessera provides (InferenceSession.io_binding, and the capi's SessionIOBinding / OrtValue / OrtDevice taking a
session's native object), the same inputs and expected values, on every device present: the simulated testing
device in CI (where ONNX Runtime's run on CUDA or DirectML) and CUDA where a GPU is. Their model mul_1.onnx
(Y = X * W, W = [[1, 2], [3, 4], [5, 6]], float [3, 2]) is built here with the onnx package.
"""

import numpy as np
import pytest
from onnx import TensorProto, helper

import tessera as onnxrt
from tessera.capi._pybind_state import OrtDevice as C_OrtDevice
from tessera.capi._pybind_state import OrtValue as C_OrtValue
from tessera.capi._pybind_state import OrtValueVector, SessionIOBinding

# (device name, EP, OrtDevice type): the devices ONNX Runtime's file loops over, here the ones Tessera has.
DEVICES = [("testing", "TestingExecutionProvider", C_OrtDevice.testing),
           ("cuda", "CUDAExecutionProvider", C_OrtDevice.cuda)]
DEVICE_IDS = [d[0] for d in DEVICES]

INPUT = np.array([[1.0, 2.0], [3.0, 4.0], [5.0, 6.0]], dtype=np.float32)
ALTERNATE_INPUT = np.array([[2.0, 4.0], [6.0, 8.0], [10.0, 12.0]], dtype=np.float32)
W = np.array([[1.0, 2.0], [3.0, 4.0], [5.0, 6.0]], dtype=np.float32)
EXPECTED = np.array([[1.0, 4.0], [9.0, 16.0], [25.0, 36.0]], dtype=np.float32)
EXPECTED_ALTERNATE = np.array([[2.0, 8.0], [18.0, 32.0], [50.0, 72.0]], dtype=np.float32)

# numpy element type -> ONNX element type, for the Identity models of the element-type test.
ELEMENT_TYPES = {np.float32: TensorProto.FLOAT, np.float64: TensorProto.DOUBLE, np.int32: TensorProto.INT32,
                 np.uint32: TensorProto.UINT32, np.int64: TensorProto.INT64, np.uint64: TensorProto.UINT64,
                 np.int16: TensorProto.INT16, np.uint16: TensorProto.UINT16, np.int8: TensorProto.INT8,
                 np.uint8: TensorProto.UINT8, np.float16: TensorProto.FLOAT16, np.bool_: TensorProto.BOOL}


def mul_1():
    x = helper.make_tensor_value_info("X", TensorProto.FLOAT, [3, 2])
    y = helper.make_tensor_value_info("Y", TensorProto.FLOAT, [3, 2])
    w = helper.make_tensor("W", TensorProto.FLOAT, [3, 2], W.ravel().tolist())
    graph = helper.make_graph([helper.make_node("Mul", ["X", "W"], ["Y"])], "mul_1", [x], [y], [w])
    return helper.make_model(graph, opset_imports=[helper.make_operatorsetid("", 17)]).SerializeToString()


def identity(elem):
    x = helper.make_tensor_value_info("X", elem, [None, 2])
    y = helper.make_tensor_value_info("Y", elem, [None, 2])
    graph = helper.make_graph([helper.make_node("Identity", ["X"], ["Y"])], "lr", [x], [y])
    return helper.make_model(graph, producer_name="dummy", ir_version=7, producer_version="0",
                             opset_imports=[helper.make_operatorsetid("", 17)]).SerializeToString()


def require(provider):
    if provider not in onnxrt.get_available_providers():
        pytest.skip(f"{provider} is not available here")


def session_on(provider):
    return onnxrt.InferenceSession(mul_1(), providers=[provider, "CPUExecutionProvider"])


# test_bind_input_to_cpu_arr
@pytest.mark.parametrize("device,provider,_", DEVICES, ids=DEVICE_IDS)
def test_bind_input_to_cpu_arr(device, provider, _):
    require(provider)
    session = session_on(provider)
    io_binding = session.io_binding()
    io_binding.bind_cpu_input("X", INPUT)
    io_binding.bind_output("Y")
    session.run_with_iobinding(io_binding)
    io_binding.synchronize_outputs()
    assert np.array_equal(EXPECTED, io_binding.copy_outputs_to_cpu()[0])


# test_bind_input_types: Identity over 12 element types, on the CPU and on the device, bound as an OrtValue and by
# pointer through the native SessionIOBinding with OrtDevice objects.
@pytest.mark.parametrize("device,provider,device_type", DEVICES, ids=DEVICE_IDS)
def test_bind_input_types(device, provider, device_type):
    require(provider)
    places = [(C_OrtDevice(C_OrtDevice.cpu(), C_OrtDevice.default_memory(), 0), ["CPUExecutionProvider"]),
              (C_OrtDevice(device_type(), C_OrtDevice.default_memory(), 0), [provider])]
    for inner_device, providers in places:
        for dtype, elem in ELEMENT_TYPES.items():
            x = np.arange(8).reshape((-1, 2)).astype(dtype)
            sess = onnxrt.InferenceSession(identity(elem), providers=providers)
            bind = SessionIOBinding(sess._sess)
            ort_value = C_OrtValue.ortvalue_from_numpy(x, inner_device)
            bind.bind_ortvalue_input("X", ort_value)
            bind.bind_output("Y", inner_device)
            sess._sess.run_with_iobinding(bind, None)
            outputs = bind.get_outputs()
            assert isinstance(outputs, OrtValueVector)
            np.testing.assert_almost_equal(x, outputs[0].numpy(), err_msg=f"{dtype} on {inner_device}")

            bind = SessionIOBinding(sess._sess)
            bind.bind_input("X", inner_device, dtype, x.shape, ort_value.data_ptr())
            bind.bind_output("Y", inner_device)
            sess._sess.run_with_iobinding(bind, None)
            np.testing.assert_almost_equal(x, bind.get_outputs()[0].numpy(), err_msg=f"{dtype} on {inner_device}")


# test_bind_input_only
@pytest.mark.parametrize("device,provider,_", DEVICES, ids=DEVICE_IDS)
def test_bind_input_only(device, provider, _):
    require(provider)
    value = onnxrt.OrtValue.ortvalue_from_numpy(INPUT, device, 0)
    session = session_on(provider)
    io_binding = session.io_binding()
    io_binding.bind_input("X", device, 0, np.float32, [3, 2], value.data_ptr())
    io_binding.synchronize_inputs()
    io_binding.bind_output("Y")
    session.run_with_iobinding(io_binding)
    io_binding.synchronize_outputs()
    assert np.array_equal(EXPECTED, io_binding.copy_outputs_to_cpu()[0])


# test_bind_input_and_preallocated_output
@pytest.mark.parametrize("device,provider,_", DEVICES, ids=DEVICE_IDS)
def test_bind_input_and_preallocated_output(device, provider, _):
    require(provider)
    value = onnxrt.OrtValue.ortvalue_from_numpy(INPUT, device, 0)
    session = session_on(provider)
    io_binding = session.io_binding()
    io_binding.bind_input("X", device, 0, np.float32, [3, 2], value.data_ptr())
    output = onnxrt.OrtValue.ortvalue_from_shape_and_type([3, 2], np.float32, device, 0)
    io_binding.bind_output("Y", device, 0, np.float32, [3, 2], output.data_ptr())
    io_binding.synchronize_inputs()
    session.run_with_iobinding(io_binding)
    io_binding.synchronize_outputs()
    assert np.array_equal(EXPECTED, io_binding.copy_outputs_to_cpu()[0])
    assert np.array_equal(EXPECTED, output.numpy())  # written into the caller's buffer


# test_bind_input_and_non_preallocated_output
@pytest.mark.parametrize("device,provider,_", DEVICES, ids=DEVICE_IDS)
def test_bind_input_and_non_preallocated_output(device, provider, _):
    require(provider)
    session = session_on(provider)
    io_binding = session.io_binding()
    value = onnxrt.OrtValue.ortvalue_from_numpy(INPUT, device, 0)
    io_binding.bind_input("X", device, 0, np.float32, [3, 2], value.data_ptr())
    io_binding.bind_output("Y", device)
    io_binding.synchronize_inputs()
    session.run_with_iobinding(io_binding)
    io_binding.synchronize_outputs()
    for _ in range(2):  # get_outputs may be called as often as wanted
        outputs = io_binding.get_outputs()
        assert len(outputs) == 1
        assert outputs[0].device_name() == device
        assert np.array_equal(EXPECTED, outputs[0].numpy())
    alternate = onnxrt.OrtValue.ortvalue_from_numpy(ALTERNATE_INPUT, device, 0)
    io_binding.bind_input("X", device, 0, np.float32, [3, 2], alternate.data_ptr())
    io_binding.synchronize_inputs()
    session.run_with_iobinding(io_binding)
    io_binding.synchronize_outputs()
    outputs = io_binding.get_outputs()
    assert len(outputs) == 1
    assert outputs[0].device_name() == device
    assert np.array_equal(EXPECTED_ALTERNATE, outputs[0].numpy())


# test_bind_input_and_bind_output_with_ortvalues
@pytest.mark.parametrize("device,provider,_", DEVICES, ids=DEVICE_IDS)
def test_bind_input_and_bind_output_with_ortvalues(device, provider, _):
    require(provider)
    session = session_on(provider)
    io_binding = session.io_binding()
    io_binding.bind_ortvalue_input("X", onnxrt.OrtValue.ortvalue_from_numpy(INPUT, device, 0))
    output = onnxrt.OrtValue.ortvalue_from_shape_and_type([3, 2], np.float32, device, 0)
    io_binding.bind_ortvalue_output("Y", output)
    io_binding.synchronize_inputs()
    session.run_with_iobinding(io_binding)
    io_binding.synchronize_outputs()
    assert np.array_equal(EXPECTED, output.numpy())
    io_binding.bind_ortvalue_input("X", onnxrt.OrtValue.ortvalue_from_numpy(ALTERNATE_INPUT, device, 0))
    io_binding.synchronize_inputs()
    session.run_with_iobinding(io_binding)
    io_binding.synchronize_outputs()
    assert np.array_equal(EXPECTED_ALTERNATE, output.numpy())
