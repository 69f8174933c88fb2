"""InferenceSession: loading, running, metadata, options (CPU)."""

import pathlib

import numpy as np
import pytest

import onnx_models
import tessera as ort


def test_run_matches_numpy_and_returns_all_outputs():
    session = ort.InferenceSession(onnx_models.add_relu(), providers=["CPUExecutionProvider"])
    rng = np.random.default_rng(0)
    a, b = rng.standard_normal((2, 3), dtype=np.float32), rng.standard_normal((2, 3), dtype=np.float32)
    s, r = session.run(None, {"A": a, "B": b})
    np.testing.assert_allclose(s, a + b, rtol=1e-6)
    np.testing.assert_allclose(r, np.maximum(a + b, 0), rtol=1e-6)
    (only_r,) = session.run(["R"], {"A": a, "B": b})
    np.testing.assert_allclose(only_r, r)


@pytest.mark.parametrize("op,reference", [("Add", np.add), ("Mul", np.multiply), ("Sub", np.subtract)])
def test_binary_ops_with_symbolic_batch(op, reference):
    session = ort.InferenceSession(onnx_models.binary(op))
    for batch in (1, 5):
        a = np.arange(batch * 4, dtype=np.float32).reshape(batch, 4)
        b = np.full((batch, 4), 3, np.float32)
        np.testing.assert_array_equal(session.run(None, {"A": a, "B": b})[0], reference(a, b))


def test_load_from_path_pathlib_and_bytes(tmp_path):
    model = onnx_models.binary()
    path = tmp_path / "add.onnx"
    path.write_bytes(model)
    a = np.ones((2, 4), np.float32)
    for source in (str(path), pathlib.Path(path), model, bytearray(model)):
        session = ort.InferenceSession(source)
        np.testing.assert_array_equal(session.run(None, {"A": a, "B": a})[0], 2 * a)
    with pytest.raises(TypeError):
        ort.InferenceSession(42)


def test_inputs_and_outputs_describe_names_shapes_and_types():
    session = ort.InferenceSession(onnx_models.binary())
    inputs, outputs = session.get_inputs(), session.get_outputs()
    assert [i.name for i in inputs] == ["A", "B"]
    assert inputs[0].shape == ["batch", 4]
    assert inputs[0].type == "tensor(float)"
    assert outputs[0].name == "C" and outputs[0].type == "tensor(float)"
    unknown_dim = ort.InferenceSession(onnx_models.unary("Relu")).get_inputs()[0]
    assert unknown_dim.shape == [None, 3]
    assert "NodeArg(name='X'" in repr(unknown_dim)
    int_model = ort.InferenceSession(onnx_models.unary("Identity", elem=7))
    assert int_model.get_inputs()[0].type == "tensor(int64)"


def test_model_metadata():
    meta = ort.InferenceSession(onnx_models.with_metadata()).get_modelmeta()
    assert meta.producer_name == "tessera-tests"
    assert meta.graph_name == "test_graph"
    assert meta.domain == "ai.tessera.test"
    assert meta.description == "adds two tensors"
    assert meta.version == 7
    assert meta.custom_metadata_map == {"author": "tests", "license": "MIT"}


def test_feeds_accept_non_contiguous_arrays_lists_and_ortvalues():
    session = ort.InferenceSession(onnx_models.binary(shape=(2, 3)))
    wide = np.arange(12, dtype=np.float32).reshape(2, 6)
    strided = wide[:, ::2]  # not contiguous: copied before the run
    value = ort.OrtValue.ortvalue_from_numpy(np.ones((2, 3), np.float32))
    result = session.run(None, {"A": strided, "B": value})[0]
    np.testing.assert_array_equal(result, strided + 1)
    as_list = session.run(None, {"A": [[1, 2, 3], [4, 5, 6]], "B": np.zeros((2, 3), np.float32)})[0]
    np.testing.assert_array_equal(as_list, [[1, 2, 3], [4, 5, 6]])


def test_numpy_inputs_are_used_without_copies():
    # Identity's output aliases its input, and run_with_ort_values keeps the alias: same pointer.
    session = ort.InferenceSession(onnx_models.unary("Identity"))
    x = np.arange(6, dtype=np.float32).reshape(2, 3)
    (out,) = session.run_with_ort_values(None, {"X": x})
    assert out.data_ptr() == x.ctypes.data
    del x  # the output keeps the input's memory alive
    np.testing.assert_array_equal(out.numpy(), np.arange(6, dtype=np.float32).reshape(2, 3))


def test_run_outputs_never_alias_inputs():
    session = ort.InferenceSession(onnx_models.unary("Identity"))
    x = np.arange(6, dtype=np.float32).reshape(2, 3)
    (y,) = session.run(None, {"X": x})
    assert y.ctypes.data != x.ctypes.data
    x[0, 0] = 100
    assert y[0, 0] == 0


def test_string_tensors():
    session = ort.InferenceSession(onnx_models.unary("Identity", elem=8, shape=(1, 3)))
    words = np.array([["tessera", "onnx", "ünïcode"]], dtype=object)
    (out,) = session.run(None, {"X": words})
    assert out.dtype == object and out.tolist() == words.tolist()


def test_session_options_are_applied_and_kept():
    options = ort.SessionOptions()
    options.intra_op_num_threads = 1
    options.inter_op_num_threads = 2
    options.execution_mode = ort.ExecutionMode.ORT_PARALLEL
    options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    options.log_severity_level = 3
    options.add_session_config_entry("session.some_key", "value")
    assert options.get_session_config_entry("session.some_key") == "value"
    with pytest.raises(ort.InvalidArgument, match="does not have configuration with key: missing"):
        options.get_session_config_entry("missing")
    with pytest.raises(ort.InvalidArgument, match="log severity level"):
        options.log_severity_level = 9
    session = ort.InferenceSession(onnx_models.binary(), sess_options=options)
    assert session.get_session_options() is options
    assert options.intra_op_num_threads == 1
    assert options.graph_optimization_level == ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    a = np.ones((1, 4), np.float32)
    np.testing.assert_array_equal(session.run(None, {"A": a, "B": a})[0], 2 * a)


def test_optimization_levels_give_the_same_results():
    x = np.random.default_rng(1).standard_normal((8, 8), dtype=np.float32)
    results = []
    for level in (ort.GraphOptimizationLevel.ORT_DISABLE_ALL, ort.GraphOptimizationLevel.ORT_ENABLE_BASIC,
                  ort.GraphOptimizationLevel.ORT_ENABLE_EXTENDED, ort.GraphOptimizationLevel.ORT_ENABLE_ALL):
        options = ort.SessionOptions()
        options.graph_optimization_level = level
        results.append(ort.InferenceSession(onnx_models.matmul_chain(8, 3), options).run(None, {"X": x})[0])
    for r in results[1:]:
        np.testing.assert_allclose(r, results[0], rtol=1e-5)


def test_run_options_fields_and_config_entries():
    run_options = ort.RunOptions()
    run_options.run_tag = "tagged"
    run_options.log_severity_level = 1
    assert run_options.run_tag == "tagged" and run_options.log_severity_level == 1
    assert run_options.synchronize_execution_providers
    run_options.add_run_config_entry("disable_synchronize_execution_providers", "1")
    assert run_options.get_run_config_entry("disable_synchronize_execution_providers") == "1"
    assert not run_options.synchronize_execution_providers
    session = ort.InferenceSession(onnx_models.binary())
    a = np.ones((1, 4), np.float32)
    # run() returns host arrays, so it always waits for the run to finish.
    np.testing.assert_array_equal(session.run(None, {"A": a, "B": a}, run_options)[0], 2 * a)


def test_run_options_terminate_cancels_and_session_stays_usable():
    session = ort.InferenceSession(onnx_models.binary())
    a = np.ones((1, 4), np.float32)
    run_options = ort.RunOptions()
    run_options.terminate = True
    assert run_options.terminate
    with pytest.raises(ort.Terminated, match="terminate"):
        session.run(None, {"A": a, "B": a}, run_options)
    run_options.terminate = False
    np.testing.assert_array_equal(session.run(None, {"A": a, "B": a}, run_options)[0], 2 * a)


def test_run_options_timeout_stops_a_never_ending_loop_and_session_stays_usable():
    import onnx
    from onnx import TensorProto, helper
    body = helper.make_graph(
        [helper.make_node("Add", ["c_in", "one"], ["c_out"]), helper.make_node("Identity", ["cond_in"], ["cond_out"])],
        "body",
        [helper.make_tensor_value_info("i", TensorProto.INT64, []),
         helper.make_tensor_value_info("cond_in", TensorProto.BOOL, []),
         helper.make_tensor_value_info("c_in", TensorProto.INT64, [])],
        [helper.make_tensor_value_info("cond_out", TensorProto.BOOL, []),
         helper.make_tensor_value_info("c_out", TensorProto.INT64, [])],
        initializer=[helper.make_tensor("one", TensorProto.INT64, [], [1])])
    graph = helper.make_graph(
        [helper.make_node("Loop", ["", "cond", "c0"], ["c"], body=body)], "forever",
        [helper.make_tensor_value_info("cond", TensorProto.BOOL, [])],
        [helper.make_tensor_value_info("c", TensorProto.INT64, [])],
        initializer=[helper.make_tensor("c0", TensorProto.INT64, [], [0])])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    session = ort.InferenceSession(model.SerializeToString())
    run_options = ort.RunOptions()
    run_options.timeout_ms = 50
    assert run_options.timeout_ms == 50
    with pytest.raises(ort.Terminated, match="timeout_ms"):
        session.run(None, {"cond": np.array(True)}, run_options)
    (c,) = session.run(None, {"cond": np.array(False)}, run_options)  # cond false: no iteration
    assert c == 0
    with pytest.raises(ValueError, match="timeout_ms"):
        run_options.timeout_ms = -1


def test_onnxruntime_capi_compatibility_module():
    from tessera.capi.onnxruntime_pybind11_state import Fail, InvalidArgument
    assert InvalidArgument is ort.InvalidArgument and issubclass(InvalidArgument, Fail)


def test_partition_lists_each_step():
    session = ort.InferenceSession(onnx_models.add_relu())
    steps = session.get_partition()
    assert [(op, ep) for _, op, ep, *_ in steps] == [("Add", "CPUExecutionProvider"), ("Relu", "CPUExecutionProvider")]
    assert session.get_input_device("A") == "cpu"


def test_free_dimension_override_fixes_symbolic_input_dims():
    model = onnx_models.unary("Relu", shape=("N", 3))
    options = ort.SessionOptions()
    options.add_free_dimension_override_by_name("N", 2)
    session = ort.InferenceSession(model, options)
    assert session.get_inputs()[0].shape == [2, 3]
    x = np.array([[-1, 2, -3], [4, -5, 6]], dtype=np.float32)
    np.testing.assert_array_equal(session.run(None, {"X": x})[0], np.maximum(x, 0))
    with pytest.raises(Exception, match="'X'"):
        session.run(None, {"X": np.zeros((1, 3), np.float32)})


def test_add_initializer_replaces_a_weight_without_a_copy_and_checks_it():
    from onnx import TensorProto, helper
    graph = helper.make_graph(
        [helper.make_node("Add", ["X", "W"], ["Y"])], "g",
        [helper.make_tensor_value_info("X", TensorProto.FLOAT, [2, 2])],
        [helper.make_tensor_value_info("Y", TensorProto.FLOAT, [2, 2])],
        initializer=[helper.make_tensor("W", TensorProto.FLOAT, [2, 2], [1, 1, 1, 1])])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    x = np.zeros((2, 2), np.float32)
    options = ort.SessionOptions()
    weight = np.array([[1, 2], [3, 4]], np.float32)
    options.add_initializer("W", ort.OrtValue.ortvalue_from_numpy(weight))
    session = ort.InferenceSession(model.SerializeToString(), options)
    np.testing.assert_array_equal(session.run(None, {"X": x})[0], weight)
    default = ort.InferenceSession(model.SerializeToString())
    np.testing.assert_array_equal(default.run(None, {"X": x})[0], np.ones((2, 2), np.float32))
    for name, value, message in [("V", weight, "no initializer of that name"),
                                 ("W", np.ones((3, 2), np.float32), "the model's is")]:
        bad = ort.SessionOptions()
        bad.add_initializer(name, ort.OrtValue.ortvalue_from_numpy(value))
        with pytest.raises(ort.InvalidArgument, match=message):
            ort.InferenceSession(model.SerializeToString(), bad)


def test_use_deterministic_compute_is_an_option_sessions_take():
    options = ort.SessionOptions()
    assert options.use_deterministic_compute is False
    options.use_deterministic_compute = True
    assert options.use_deterministic_compute is True
    session = ort.InferenceSession(onnx_models.add_relu(shape=(2, 2)), options)
    a = np.array([[-1, 2], [3, -4]], np.float32)
    first = session.run(["R"], {"A": a, "B": a})[0]
    np.testing.assert_array_equal(first, np.maximum(a + a, 0))
    for _ in range(3):  # the same bits run after run
        np.testing.assert_array_equal(session.run(["R"], {"A": a, "B": a})[0], first)
