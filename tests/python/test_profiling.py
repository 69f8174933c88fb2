"""Profiling: SessionOptions.enable_profiling / profile_file_prefix and InferenceSession.end_profiling."""

import json
import os

import numpy as np

import onnx_models
import tessera as ort
from helpers import requires_testing_ep


def _feeds():
    return {"A": np.ones((2, 3), np.float32), "B": np.full((2, 3), -2, np.float32)}


def _session(tmp_path, providers=("CPUExecutionProvider",)):
    options = ort.SessionOptions()
    options.enable_profiling = True
    options.profile_file_prefix = str(tmp_path / "prof")
    return ort.InferenceSession(onnx_models.add_relu(), options, providers=list(providers))


def test_end_profiling_writes_a_chrome_trace_with_every_node_of_every_run(tmp_path):
    session = _session(tmp_path)
    assert session.get_profiling_start_time_ns() > 0
    for _ in range(2):
        session.run(None, _feeds())
    path = session.end_profiling()
    assert os.path.basename(path).startswith("prof_") and path.endswith(".json")
    with open(path) as f:
        events = json.load(f)["traceEvents"]
    runs = [e for e in events if e.get("cat") == "Session" and e["name"] == "model_run"]
    nodes = [e for e in events if e.get("cat") == "Node"]
    assert len(runs) == 2
    assert sorted(e["name"] for e in nodes) == ["add", "add", "relu", "relu"]
    for e in nodes:
        assert e["ph"] == "X" and e["dur"] >= 0
        assert e["args"]["provider"] == "CPUExecutionProvider"
        assert e["args"]["op_type"] == {"add": "Add", "relu": "Relu"}[e["name"]]
        assert e["args"]["output_type_shape"] == [{"float": [2, 3]}]
    assert session.end_profiling() == ""  # profiling has stopped


def test_profiling_off_by_default_writes_nothing(tmp_path):
    options = ort.SessionOptions()
    assert options.enable_profiling is False
    assert options.profile_file_prefix == "tessera_profile"
    options.profile_file_prefix = str(tmp_path / "prof")
    session = ort.InferenceSession(onnx_models.add_relu(), options, providers=["CPUExecutionProvider"])
    session.run(None, _feeds())
    assert session.end_profiling() == ""
    assert session.get_profiling_start_time_ns() == 0
    del session
    assert list(tmp_path.iterdir()) == []


@requires_testing_ep
def test_device_times_on_the_testing_device(tmp_path):
    session = _session(tmp_path, ["TestingExecutionProvider"])
    session.run(None, _feeds())
    with open(session.end_profiling()) as f:
        events = json.load(f)["traceEvents"]
    device = [e for e in events if e.get("cat") == "Kernel"]
    assert sorted(e["name"] for e in device if e["args"]["op_type"] != "Copy") == ["add", "relu"]
    names = {e["tid"]: e["args"]["name"] for e in events if e["ph"] == "M" and e["name"] == "thread_name"}
    assert all(names[e["tid"]].startswith("TestingExecutionProvider stream") for e in device)
