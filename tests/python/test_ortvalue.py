"""OrtValue on the host (zero copy) and on the simulated testing device."""

import numpy as np
import pytest

from helpers import requires_testing_ep
import tessera as ort


def test_from_numpy_shares_host_memory():
    array = np.arange(12, dtype=np.float32).reshape(3, 4)
    value = ort.OrtValue.ortvalue_from_numpy(array)
    assert value.data_ptr() == array.ctypes.data
    assert value.device_name() == "cpu"
    assert value.shape() == [3, 4]
    assert value.data_type() == "tensor(float)"
    assert value.element_type() == 1  # onnxruntime's: the ONNX element type (TensorProto.FLOAT)
    assert value.numpy_type() is np.float32
    assert value.is_tensor() and value.has_value()
    view = value.numpy()
    assert view.ctypes.data == array.ctypes.data  # numpy() of host memory is a view too
    array[0, 0] = 42
    assert value.numpy()[0, 0] == 42
    del array, view  # the value keeps the memory alive
    assert value.numpy()[0, 1] == 1


def test_from_numpy_copies_non_contiguous_arrays():
    base = np.arange(12, dtype=np.int64).reshape(3, 4)
    value = ort.OrtValue.ortvalue_from_numpy(base.T)
    assert value.shape() == [4, 3]
    assert value.data_ptr() != base.ctypes.data
    np.testing.assert_array_equal(value.numpy(), base.T)


# TensorProto.DataType of each numpy type (what onnxruntime's OrtValue.element_type returns).
ONNX_TYPES = {np.float32: 1, np.uint8: 2, np.int8: 3, np.uint16: 4, np.int16: 5, np.int32: 6, np.int64: 7, np.bool_: 9,
              np.float16: 10, np.float64: 11, np.uint32: 12, np.uint64: 13}


@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.float16, np.int8, np.int16, np.int32, np.int64,
                                   np.uint8, np.uint16, np.uint32, np.uint64, np.bool_])
def test_element_types_round_trip(dtype):
    array = (np.arange(6) % 3).astype(dtype).reshape(2, 3)
    value = ort.OrtValue.ortvalue_from_numpy(array)
    assert value.numpy_type() is np.dtype(dtype).type
    assert value.element_type() == ONNX_TYPES[np.dtype(dtype).type]
    out = value.numpy()
    assert out.dtype == array.dtype
    np.testing.assert_array_equal(out, array)


def test_from_shape_and_type_and_update_inplace_on_cpu():
    value = ort.OrtValue.ortvalue_from_shape_and_type([2, 2], np.float32)
    pointer = value.data_ptr()
    value.update_inplace(np.array([[1, 2], [3, 4]], np.float32))
    assert value.data_ptr() == pointer
    np.testing.assert_array_equal(value.numpy(), [[1, 2], [3, 4]])
    by_string = ort.OrtValue.ortvalue_from_shape_and_type((3,), "tensor(int64)")
    assert by_string.data_type() == "tensor(int64)" and by_string.shape() == [3]
    with pytest.raises(ort.InvalidArgument, match="update_inplace"):
        value.update_inplace(np.zeros((3,), np.float32))
    with pytest.raises(ort.InvalidArgument, match="update_inplace"):
        value.update_inplace(np.zeros((2, 2), np.int32))


def test_unknown_device_is_rejected_with_the_available_ones():
    with pytest.raises(ort.InvalidArgument, match=r"unknown device 'tpu'.*available: cpu"):
        ort.OrtValue.ortvalue_from_numpy(np.zeros(2, np.float32), "tpu", 0)


def test_string_values():
    value = ort.OrtValue.ortvalue_from_numpy(np.array(["a", "bc"]))
    assert value.data_type() == "tensor(string)"
    assert value.numpy().tolist() == ["a", "bc"]


@requires_testing_ep
def test_values_on_the_testing_device():
    array = np.arange(6, dtype=np.float32).reshape(2, 3)
    value = ort.OrtValue.ortvalue_from_numpy(array, "testing", 0)
    assert value.device_name() == "testing"
    assert value.data_ptr() != array.ctypes.data  # copied into device memory
    assert value.memory_info().device_type == "npu"
    assert not value.memory_info().is_host_readable
    np.testing.assert_array_equal(value.numpy(), array)  # copied back
    value.update_inplace(array * 10)
    np.testing.assert_array_equal(value.numpy(), array * 10)
    empty = ort.OrtValue.ortvalue_from_shape_and_type([4], np.float32, "testing", 0)
    assert empty.device_name() == "testing" and empty.shape() == [4]
    with pytest.raises(ort.InvalidArgument, match="unknown device 'testing' with id 3"):
        ort.OrtValue.ortvalue_from_numpy(array, "testing", 3)


@requires_testing_ep
def test_host_accessible_memory_of_the_testing_device():
    array = np.arange(4, dtype=np.float32)
    value = ort.OrtValue.ortvalue_from_numpy(array, "testing_pinned", 0)
    assert value.memory_info().memory_type == "host_accessible"
    assert value.device_name() == "cpu"  # host memory: numpy() is a view
    assert value.numpy().ctypes.data == value.data_ptr()
    np.testing.assert_array_equal(value.numpy(), array)
