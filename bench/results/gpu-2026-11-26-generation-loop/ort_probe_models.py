import numpy as np, onnx
from onnx import helper as h, TensorProto as T, numpy_helper as nh
def save(name, nodes, ins, outs, inits=()):
    g = h.make_graph(nodes, name, ins, outs, list(inits))
    m = h.make_model(g, opset_imports=[h.make_opsetid("", 17)]); m.ir_version = 8
    onnx.checker.check_model(m); onnx.save(m, name + ".onnx")
vi = h.make_tensor_value_info
save("scatter", [h.make_node("ScatterElements", ["d", "i", "u"], ["y"], axis=2)],
     [vi("d", T.FLOAT16, [1, 2, 1000, 8]), vi("i", T.INT64, [1, 2, 1, 8]), vi("u", T.FLOAT16, [1, 2, 1, 8])],
     [vi("y", T.FLOAT16, [1, 2, 1000, 8])])
save("argmax", [h.make_node("ArgMax", ["x"], ["y"], axis=2, keepdims=0)],
     [vi("x", T.FLOAT16, [1, 1, 50257])], [vi("y", T.INT64, [1, 1])])
save("add_int64", [h.make_node("Add", ["x", "one"], ["y"])], [vi("x", T.INT64, [1])], [vi("y", T.INT64, [1])],
     [nh.from_array(np.array([1], np.int64), "one")])
save("gather_table", [h.make_node("Gather", ["t", "x"], ["y"])], [vi("x", T.INT64, [1])], [vi("y", T.FLOAT16, [1, 8])],
     [nh.from_array(np.zeros((1000, 8), np.float16), "t")])
save("expand_int64", [h.make_node("Reshape", ["x", "s"], ["r"]), h.make_node("Expand", ["r", "e"], ["y"])],
     [vi("x", T.INT64, [1])], [vi("y", T.INT64, [1, 2, 1, 8])],
     [nh.from_array(np.array([1, 1, 1, 1], np.int64), "s"), nh.from_array(np.array([1, 2, 1, 8], np.int64), "e")])
save("add_half", [h.make_node("Add", ["x", "x"], ["y"])], [vi("x", T.FLOAT16, [1, 8])], [vi("y", T.FLOAT16, [1, 8])])
print("ok")
