#!/usr/bin/env python3
"""Writes a model whose run time is nearly all per-step host cost: N Conv + Relu pairs (16 -> 16 channels, 1x1) on
a [1, 16, 4, 4] input, so each step's arithmetic is a few thousand multiply-adds.

    /usr/bin/python3 bench/cpu/step_cost_model.py OUT.onnx [N (100)]
    node bench/compare_ort.mjs --model OUT.onnx --threads 1 --rounds 4 --budget 4

Tessera's time per step and ONNX Runtime's (run time / N) show what a step costs beyond its kernel.
"""
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper


def main():
    out = sys.argv[1]
    steps = int(sys.argv[2]) if len(sys.argv) > 2 else 100
    rng = np.random.RandomState(0)
    nodes, initializers, previous = [], [], "x"
    for i in range(steps):
        initializers.append(numpy_helper.from_array(rng.uniform(-0.3, 0.3, (16, 16, 1, 1)).astype(np.float32), f"w{i}"))
        initializers.append(numpy_helper.from_array(np.zeros(16, np.float32), f"b{i}"))
        nodes.append(helper.make_node("Conv", [previous, f"w{i}", f"b{i}"], [f"c{i}"]))
        nodes.append(helper.make_node("Relu", [f"c{i}"], [f"r{i}"]))
        previous = f"r{i}"
    graph = helper.make_graph(nodes, "step_cost", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 16, 4, 4])],
                              [helper.make_tensor_value_info(previous, TensorProto.FLOAT, None)], initializers)
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)]), out)


if __name__ == "__main__":
    main()
