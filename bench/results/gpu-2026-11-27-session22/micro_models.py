# Micro models for the Vulkan EP's per-dispatch cost and product speed.
import numpy as np, onnx, sys
from onnx import helper, TensorProto, numpy_helper
out = sys.argv[1]
def save(nodes, inputs, outputs, inits, name):
    g = helper.make_graph(nodes, name, inputs, outputs, inits)
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])
    m.ir_version = 8
    onnx.save(m, f"{out}/{name}.onnx")
F16 = TensorProto.FLOAT16
# 200 chained Relu on 1024 values.
nodes = [helper.make_node("Relu", [f"t{i}"], [f"t{i+1}"]) for i in range(200)]
save(nodes, [helper.make_tensor_value_info("t0", F16, [1, 1024])], [helper.make_tensor_value_info("t200", F16, [1, 1024])], [], "relu200")
# 24 chained products 128x768 @ 768x768.
rng = np.random.default_rng(0)
for n, name in [(768, "mm768"), (3072, "mm3072")]:
    nodes, inits = [], []
    for i in range(24):
        w = (rng.standard_normal((768, n)) / np.sqrt(768)).astype(np.float16) if i % 2 == 0 or n == 768 else (rng.standard_normal((n, 768)) / np.sqrt(n)).astype(np.float16)
        inits.append(numpy_helper.from_array(w, f"w{i}"))
        nodes.append(helper.make_node("MatMul", [f"t{i}", f"w{i}"], [f"t{i+1}"]))
    last = 768 if n == 768 or 24 % 2 == 0 else n
    save(nodes, [helper.make_tensor_value_info("t0", F16, [128, 768])], [helper.make_tensor_value_info("t24", F16, [128, last])], inits, name)
