"""The cases of ONNX Runtime's onnxruntime/test/python/onnxruntime_test_python_backend.py (MIT License, Microsoft),
one test here per test there, written for Tessera (tessera.backend is onnx's Backend interface, as
onnxruntime.backend); their testdata models (mul_1, alloc_tensor_reuse) are built with the onnx package. Then the
rest of the interface: inputs as a list or dict, run_model, devices, options and errors."""

import numpy as np
import pytest
from numpy.testing import assert_allclose
from onnx import TensorProto, helper

import tessera as onnxrt
import tessera.backend as backend


def _model(nodes, inputs, outputs, initializers=()):
    graph = helper.make_graph(nodes, "test", inputs, outputs, list(initializers))
    return helper.make_model(graph, opset_imports=[helper.make_operatorsetid("", 13)])


def mul_1():
    """Y = X * X, X [3, 2]."""
    return _model([helper.make_node("Mul", ["X", "X"], ["Y"])],
                  [helper.make_tensor_value_info("X", TensorProto.FLOAT, [3, 2])],
                  [helper.make_tensor_value_info("Y", TensorProto.FLOAT, [3, 2])])


def alloc_tensor_reuse():
    """outp0 = -(inp0 + inp1), outp1 = -(inp0 - inp1): two results of one size (onnxruntime's allocation plan lets the
    second reuse the first's memory)."""
    vector = lambda name: helper.make_tensor_value_info(name, TensorProto.FLOAT, [10])  # noqa: E731
    return _model([helper.make_node("Add", ["inp0", "inp1"], ["tsor0"]),
                   helper.make_node("Sub", ["inp0", "inp1"], ["tsor1"]),
                   helper.make_node("Neg", ["tsor0"], ["outp0"]),
                   helper.make_node("Neg", ["tsor1"], ["outp1"])],
                  [vector("inp0"), vector("inp1")], [vector("outp0"), vector("outp1")])


def test_run_model(tmp_path):
    name = str(tmp_path / "mul_1.onnx")
    with open(name, "wb") as f:
        f.write(mul_1().SerializeToString())
    rep = backend.prepare(name)
    x = np.array([[1.0, 2.0], [3.0, 4.0], [5.0, 6.0]], dtype=np.float32)
    res = rep.run(x)
    output_expected = np.array([[1.0, 4.0], [9.0, 16.0], [25.0, 36.0]], dtype=np.float32)
    np.testing.assert_allclose(output_expected, res[0], rtol=1e-05, atol=1e-08)


def test_allocation_plan_works_with_only_execute_path_to_fetches_option():
    sess = onnxrt.InferenceSession(alloc_tensor_reuse().SerializeToString(), providers=onnxrt.get_available_providers())
    run_options = onnxrt.RunOptions()
    run_options.only_execute_path_to_fetches = True
    assert run_options.only_execute_path_to_fetches
    inp0, inp1 = np.ones((10,), dtype=np.float32), np.ones((10,), dtype=np.float32)
    session_run_results = sess.run(["outp0"], {"inp0": inp0, "inp1": inp1}, run_options)
    assert_allclose(session_run_results[0], -(inp0 + inp1))
    session_run_results = sess.run(["outp1"], {"inp0": inp0, "inp1": inp1}, run_options)
    assert_allclose(session_run_results[0], -(inp0 - inp1))


def test_inputs_as_a_list_or_a_dict_and_run_model():
    model = alloc_tensor_reuse()
    a = np.arange(10, dtype=np.float32)
    b = np.full(10, 2.0, dtype=np.float32)
    rep = backend.prepare(model, "CPU", graph_optimization_level=onnxrt.GraphOptimizationLevel.ORT_DISABLE_ALL)
    for outputs in (rep.run([a, b]), rep.run({"inp0": a, "inp1": b}), backend.run_model(model, (a, b))):
        assert_allclose(outputs[0], -(a + b))
        assert_allclose(outputs[1], -(a - b))
    with pytest.raises(RuntimeError, match="takes 2 inputs"):
        rep.run(a)
    with pytest.raises(RuntimeError, match=r"takes 2 input\(s\)"):
        rep.run([a])


def test_devices_options_and_compatibility():
    assert backend.supports_device("CPU")
    cuda = "CUDAExecutionProvider" in onnxrt.get_available_providers()
    assert backend.supports_device("CUDA") == cuda
    assert not backend.supports_device("FPGA")
    model = mul_1()
    assert backend.is_compatible(model)
    future = mul_1()
    future.opset_import[0].version = 99
    assert not backend.is_compatible(future)
    with pytest.raises(RuntimeError, match="unknown SessionOptions option 'no_such_option'"):
        backend.prepare(model, no_such_option=1)
    with pytest.raises(RuntimeError, match="unknown RunOptions option 'no_such_option'"):
        backend.prepare(model).run(np.ones((3, 2), np.float32), no_such_option=1)
    with pytest.raises(RuntimeError, match="device 'FPGA' is not supported"):
        backend.prepare(model, "FPGA")
    if cuda:
        out = backend.run_model(model, np.ones((3, 2), np.float32), device="CUDA:0")
        assert_allclose(out[0], np.ones((3, 2), np.float32))
