"""The case of ONNX Runtime's onnxruntime/test/python/onnxruntime_test_python_nested_control_flow_op.py (MIT License,
Microsoft), written for Tessera: a three-level If graph whose innermost branches read the top-level graph's inputs
(an optional x1, x2, x3) as outer-scope values. onnxruntime runs it on CUDA/TensorRT only and checks that it runs;
here it runs on every EP present (CPU, the simulated device, CUDA where there is one), with feeds for each branch,
and checks the values:
  x1 given                -> x1 + x2
  x1 None, x3 >= 0        -> expand(x3 + 2, [1, 2])
  x1 None, x3 < 0         -> x2 + 1
"""

import numpy as np
import pytest
from onnx import TensorProto, checker, helper

import tessera as ort


def _tensor_vi(name, elem_type, shape):
    return helper.make_tensor_value_info(name, elem_type, shape)


def _constant_like(name, shape, value):
    """ConstantOfShape of `shape` filled with float `value`: (node, its shape initializer)."""
    shape_tensor = helper.make_tensor(f"{name}.shape", TensorProto.INT64, [len(shape)], shape)
    fill = helper.make_tensor(f"{name}.value", TensorProto.FLOAT, [1], [value])
    return helper.make_node("ConstantOfShape", [shape_tensor.name], [name], value=fill), shape_tensor


def nested_model():
    optional_x1 = helper.make_value_info(
        "x1.opt", helper.make_optional_type_proto(helper.make_tensor_type_proto(TensorProto.FLOAT, [1, 2])))
    x2 = _tensor_vi("x2", TensorProto.FLOAT, [1, 2])
    x3 = _tensor_vi("x3", TensorProto.FLOAT, [1])
    y = _tensor_vi("y", TensorProto.FLOAT, [1, 2])

    # Level 3, reached when x1 is present: x1 + x2.
    add_x1_x2 = helper.make_graph(
        [helper.make_node("OptionalGetElement", ["x1.opt"], ["x1"]),
         helper.make_node("Add", ["x1", "x2"], ["sum.x1.x2"])],
        "add-x1-x2", [], [_tensor_vi("sum.x1.x2", TensorProto.FLOAT, [1, 2])])

    # Level 3 under x3's If: x2 + 1 (else) and expand(x3 + 2) (then).
    one, one_shape = _constant_like("one", [1, 2], 1.0)
    add_x2_one = helper.make_graph(
        [one, helper.make_node("Add", ["one", "x2"], ["sum.x2.one"])],
        "add-x2-one", [], [_tensor_vi("sum.x2.one", TensorProto.FLOAT, [1, 2])], initializer=[one_shape])
    two, two_shape = _constant_like("two", [1], 2.0)
    expand_to = helper.make_tensor("expand.shape", TensorProto.INT64, [2], [1, 2])
    add_x3_two = helper.make_graph(
        [two, helper.make_node("Add", ["two", "x3"], ["sum.x3.two"]),
         helper.make_node("Expand", ["sum.x3.two", "expand.shape"], ["wide.x3.two"])],
        "add-x3-two", [], [_tensor_vi("wide.x3.two", TensorProto.FLOAT, [1, 2])],
        initializer=[two_shape, expand_to])

    # Level 2, reached when x1 is absent: If(x3 >= 0).
    zero, zero_shape = _constant_like("zero", [1], 0.0)
    x3_branch = helper.make_graph(
        [zero,
         helper.make_node("GreaterOrEqual", ["x3", "zero"], ["x3.ge"]),
         helper.make_node("Squeeze", ["x3.ge"], ["x3.ge.scalar"]),
         helper.make_node("If", ["x3.ge.scalar"], ["x3.if"], then_branch=add_x3_two, else_branch=add_x2_one)],
        "x3-branch", [], [_tensor_vi("x3.if", TensorProto.FLOAT, [1, 2])], initializer=[zero_shape])

    # Level 1: If(x1 has an element).
    graph = helper.make_graph(
        [helper.make_node("OptionalHasElement", ["x1.opt"], ["x1.present"]),
         helper.make_node("If", ["x1.present"], ["y"], then_branch=add_x1_x2, else_branch=x3_branch)],
        "nested-if", [optional_x1, x2, x3], [y])
    model = helper.make_model(graph, opset_imports=[helper.make_operatorsetid("", 15)])
    checker.check_model(model, full_check=True)
    return model.SerializeToString()


def _providers():
    available = ort.get_available_providers()
    found = [["CPUExecutionProvider"]]
    for name in ("TestingExecutionProvider", "CUDAExecutionProvider"):
        if name in available:
            found.append([name, "CPUExecutionProvider"])
    return found


@pytest.mark.parametrize("providers", _providers(), ids=lambda p: p[0])
def test_3_level_control_flow_ops_graph(providers):
    session = ort.InferenceSession(nested_model(), providers=providers)
    x1 = np.array([[3.0, -4.0]], dtype=np.float32)
    x2 = np.ones((1, 2), dtype=np.float32)
    cases = [
        (x1, np.array([-1.0], dtype=np.float32), x1 + x2),
        (None, np.array([-1.0], dtype=np.float32), x2 + 1),
        (None, np.array([5.0], dtype=np.float32), np.full((1, 2), 7.0, dtype=np.float32)),
    ]
    for given_x1, x3, expected in cases:
        (y,) = session.run(["y"], {"x1.opt": given_x1, "x2": x2, "x3": x3})
        np.testing.assert_array_equal(y, expected, err_msg=f"x1 {given_x1}, x3 {x3}")


def test_none_fed_to_an_input_that_is_not_optional_is_refused():
    session = ort.InferenceSession(nested_model(), providers=["CPUExecutionProvider"])
    with pytest.raises(ort.InvalidArgument, match="input 'x2' is not optional"):
        session.run(["y"], {"x1.opt": None, "x2": None, "x3": np.array([1.0], dtype=np.float32)})
    # The session stays usable.
    (y,) = session.run(["y"], {"x1.opt": None, "x2": np.ones((1, 2), np.float32), "x3": np.array([-3.0], np.float32)})
    np.testing.assert_array_equal(y, np.full((1, 2), 2.0, dtype=np.float32))
