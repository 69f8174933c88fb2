"""tessera.DataParallelSession: one session per device, a shared queue, outputs in request order."""

import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest

from helpers import requires_testing_ep
import onnx_models
import tessera as ort


def _feeds(count, size=64):
    rng = np.random.default_rng(3)
    return [{"X": rng.standard_normal((size, size), dtype=np.float32)} for _ in range(count)]


def test_cpu_sessions_match_one_session_in_order():
    model = onnx_models.matmul_chain(64, 4)
    reference = ort.InferenceSession(model, providers=["CPUExecutionProvider"])
    feeds = _feeds(24)
    options = ort.SessionOptions()
    options.intra_op_num_threads = 1
    with ort.DataParallelSession(model, provider="CPUExecutionProvider", device_ids=[0, 0],
                                 sess_options=options) as dp:
        assert len(dp.sessions) == 2
        outputs = dp.run_many(None, feeds)
        assert sum(dp.completed_per_session()) == len(feeds)
        single = dp.run(["Y"], feeds[0])
    for feed, (y,) in zip(feeds, outputs):
        np.testing.assert_array_equal(y, reference.run(None, feed)[0])
    np.testing.assert_array_equal(single[0], outputs[0][0])


def test_a_failed_request_is_reported_and_the_others_finish():
    model = onnx_models.matmul_chain(8, 1)
    with ort.DataParallelSession(model, provider="CPUExecutionProvider", device_ids=[0, 0]) as dp:
        bad = dp.submit(None, {"X": np.zeros((8, 3), np.float32)})
        good = dp.submit(None, {"X": np.ones((8, 8), np.float32)})
        with pytest.raises(ort.InvalidArgument, match="X"):
            bad.result()
        assert good.result()[0].shape == (8, 8)
        with pytest.raises(ort.InvalidArgument):
            dp.run_many(None, [{"X": np.ones((8, 8), np.float32)}, {"X": np.ones((2, 2), np.float32)}])
    with pytest.raises(RuntimeError, match="closed"):
        dp.submit(None, {"X": np.ones((8, 8), np.float32)})
    with pytest.raises(ValueError, match="runs_per_device"):
        ort.DataParallelSession(model, provider="CPUExecutionProvider", runs_per_device=0)
    with pytest.raises(ort.InvalidArgument, match="no device"):
        ort.DataParallelSession(model, provider="NoSuchExecutionProvider")


@requires_testing_ep
def test_two_simulated_devices_share_the_requests():
    # The number of simulated devices is read when the plugin registers: a fresh interpreter.
    script = textwrap.dedent("""
        import sys
        import numpy as np
        sys.path[:0] = sys.argv[1:]
        import onnx_models
        import tessera as ort
        devices = [d for d in ort.get_ep_devices() if d.ep_name == "TestingExecutionProvider"]
        assert [d.device.ordinal for d in devices] == [0, 1], [d.device.ordinal for d in devices]
        model = onnx_models.matmul_chain(96, 6)
        reference = ort.InferenceSession(model, providers=["CPUExecutionProvider"])
        rng = np.random.default_rng(7)
        feeds = [{"X": rng.standard_normal((96, 96), dtype=np.float32)} for _ in range(48)]
        with ort.DataParallelSession(model, provider="TestingExecutionProvider") as dp:
            assert dp.device_ids == [0, 1]
            outputs = dp.run_many(None, feeds)
            done = dp.completed_per_session()
        for feed, (y,) in zip(feeds, outputs):  # the testing device sums in another order than the CPU
            np.testing.assert_allclose(y, reference.run(None, feed)[0], rtol=1e-4, atol=1e-4)
        assert sum(done) == 48 and min(done) > 0, done
        print("ok", done)
    """)
    here = os.path.dirname(os.path.abspath(__file__))
    env = dict(os.environ, TESSERA_TESTING_DEVICE_COUNT="2")
    result = subprocess.run([sys.executable, "-c", script, here] + [p for p in sys.path if p],
                            env=env, capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stdout + result.stderr
    assert result.stdout.startswith("ok"), result.stdout
