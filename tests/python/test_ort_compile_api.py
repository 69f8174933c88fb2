"""onnxruntime's onnxruntime_test_python_compile_api.py (MIT License, Microsoft), mirrored in pytest form: the same
ModelCompiler calls and checks through tessera (python/tessera/compile.py). Tessera's EPs compile nothing ahead of
time, so "compiling" writes the model as a session runs it (ModelCompiler's note); the checks onnxruntime makes --
files written, bytes returned, flags' errors, optimization levels, write functors -- hold the same.

The testdata models are built here with the onnx package:
- nhwc_resize_scales_opset18.onnx: NHWC input -> Transpose -> Resize by scales -> Transpose (opset 18);
- test_cast_back_to_back_non_const_mixed_types_origin.onnx: 9 Casts of non-constant values back to back over mixed
  types, one of them to the type its input already has (what onnxruntime's level 1 removes, and Tessera's basic
  level: 9 Casts unoptimized, 8 at ORT_ENABLE_BASIC).
Cases not mirrored as passing, each skipped with its reason: the QNN / Windows-policy / example-plugin-EP cases (other
EPs), and the two get_initializer_location_func cases (not supported: one external file by size instead).
"""

import os

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

import tessera as onnxrt
from tessera.capi.onnxruntime_pybind11_state import Fail

_NEEDS_OTHER_EP = "needs onnxruntime's QNN EP, Windows-only selection policies or its example plugin EP library"


@pytest.fixture
def models(tmp_path):
    resize = tmp_path / "nhwc_resize_scales_opset18.onnx"
    scales = numpy_helper.from_array(np.array([1.0, 1.0, 2.0, 2.0], np.float32), "scales")
    graph = helper.make_graph(
        [helper.make_node("Transpose", ["X"], ["nchw"], perm=[0, 3, 1, 2]),
         helper.make_node("Resize", ["nchw", "", "scales"], ["resized"], mode="nearest"),
         helper.make_node("Transpose", ["resized"], ["Y"], perm=[0, 2, 3, 1])],
        "nhwc_resize", [helper.make_tensor_value_info("X", TensorProto.FLOAT, [1, 4, 4, 3])],
        [helper.make_tensor_value_info("Y", TensorProto.FLOAT, [1, 8, 8, 3])], [scales])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 18)])
    model.ir_version = 8
    onnx.save(model, resize)

    casts = tmp_path / "test_cast_back_to_back_non_const_mixed_types_origin.onnx"
    chain = [("a0", TensorProto.FLOAT), ("a1", TensorProto.FLOAT16), ("a2", TensorProto.FLOAT),
             ("a3", TensorProto.INT32), ("a4", TensorProto.INT64), ("a5", TensorProto.INT64),  # a4 -> a5: a no-op
             ("a6", TensorProto.FLOAT), ("a7", TensorProto.DOUBLE), ("a8", TensorProto.FLOAT16),
             ("Y", TensorProto.FLOAT)]
    nodes = [helper.make_node("Cast", [source], [target], to=to)
             for (source, _), (target, to) in zip(chain[:-1], chain[1:])]
    graph = helper.make_graph(nodes, "casts", [helper.make_tensor_value_info("a0", TensorProto.FLOAT, [2, 3])],
                              [helper.make_tensor_value_info("Y", TensorProto.FLOAT, [2, 3])])
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]), casts)
    return {"resize": str(resize), "casts": str(casts), "dir": tmp_path}


def _compiler(path_or_bytes, **kwargs):
    return onnxrt.ModelCompiler(onnxrt.SessionOptions(), path_or_bytes, embed_compiled_data_into_model=True,
                                external_initializers_file_path=None, **kwargs)


@pytest.mark.skip(reason=_NEEDS_OTHER_EP)
def test_compile_with_files_prefer_npu_policy():
    pass


@pytest.mark.skip(reason=_NEEDS_OTHER_EP)
def test_compile_shared_resources_plugin_ep():
    pass


@pytest.mark.skip(reason=_NEEDS_OTHER_EP)
def test_compile_with_ep_selection_delegate():
    pass


def test_compile_with_input_and_output_files(models):
    output = models["dir"] / "model.compiled1.onnx"
    _compiler(models["resize"]).compile_to_file(str(output))
    assert output.exists()
    # Tessera's own check beyond onnxruntime's: the written model runs and gives the input model's results.
    x = np.random.default_rng(1).standard_normal((1, 4, 4, 3)).astype(np.float32)
    want = onnxrt.InferenceSession(models["resize"]).run(None, {"X": x})[0]
    got = onnxrt.InferenceSession(str(output)).run(None, {"X": x})[0]
    np.testing.assert_array_equal(got, want)


def test_compile_flags_error_if_no_compiled_nodes(models):
    output = models["dir"] / "model.compiled1.onnx"
    compiler = _compiler(models["resize"], flags=onnxrt.OrtCompileApiFlags.ERROR_IF_NO_NODES_COMPILED)
    with pytest.raises(Fail) as error:
        compiler.compile_to_file(str(output))
    assert "Unable to compile any nodes" in str(error.value)
    assert not output.exists()


def test_compile_flags_error_if_output_file_exists(models):
    output = models["dir"] / "model.compiled1.onnx"
    compiler = _compiler(models["resize"], flags=onnxrt.OrtCompileApiFlags.ERROR_IF_OUTPUT_FILE_EXISTS)
    compiler.compile_to_file(str(output))
    assert output.exists()
    with pytest.raises(Fail) as error:
        compiler.compile_to_file(str(output))
    assert "exists already" in str(error.value)


def test_compile_to_file_with_input_model_in_buffer(models):
    output = models["dir"] / "model.compiled2.onnx"
    _compiler(onnx.load(models["resize"]).SerializeToString()).compile_to_file(str(output))
    assert output.exists()


def test_compile_from_buffer_to_buffer(models):
    compiled = _compiler(onnx.load(models["resize"]).SerializeToString()).compile_to_bytes()
    assert isinstance(compiled, bytes) and len(compiled) > 0
    assert onnx.load_model_from_string(compiled).graph.node  # a model, not an empty buffer


def test_compile_model_with_outer_scope_initializer_used_only_in_subgraph():
    axes = numpy_helper.from_array(np.array([0], np.int64), "axes")
    data = numpy_helper.from_array(np.array([10.0, 20.0, 30.0, 40.0], np.float32), "data")
    cond = numpy_helper.from_array(np.array(True), "cond")
    branches = [helper.make_graph([helper.make_node("Unsqueeze", ["data", "axes"], [name])], f"{name}_body", [],
                                  [helper.make_tensor_value_info(name, TensorProto.FLOAT, [1, 4])])
                for name in ("y_then", "y_else")]
    graph = helper.make_graph([helper.make_node("If", ["cond"], ["Y"], then_branch=branches[0],
                                                else_branch=branches[1])], "main", [],
                              [helper.make_tensor_value_info("Y", TensorProto.FLOAT, [1, 4])], [axes, data, cond])
    # onnxruntime's case writes opset 21 / IR 10; Debian's onnx package checks up to opset 17 / IR 8.
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    onnx.checker.check_model(model, full_check=True)
    compiled = _compiler(model.SerializeToString()).compile_to_bytes()
    assert isinstance(compiled, bytes) and len(compiled) > 0
    # And it runs: the outer initializers the branches read came along.
    np.testing.assert_array_equal(onnxrt.InferenceSession(compiled).run(None, {})[0], [[10.0, 20.0, 30.0, 40.0]])


def test_compile_graph_optimization_level(models):
    def op_counts(output, level):
        kwargs = {} if level is None else {"graph_optimization_level": level}
        onnxrt.ModelCompiler(onnxrt.SessionOptions(), models["casts"], **kwargs).compile_to_file(str(output))
        assert output.exists()
        counts = {}
        for node in onnx.load(str(output)).graph.node:
            counts[node.op_type] = counts.get(node.op_type, 0) + 1
        return counts

    assert op_counts(models["dir"] / "cast.disable_all.compiled.onnx", None)["Cast"] == 9
    assert op_counts(models["dir"] / "cast.enable_all.compiled.onnx",
                     onnxrt.GraphOptimizationLevel.ORT_ENABLE_BASIC)["Cast"] == 8


def test_compile_from_file_to_stream(models):
    output = models["dir"] / "model.compiled.stream.onnx"
    with open(output, "wb") as output_fd:
        def write(buffer):
            assert len(buffer) > 0
            output_fd.write(buffer)

        _compiler(models["resize"]).compile_to_stream(write)
    assert output.exists() and output.stat().st_size > 0


def test_compile_to_stream_that_raises_exception(models):
    def write(buffer):
        assert len(buffer) > 0
        raise ValueError("My Python Error")

    with pytest.raises(Fail) as error:
        _compiler(models["resize"]).compile_to_stream(write)
    assert "My Python Error" in str(error.value)


@pytest.mark.skip(reason="get_initializer_location_func is not supported (ModelCompiler raises NotImplemented naming "
                         "it): Tessera writes initializers of at least external_initializers_size_threshold bytes to "
                         "one external_initializers_file_path")
def test_compile_with_basic_initializer_location_func():
    pass


@pytest.mark.skip(reason="get_initializer_location_func is not supported (as above)")
def test_compile_with_initializer_func_that_reuses():
    pass


@pytest.mark.skip(reason=_NEEDS_OTHER_EP + " (a model that must be compiled before it loads)")
def test_fail_load_uncompiled_model_and_then_compile():
    pass


# ---- Tessera's own cases ------------------------------------------------------------------------------------------

def test_initializer_location_func_is_refused_by_name(models):
    with pytest.raises(onnxrt.NotImplemented, match="get_initializer_location_func"):
        onnxrt.ModelCompiler(onnxrt.SessionOptions(), models["resize"],
                             get_initializer_location_func=lambda name, value, info: None)


def test_external_initializers_by_size_and_the_callers_options_unchanged(models):
    rng = np.random.default_rng(0)
    w = numpy_helper.from_array(rng.standard_normal((64, 64)).astype(np.float32), "W")
    graph = helper.make_graph([helper.make_node("MatMul", ["X", "W"], ["Y"])], "mm",
                              [helper.make_tensor_value_info("X", TensorProto.FLOAT, [2, 64])],
                              [helper.make_tensor_value_info("Y", TensorProto.FLOAT, [2, 64])], [w])
    source = models["dir"] / "mm.onnx"
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]), source)
    options = onnxrt.SessionOptions()
    compiler = onnxrt.ModelCompiler(options, str(source), external_initializers_file_path="mm.bin",
                                    external_initializers_size_threshold=1024)
    output = models["dir"] / "mm.compiled.onnx"
    compiler.compile_to_file(str(output))
    assert (models["dir"] / "mm.bin").stat().st_size >= 64 * 64 * 4
    assert options.optimized_model_filepath == ""  # the caller's options are not the compiler's
    x = rng.standard_normal((2, 64)).astype(np.float32)
    np.testing.assert_allclose(onnxrt.InferenceSession(str(output)).run(None, {"X": x})[0], x @ numpy_helper.to_array(w),
                               rtol=1e-5, atol=1e-5)


def test_default_output_path_and_bytes_without_one(models):
    _compiler(models["resize"]).compile_to_file()
    assert os.path.exists(os.path.splitext(models["resize"])[0] + "_ctx.onnx")
    with pytest.raises(onnxrt.InvalidArgument, match="output_model_path"):
        _compiler(onnx.load(models["resize"]).SerializeToString()).compile_to_file()
