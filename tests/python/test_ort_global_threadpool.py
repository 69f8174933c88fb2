"""onnxruntime's onnxruntime_test_python_global_threadpool.py, mirrored.

set_global_thread_pool_sizes changes the process's Environment for good (every later session must then set
use_per_session_threads = False, as with onnxruntime), so each case runs in a fresh interpreter.
- test_global_threadpool: a session with use_per_session_threads = False runs on the global pools (ORT_PARALLEL,
  optimizations off, every available provider), with the right result.
- test_raise_error_if_use_per_session_threads: with global pools, a session keeping per-session threads is refused.
Added: the pools cannot be set after the first session, nor twice, and sessions of several threads share them.
"""

import os
import subprocess
import sys
import textwrap


def _run(body):
    script = textwrap.dedent("""
        import sys
        sys.path[:0] = sys.argv[1:]
        import numpy as np
        import onnx_models
        import tessera as onnxrt
    """) + textwrap.dedent(body)
    here = os.path.dirname(os.path.abspath(__file__))
    result = subprocess.run([sys.executable, "-c", script, here] + [p for p in sys.path if p],
                            capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stdout + result.stderr
    assert result.stdout.strip().endswith("ok"), result.stdout


def _options(per_session):
    return f"""
        session_opts = onnxrt.SessionOptions()
        session_opts.execution_mode = onnxrt.ExecutionMode.ORT_PARALLEL
        session_opts.graph_optimization_level = onnxrt.GraphOptimizationLevel.ORT_DISABLE_ALL
        session_opts.use_per_session_threads = {per_session}
    """


def test_global_threadpool():
    _run("""
        onnxrt.set_global_thread_pool_sizes(2, 2)
    """ + _options(False) + """
        model = onnx_models.conv_image(3)
        session = onnxrt.InferenceSession(model, session_opts, providers=onnxrt.get_available_providers())
        reference = onnxrt.InferenceSession(model, session_opts, providers=["CPUExecutionProvider"])
        x = np.random.default_rng(0).standard_normal((1, 3, 32, 32)).astype(np.float32)
        name = session.get_inputs()[0].name
        # every available provider: on a GPU host the CUDA EP's TF32 convolutions
        np.testing.assert_allclose(session.run(None, {name: x})[0], reference.run(None, {name: x})[0], rtol=5e-3,
                                   atol=1e-4)
        print("ok")
    """)


def test_raise_error_if_use_per_session_threads():
    _run("""
        onnxrt.set_global_thread_pool_sizes(2, 2)
    """ + _options(True) + """
        try:
            onnxrt.InferenceSession(onnx_models.add_relu(), session_opts, providers=onnxrt.get_available_providers())
        except RuntimeError as error:
            assert "use_per_session_threads" in str(error), error
            print("ok")
    """)


def test_pools_are_set_before_the_first_session_and_once():
    _run("""
        onnxrt.InferenceSession(onnx_models.add_relu())
        try:
            onnxrt.set_global_thread_pool_sizes(2, 2)
            raise SystemExit("set after a session")
        except RuntimeError as error:
            assert "before the first one" in str(error), error
        print("ok")
    """)
    _run("""
        onnxrt.set_global_thread_pool_sizes(2, 2)
        try:
            onnxrt.set_global_thread_pool_sizes(4, 1)
            raise SystemExit("set twice")
        except RuntimeError as error:
            assert "already set" in str(error), error
        print("ok")
    """)


def test_concurrent_sessions_share_the_global_pool():
    _run("""
        import threading
        onnxrt.set_global_thread_pool_sizes(2, 1)
    """ + _options(False) + """
        model = onnx_models.matmul_chain(256, 8)
        sessions = [onnxrt.InferenceSession(model, session_opts) for _ in range(3)]
        x = np.random.default_rng(1).standard_normal((256, 256)).astype(np.float32)
        expected = sessions[0].run(None, {"X": x})[0]
        results, errors = {}, []

        def work(i):
            try:
                results[i] = [sessions[i].run(None, {"X": x})[0] for _ in range(4)]
            except Exception as error:
                errors.append(error)

        threads = [threading.Thread(target=work, args=(i,)) for i in range(3)]
        for t in threads: t.start()
        for t in threads: t.join(timeout=120)
        assert not errors and sorted(results) == [0, 1, 2], errors
        for outputs in results.values():
            for y in outputs:
                np.testing.assert_array_equal(y, expected)
        print("ok")
    """)
