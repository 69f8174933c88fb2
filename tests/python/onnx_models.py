"""Small ONNX models for the Python tests, built with the onnx package."""

import onnx
from onnx import TensorProto, helper

FLOAT = TensorProto.FLOAT


def _model(nodes, inputs, outputs, initializers=(), opset=17, extra_opsets=()):
    graph = helper.make_graph(nodes, "test_graph", inputs, outputs, initializer=list(initializers))
    opsets = [helper.make_opsetid("", opset)] + [helper.make_opsetid(d, v) for d, v in extra_opsets]
    model = helper.make_model(graph, opset_imports=opsets, producer_name="tessera-tests")
    model.ir_version = 8
    return model.SerializeToString()


def binary(op="Add", shape=("batch", 4), elem=FLOAT):
    """C = op(A, B)."""
    return _model([helper.make_node(op, ["A", "B"], ["C"], name="binary")],
                  [helper.make_tensor_value_info("A", elem, list(shape)),
                   helper.make_tensor_value_info("B", elem, list(shape))],
                  [helper.make_tensor_value_info("C", elem, list(shape))])


def add_relu(shape=(2, 3)):
    """S = A + B, R = Relu(S): two outputs, both kernels available on the testing device."""
    return _model([helper.make_node("Add", ["A", "B"], ["S"], name="add"),
                   helper.make_node("Relu", ["S"], ["R"], name="relu")],
                  [helper.make_tensor_value_info("A", FLOAT, list(shape)),
                   helper.make_tensor_value_info("B", FLOAT, list(shape))],
                  [helper.make_tensor_value_info("S", FLOAT, list(shape)),
                   helper.make_tensor_value_info("R", FLOAT, list(shape))])


def unary(op, elem=FLOAT, shape=(None, 3)):
    return _model([helper.make_node(op, ["X"], ["Y"], name=op.lower())],
                  [helper.make_tensor_value_info("X", elem, list(shape))],
                  [helper.make_tensor_value_info("Y", elem, list(shape))])


def matmul_chain(size, count):
    """Y = X @ W @ W ... (count MatMuls): a model that takes measurable time."""
    import numpy as np
    weight = helper.make_tensor("W", FLOAT, [size, size],
                                (np.eye(size, dtype=np.float32) * 0.5 + 0.01).flatten().tolist())
    nodes, previous = [], "X"
    for i in range(count):
        output = "Y" if i == count - 1 else f"T{i}"
        nodes.append(helper.make_node("MatMul", [previous, "W"], [output], name=f"matmul{i}"))
        previous = output
    return _model(nodes, [helper.make_tensor_value_info("X", FLOAT, [size, size])],
                  [helper.make_tensor_value_info("Y", FLOAT, [size, size])], initializers=[weight])


def with_metadata():
    model = onnx.load_from_string(binary())
    model.doc_string = "adds two tensors"
    model.domain = "ai.tessera.test"
    model.model_version = 7
    helper.set_model_props(model, {"author": "tests", "license": "MIT"})
    return model.SerializeToString()


def unknown_op():
    return _model([helper.make_node("FrobnicateTensor", ["X"], ["Y"], name="mystery", domain="com.example")],
                  [helper.make_tensor_value_info("X", FLOAT, [2])], [helper.make_tensor_value_info("Y", FLOAT, [2])],
                  extra_opsets=[("com.example", 1)])


def conv_image(channels=3):
    """Y = Conv3x3(Relu(Conv3x3(X))) with padding: receptive-field radius 2, image input "X" [1, C, H, W]."""
    import numpy as np
    from onnx import numpy_helper
    rng = np.random.default_rng(3)
    w1 = numpy_helper.from_array(rng.standard_normal((4, channels, 3, 3)).astype(np.float32) * 0.3, "W1")
    w2 = numpy_helper.from_array(rng.standard_normal((channels, 4, 3, 3)).astype(np.float32) * 0.3, "W2")
    return _model([helper.make_node("Conv", ["X", "W1"], ["H"], pads=[1, 1, 1, 1]),
                   helper.make_node("Relu", ["H"], ["R"]),
                   helper.make_node("Conv", ["R", "W2"], ["Y"], pads=[1, 1, 1, 1])],
                  [helper.make_tensor_value_info("X", FLOAT, [1, channels, "h", "w"])],
                  [helper.make_tensor_value_info("Y", FLOAT, [1, channels, "h", "w"])], [w1, w2])


def pointwise_image(channels=2):
    """Y = Relu(X) * X + X on an image "X" [1, C, H, W]: every op has a kernel on the testing device."""
    return _model([helper.make_node("Relu", ["X"], ["R"]),
                   helper.make_node("Mul", ["R", "X"], ["M"]),
                   helper.make_node("Add", ["M", "X"], ["Y"])],
                  [helper.make_tensor_value_info("X", FLOAT, [1, channels, "h", "w"])],
                  [helper.make_tensor_value_info("Y", FLOAT, [1, channels, "h", "w"])])


def silu(shape=("batch", 8)):
    """Y = X * Sigmoid(X): SiLU as exporters write it (silu_fusion makes it one QuickGelu)."""
    return _model([helper.make_node("Sigmoid", ["X"], ["G"], name="gate"),
                   helper.make_node("Mul", ["X", "G"], ["Y"], name="product")],
                  [helper.make_tensor_value_info("X", FLOAT, list(shape))],
                  [helper.make_tensor_value_info("Y", FLOAT, list(shape))])
