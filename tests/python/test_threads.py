"""The GIL is released while a session runs: other Python threads keep running, runs overlap."""

import threading
import time

import numpy as np

from helpers import requires_testing_ep
import onnx_models
import tessera as ort


SIZE = 512


def _session():
    options = ort.SessionOptions()
    options.intra_op_num_threads = 1
    return ort.InferenceSession(onnx_models.matmul_chain(SIZE, 40), options)


def test_concurrent_runs_from_two_threads_finish_with_correct_results():
    session = _session()
    x = np.random.default_rng(5).standard_normal((SIZE, SIZE), dtype=np.float32)
    (expected,) = session.run(None, {"X": x})
    results, errors = {}, []

    def work(index):
        try:
            results[index] = [session.run(None, {"X": x})[0] for _ in range(3)]
        except Exception as error:  # pragma: no cover - reported below
            errors.append(error)

    threads = [threading.Thread(target=work, args=(i,)) for i in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=120)
    assert not errors and sorted(results) == [0, 1]
    for outputs in results.values():
        for out in outputs:
            np.testing.assert_allclose(out, expected, rtol=1e-5)


def test_python_threads_progress_during_a_run():
    session = _session()
    x = np.ones((SIZE, SIZE), np.float32)
    session.run(None, {"X": x})  # warm up
    start = time.perf_counter()
    session.run(None, {"X": x})
    run_seconds = time.perf_counter() - start

    running = threading.Event()
    done = threading.Event()

    def run_once():
        running.set()
        session.run(None, {"X": x})
        done.set()

    worker = threading.Thread(target=run_once)
    worker.start()
    running.wait()
    # With the GIL held for the whole run this loop would stall for about run_seconds.
    longest_gap, last = 0.0, time.perf_counter()
    while not done.is_set():
        now = time.perf_counter()
        longest_gap, last = max(longest_gap, now - last), now
    worker.join()
    assert run_seconds > 0.02, "the model is too small to show anything"
    assert longest_gap < max(0.5 * run_seconds, 0.02), (longest_gap, run_seconds)


def test_stream_sets_option_round_trips():
    options = ort.SessionOptions()
    assert options.stream_sets == 0
    options.stream_sets = 2
    assert options.stream_sets == 2


@requires_testing_ep
def test_concurrent_runs_on_the_testing_device_match_serial_runs():
    """Each Python thread's run takes its own stream set on the simulated device; results equal serial runs."""
    size = 96
    session = ort.InferenceSession(onnx_models.matmul_chain(size, 6), providers=["TestingExecutionProvider"])
    inputs = [np.random.default_rng(i).integers(-2, 3, (size, size)).astype(np.float32) for i in range(4)]
    expected = [session.run(None, {"X": x})[0] for x in inputs]
    results, errors = {}, []
    start = threading.Barrier(len(inputs))

    def work(index):
        try:
            start.wait()
            results[index] = [session.run(None, {"X": inputs[index]})[0] for _ in range(4)]
        except Exception as error:  # pragma: no cover - reported below
            errors.append(error)

    threads = [threading.Thread(target=work, args=(i,)) for i in range(len(inputs))]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=120)
    assert not errors and sorted(results) == list(range(len(inputs)))
    for index, outputs in results.items():
        for out in outputs:
            np.testing.assert_array_equal(out, expected[index])
