"""CUDA: device values, IO binding (with CUDA graphs), DLPack with torch/cupy, user compute streams.

Runs on the GPU host (libtessera_cuda.so beside libtessera.so or the extension); skipped elsewhere."""

import numpy as np
import pytest

from helpers import requires_cuda
import onnx_models
import tessera as ort

pytestmark = requires_cuda
CUDA, CPU = "CUDAExecutionProvider", "CPUExecutionProvider"
KDL_CUDA = 2


def _torch_cuda():
    torch = pytest.importorskip("torch", reason="torch not installed")
    if not torch.cuda.is_available():
        pytest.skip("torch has no CUDA")
    return torch


def test_device_is_gpu_and_values_live_on_cuda():
    assert ort.get_device() == "GPU"
    array = np.arange(6, dtype=np.float32).reshape(2, 3)
    value = ort.OrtValue.ortvalue_from_numpy(array, "cuda", 0)
    assert value.device_name() == "cuda"
    assert value.__dlpack_device__() == (KDL_CUDA, 0)
    np.testing.assert_array_equal(value.numpy(), array)
    value.update_inplace(array + 1)
    np.testing.assert_array_equal(value.numpy(), array + 1)
    pinned = ort.OrtValue.ortvalue_from_numpy(array, "cuda_pinned", 0)
    assert pinned.device_name() == "cpu" and pinned.__dlpack_device__() == (3, 0)


def test_io_binding_on_cuda():
    session = ort.InferenceSession(onnx_models.add_relu(), providers=[CUDA, CPU])
    assert session.get_providers()[0] == CUDA
    a = np.random.default_rng(0).standard_normal((2, 3), dtype=np.float32)
    binding = session.io_binding()
    binding.bind_ortvalue_input("A", ort.OrtValue.ortvalue_from_numpy(a, "cuda", 0))
    binding.bind_ortvalue_input("B", ort.OrtValue.ortvalue_from_numpy(a, "cuda", 0))
    binding.bind_output("S", "cuda", 0)
    binding.bind_output("R", "cuda", 0)
    session.run_with_iobinding(binding)
    assert [o.device_name() for o in binding.get_outputs()] == ["cuda", "cuda"]
    s, r = binding.copy_outputs_to_cpu()
    np.testing.assert_allclose(s, 2 * a, rtol=1e-6)
    np.testing.assert_allclose(r, np.maximum(2 * a, 0), rtol=1e-6)


def test_cuda_graph_replay_sees_update_inplace():
    session = ort.InferenceSession(onnx_models.add_relu(), providers=[(CUDA, {"enable_cuda_graph": "1"})])
    a = np.random.default_rng(1).standard_normal((2, 3), dtype=np.float32)
    x = ort.OrtValue.ortvalue_from_numpy(a, "cuda", 0)
    y = ort.OrtValue.ortvalue_from_numpy(a, "cuda", 0)
    out_s = ort.OrtValue.ortvalue_from_shape_and_type([2, 3], np.float32, "cuda", 0)
    out_r = ort.OrtValue.ortvalue_from_shape_and_type([2, 3], np.float32, "cuda", 0)
    binding = session.io_binding()
    binding.bind_ortvalue_input("A", x)
    binding.bind_ortvalue_input("B", y)
    binding.bind_ortvalue_output("S", out_s)
    binding.bind_ortvalue_output("R", out_r)
    for scale in (1.0, -2.0, 3.0):  # the first run captures, later runs replay
        x.update_inplace(a * scale)
        session.run_with_iobinding(binding)
        np.testing.assert_allclose(out_s.numpy(), a * scale + a, rtol=1e-6)
        np.testing.assert_allclose(out_r.numpy(), np.maximum(a * scale + a, 0), rtol=1e-6)


def test_dlpack_with_torch_cuda_without_copies():
    torch = _torch_cuda()
    source = torch.arange(12, dtype=torch.float32, device="cuda").reshape(3, 4)
    value = ort.from_dlpack(source)
    assert value.device_name() == "cuda" and value.data_ptr() == source.data_ptr()
    back = torch.from_dlpack(value)
    assert back.device.type == "cuda" and back.data_ptr() == source.data_ptr()
    produced = ort.OrtValue.ortvalue_from_numpy(np.ones((2, 2), np.float32), "cuda", 0)
    as_torch = torch.from_dlpack(produced)
    assert as_torch.data_ptr() == produced.data_ptr()
    assert as_torch.sum().item() == 4


def test_dlpack_with_cupy_without_copies():
    cupy = pytest.importorskip("cupy", reason="cupy not installed")
    source = cupy.arange(6, dtype=cupy.float32)
    value = ort.from_dlpack(source)
    assert value.data_ptr() == source.data.ptr
    back = cupy.from_dlpack(value)
    assert back.data.ptr == source.data.ptr


def test_run_on_a_torch_stream_is_ordered_without_host_sync():
    torch = _torch_cuda()
    stream = torch.cuda.Stream()
    size = 2048
    session = ort.InferenceSession(onnx_models.binary("Add", shape=(size, size)),
                                   providers=[(CUDA, {"user_compute_stream": str(stream.cuda_stream)})])
    a = torch.empty((size, size), device="cuda")
    b = torch.ones((size, size), device="cuda")
    out = torch.empty((size, size), device="cuda")
    torch.cuda.synchronize()
    run_options = ort.RunOptions()
    run_options.add_run_config_entry("disable_synchronize_execution_providers", "1")
    binding = session.io_binding()
    binding.bind_input("A", "cuda", 0, np.float32, [size, size], a.data_ptr())
    binding.bind_input("B", "cuda", 0, np.float32, [size, size], b.data_ptr())
    binding.bind_output("C", "cuda", 0, np.float32, [size, size], out.data_ptr())
    with torch.cuda.stream(stream):
        slow = torch.full((size, size), 0.5, device="cuda")
        for _ in range(20):  # long-running work the run must wait for
            slow = torch.mm(slow, torch.eye(size, device="cuda"))
        a.copy_(slow)
        session.run_with_iobinding(binding, run_options)  # queued on `stream`, after the copy
        out.add_(1)  # and this after the run
    stream.synchronize()
    assert torch.allclose(out, torch.full((size, size), 2.5, device="cuda"))
