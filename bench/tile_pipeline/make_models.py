#!/usr/bin/env python3
"""Fully convolutional image models for tessera_tile_bench and examples/tiled_inference.

  python3 bench/tile_pipeline/make_models.py OUT_DIR

writes, each with input "image" [1, 3, H, W] and output "restored" [1, 3, H, W] (H and W free):
  tone_curve.onnx          y = relu(x) * x * a + x * b per channel: pointwise, every op has a kernel on the
                           simulated device (the example's CI variant)
  conv_light[_fp16].onnx   3 -> 8 -> 3 channels, two 3x3 convolutions: little compute per byte (copy-bound)
  conv_heavy[_fp16].onnx   3 -> 32, four 32 -> 32, 32 -> 3 channels, 3x3 convolutions: compute-bound
Receptive-field radius: 0, 2 and 6 pixels; a halo at least that large makes tiled outputs equal whole-image ones.
"""
import os
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper


def model(nodes, initializers, elem, name):
    graph = helper.make_graph(
        nodes, name,
        [helper.make_tensor_value_info("image", elem, [1, 3, "height", "width"])],
        [helper.make_tensor_value_info("restored", elem, [1, 3, "height", "width"])],
        initializers)
    m = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], producer_name="tessera make_models.py")
    m.ir_version = 8
    onnx.checker.check_model(m)
    return m


def conv_stack(channels, elem, name):
    rng = np.random.default_rng(0)
    dtype = np.float16 if elem == TensorProto.FLOAT16 else np.float32
    nodes, inits, prev = [], [], "image"
    for i in range(len(channels) - 1):
        cin, cout = channels[i], channels[i + 1]
        w = (rng.standard_normal((cout, cin, 3, 3)) * np.sqrt(2.0 / (9 * cin))).astype(dtype)
        b = (rng.standard_normal(cout) * 0.01).astype(dtype)
        inits += [numpy_helper.from_array(w, f"w{i}"), numpy_helper.from_array(b, f"b{i}")]
        last = i == len(channels) - 2
        out = "restored" if last else f"c{i}"
        nodes.append(helper.make_node("Conv", [prev, f"w{i}", f"b{i}"], [out], pads=[1, 1, 1, 1]))
        if not last:
            nodes.append(helper.make_node("Relu", [out], [f"r{i}"]))
            prev = f"r{i}"
    return model(nodes, inits, elem, name)


def tone_curve():
    a = numpy_helper.from_array(np.array([0.5, 0.25, 0.75], np.float32).reshape(1, 3, 1, 1), "a")
    b = numpy_helper.from_array(np.array([1.0, 0.5, 2.0], np.float32).reshape(1, 3, 1, 1), "b")
    nodes = [helper.make_node("Relu", ["image"], ["r"]),
             helper.make_node("Mul", ["r", "image"], ["rx"]),
             helper.make_node("Mul", ["rx", "a"], ["rxa"]),
             helper.make_node("Mul", ["image", "b"], ["xb"]),
             helper.make_node("Add", ["rxa", "xb"], ["restored"])]
    return model(nodes, [a, b], TensorProto.FLOAT, "tone_curve")


def main():
    out = sys.argv[1] if len(sys.argv) > 1 else "."
    os.makedirs(out, exist_ok=True)
    onnx.save(tone_curve(), os.path.join(out, "tone_curve.onnx"))
    for suffix, elem in (("", TensorProto.FLOAT), ("_fp16", TensorProto.FLOAT16)):
        onnx.save(conv_stack([3, 8, 3], elem, "conv_light"), os.path.join(out, f"conv_light{suffix}.onnx"))
        onnx.save(conv_stack([3, 32, 32, 32, 32, 32, 3], elem, "conv_heavy"),
                  os.path.join(out, f"conv_heavy{suffix}.onnx"))
    print("wrote", sorted(f for f in os.listdir(out) if f.endswith(".onnx")), "to", out)


if __name__ == "__main__":
    main()
