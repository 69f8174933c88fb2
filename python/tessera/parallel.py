"""Data parallelism over the devices of one process: `DataParallelSession`.

    import tessera
    with tessera.DataParallelSession("resnet50.onnx", provider="CUDAExecutionProvider") as dp:
        outputs = dp.run_many(None, [{"input": batch} for batch in batches])   # in order, all GPUs busy

One InferenceSession per device, worker threads that take requests from one shared queue (a device takes the
next request as soon as it is free), results through concurrent.futures. Runs release the GIL, so the devices
work at once. The C++ counterpart is tessera::DataParallelRunner (include/tessera/data_parallel.h).
"""

import queue
import threading
from concurrent.futures import Future

from . import _tessera
from .session import InferenceSession

_STOP = object()


class DataParallelSession:
    """`DataParallelSession(path_or_bytes, provider, device_ids=None, provider_options=None, sess_options=None,
    runs_per_device=1)`.

    provider: the EP type every session uses ("CUDAExecutionProvider", "CPUExecutionProvider", a plugin's);
    device_ids: the device ordinals, one session each (default: every device of that EP; an ordinal may repeat
    for several sessions on one device); provider_options: options for every session's EP; runs_per_device:
    requests each session runs at once (runs in flight overlap copies and host work with the device's compute).
    """

    def __init__(self, path_or_bytes, provider="CUDAExecutionProvider", device_ids=None, provider_options=None,
                 sess_options=None, runs_per_device=1):
        if runs_per_device < 1:
            raise ValueError(f"runs_per_device must be at least 1, got {runs_per_device}")
        if device_ids is None:
            device_ids = [d.device.ordinal for d in _tessera.get_ep_devices() if d.ep_name == provider]
        device_ids = list(device_ids)
        if not device_ids:
            raise _tessera.InvalidArgument(f"no device of {provider} to run on")
        self.device_ids = device_ids
        self.sessions = []
        for device_id in device_ids:
            options = dict(provider_options or {})
            options["device_id"] = device_id
            self.sessions.append(InferenceSession(path_or_bytes, sess_options=sess_options,
                                                  providers=[(provider, options)]))
            if self.sessions[-1].get_providers()[0] != provider:
                raise _tessera.InvalidArgument(f"{provider} is not available here")
        self._queue = queue.Queue()
        self._lock = threading.Lock()
        self._completed = [0] * len(self.sessions)
        self._closed = False
        self._workers = [threading.Thread(target=self._work, args=(i,), daemon=True,
                                          name=f"tessera-data-parallel-{i}")
                         for i in range(len(self.sessions)) for _ in range(runs_per_device)]
        for worker in self._workers:
            worker.start()

    def _work(self, index):
        session = self.sessions[index]
        while True:
            item = self._queue.get()
            if item is _STOP:
                return
            future, output_names, feed, run_options = item
            if not future.set_running_or_notify_cancel():
                continue
            try:
                result = session.run(output_names, feed, run_options)
            except BaseException as e:  # noqa: BLE001 -- handed to the caller through the future
                with self._lock:
                    self._completed[index] += 1
                future.set_exception(e)
            else:
                with self._lock:
                    self._completed[index] += 1
                future.set_result(result)

    def submit(self, output_names, input_feed, run_options=None):
        """Queues one request; returns a concurrent.futures.Future of its outputs (session.run's result)."""
        if self._closed:
            raise RuntimeError("DataParallelSession is closed")
        future = Future()
        self._queue.put((future, output_names, input_feed, run_options))
        return future

    def run(self, output_names, input_feed, run_options=None):
        """One request on whichever device is free first; blocks until it is done."""
        return self.submit(output_names, input_feed, run_options).result()

    def run_many(self, output_names, input_feeds, run_options=None):
        """Every feed as a request, spread over the devices; the outputs in feed order. Raises the first failure
        (in feed order) after all requests have finished."""
        futures = [self.submit(output_names, feed, run_options) for feed in input_feeds]
        results, failure = [], None
        for future in futures:
            try:
                results.append(future.result())
            except BaseException as e:  # noqa: BLE001
                results.append(None)
                failure = failure or e
        if failure is not None:
            raise failure
        return results

    def completed_per_session(self):
        """Requests each session has finished (failed ones included), in device_ids order."""
        with self._lock:
            return list(self._completed)

    def close(self):
        """Finishes the queued requests, then stops the workers. Idempotent."""
        if self._closed:
            return
        self._closed = True
        for _ in self._workers:
            self._queue.put(_STOP)
        for worker in self._workers:
            worker.join()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def __del__(self):
        try:
            self.close()
        except Exception:  # noqa: BLE001 -- interpreter shutdown
            pass
