"""DLPack exchange with numpy (and torch on the CPU when installed): memory is shared both ways."""

import numpy as np
import pytest

from helpers import requires_testing_ep
import tessera as ort

KDL_CPU, KDL_EXT_DEV = 1, 12
needs_numpy_dlpack = pytest.mark.skipif(not hasattr(np, "from_dlpack"), reason="numpy >= 1.22 needed for DLPack")


@needs_numpy_dlpack
def test_numpy_to_tessera_shares_memory():
    array = np.arange(12, dtype=np.float32).reshape(3, 4)
    value = ort.from_dlpack(array)
    assert value.data_ptr() == array.ctypes.data
    assert value.shape() == [3, 4] and value.device_name() == "cpu"
    array[1, 1] = -1
    assert value.numpy()[1, 1] == -1


@needs_numpy_dlpack
def test_tessera_to_numpy_shares_memory():
    value = ort.OrtValue.ortvalue_from_shape_and_type([2, 3], np.int32)
    value.update_inplace(np.arange(6, dtype=np.int32).reshape(2, 3))
    assert value.__dlpack_device__() == (KDL_CPU, 0)
    array = np.from_dlpack(value)
    assert array.ctypes.data == value.data_ptr()
    np.testing.assert_array_equal(array, np.arange(6).reshape(2, 3))
    del value  # the consumer keeps the memory alive
    assert array.sum() == 15


@needs_numpy_dlpack
def test_round_trip_keeps_the_original_buffer():
    array = np.linspace(0, 1, 8, dtype=np.float64)
    back = np.from_dlpack(ort.from_dlpack(array))
    assert back.ctypes.data == array.ctypes.data
    np.testing.assert_array_equal(back, array)


def test_capsules_are_consumed_once():
    value = ort.OrtValue.ortvalue_from_numpy(np.ones(3, np.float32))
    capsule = value.to_dlpack()
    first = ort.from_dlpack(capsule)
    assert first.data_ptr() == value.data_ptr()
    with pytest.raises(ort.InvalidArgument, match="unconsumed"):
        ort.from_dlpack(capsule)
    del capsule
    unused = value.__dlpack__()  # dropped without a consumer: freed by the capsule
    del unused
    with pytest.raises(TypeError):
        ort.from_dlpack(object())


def test_non_contiguous_producers_are_rejected():
    pytest.importorskip("torch", reason="torch not installed")
    import torch
    with pytest.raises(ort.InvalidArgument, match="contiguous"):
        ort.from_dlpack(torch.arange(12, dtype=torch.float32).reshape(3, 4).t())


@requires_testing_ep
def test_testing_device_values_travel_as_ext_dev():
    value = ort.OrtValue.ortvalue_from_numpy(np.arange(4, dtype=np.float32), "testing", 0)
    assert value.__dlpack_device__() == (KDL_EXT_DEV, 0)
    again = ort.from_dlpack(value)
    assert again.device_name() == "testing" and again.data_ptr() == value.data_ptr()
    np.testing.assert_array_equal(again.numpy(), [0, 1, 2, 3])


def test_torch_cpu_both_ways():
    torch = pytest.importorskip("torch", reason="torch not installed")
    source = torch.arange(6, dtype=torch.float32).reshape(2, 3)
    value = ort.from_dlpack(source)
    assert value.data_ptr() == source.data_ptr()
    back = torch.from_dlpack(value)
    assert back.data_ptr() == source.data_ptr()
    back[0, 0] = 7
    assert source[0, 0].item() == 7
    fresh = ort.OrtValue.ortvalue_from_numpy(np.ones((2, 2), np.int64))
    as_torch = torch.utils.dlpack.from_dlpack(fresh.to_dlpack())
    assert as_torch.data_ptr() == fresh.data_ptr() and as_torch.dtype == torch.int64
