"""copy_tensors with an OrtSyncStream, InferenceSession.run_async, and the onnxruntime.capi._pybind_state names."""

import threading

import numpy as np
import pytest

from helpers import requires_testing_ep
import onnx_models
import tessera as ort
from tessera.capi import _pybind_state as C


@requires_testing_ep
def test_copy_tensors_through_the_device_on_its_stream():
    (device,) = [d for d in ort.get_ep_devices() if d.ep_name == "TestingExecutionProvider"]
    stream = device.create_sync_stream()
    assert isinstance(stream, ort.OrtSyncStream)
    assert stream.memory_info == device.device_memory_info
    host = np.arange(12, dtype=np.float32).reshape(3, 4)
    src = [ort.OrtValue.ortvalue_from_numpy(host), ort.OrtValue.ortvalue_from_numpy(2 * host)]
    on_device = [ort.OrtValue.ortvalue_from_shape_and_type([3, 4], np.float32, "testing", 0) for _ in src]
    back = [ort.OrtValue.ortvalue_from_shape_and_type([3, 4], np.float32, "cpu", 0) for _ in src]
    ort.copy_tensors(src, on_device, stream)
    ort.copy_tensors(on_device, back, stream)
    stream.synchronize()
    np.testing.assert_array_equal(back[0].numpy(), host)
    np.testing.assert_array_equal(back[1].numpy(), 2 * host)
    ort.copy_tensors([src[0]], [back[1]])  # no stream: complete on return
    np.testing.assert_array_equal(back[1].numpy(), host)
    with pytest.raises(ort.InvalidArgument, match="2 sources but 1 destinations"):
        ort.copy_tensors(src, back[:1])


def test_cpu_has_no_sync_stream():
    (cpu,) = [d for d in ort.get_ep_devices() if d.ep_name == "CPUExecutionProvider"]
    with pytest.raises(ort.InvalidArgument, match="no streams"):
        cpu.create_sync_stream()


def test_run_async_calls_back_with_outputs_or_the_error():
    session = ort.InferenceSession(onnx_models.binary())
    a = np.ones((2, 4), np.float32)
    done = threading.Event()
    results = {}

    def callback(outputs, user_data, error):
        results[user_data] = (outputs, error)
        if len(results) == 2:
            done.set()

    session.run_async(None, {"A": a, "B": a}, callback, "good")
    session.run_async(None, {"A": a, "B": np.ones((3, 4), np.float32)}, callback, "bad")
    assert done.wait(30)
    outputs, error = results["good"]
    assert error == ""
    np.testing.assert_array_equal(outputs[0], 2 * a)
    outputs, error = results["bad"]
    assert outputs is None and error


def test_pybind_state_names():
    assert C.OrtValue is ort.OrtValue
    session = ort.InferenceSession(onnx_models.binary())
    binding = C.SessionIOBinding(session._sess)  # what onnxruntime's IOBinding wraps
    binding.bind_cpu_input("A", np.ones((1, 4), np.float32))
    device = C.OrtDevice(C.OrtDevice.cuda(), C.OrtDevice.default_memory(), 1)
    assert (device.device_type(), device.device_mem_type(), device.device_id()) == (1, 0, 1)
    assert device.device_name() == "cuda"
    assert C.OrtDevice(C.OrtDevice.cpu(), 0, 0).device_name() == "cpu"
    assert device == C.OrtDevice(1, 0, 1) and device != C.OrtDevice(1, 0, 0)


def test_release_memory_and_the_shrinkage_run_option():
    session = ort.InferenceSession(onnx_models.matmul_chain(512, 4))
    x = np.ones((512, 512), np.float32)
    (y,) = session.run(None, {"X": x})
    y = y.copy()  # the run's output memory is no longer the session's concern
    session.run(None, {"X": x})  # its intermediates and output are free when it returns
    assert session.release_memory() > 0
    np.testing.assert_array_equal(session.run(None, {"X": x})[0], y)
    run_options = ort.RunOptions()
    run_options.add_run_config_entry("memory.enable_memory_arena_shrinkage", "cpu:0")
    np.testing.assert_array_equal(session.run(None, {"X": x}, run_options)[0], y)
    session.release_memory()
    assert session.release_memory() == 0  # nothing reserved since the previous call


@requires_testing_ep
def test_automatic_graphs_replay_runs_and_report_their_status():
    session = ort.InferenceSession(onnx_models.add_relu(shape=("n", 3)),
                                   providers=[("TestingExecutionProvider", {"automatic_graphs": "1"})])
    assert session.get_graph_status().startswith("automatic:"), session.get_graph_status()
    held = []
    for run in range(5):  # warm-up, capture + replay, replays: new values every run, outputs held
        a = np.arange(6, dtype=np.float32).reshape(2, 3) - 2.5 + run
        b = np.full((2, 3), 0.25 * run, np.float32)
        s, r = session.run(None, {"A": a, "B": b})
        held.append((a + b, s, r))
    for expected, s, r in held:
        np.testing.assert_array_equal(s, expected)
        np.testing.assert_array_equal(r, np.maximum(expected, 0))
    assert session.get_automatic_graph_counts() == {"captures": 1, "replays": 4}
    eager = ort.InferenceSession(onnx_models.add_relu(shape=("n", 3)), providers=["TestingExecutionProvider"])
    assert eager.get_graph_status().startswith("eager:")
    assert eager.get_automatic_graph_counts() == {"captures": 0, "replays": 0}
