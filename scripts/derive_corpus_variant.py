#!/usr/bin/env python3
"""Derives a float16 or QDQ-quantized variant of a float32 corpus model, as people ship such variants.

  derive_corpus_variant.py fp16 SOURCE.onnx OUT.onnx
  derive_corpus_variant.py qdq  SOURCE.onnx OUT.onnx --calibration DIR

fp16: every float32 initializer, Constant and intermediate value becomes float16; the graph's inputs and outputs
stay float32 behind one Cast each ("keep I/O types", what float16 converters offer). Inputs that ONNX requires in
float32 whatever the data type (Resize's roi and scales, Upsample's scales) stay float32.

qdq: static quantization in the QDQ format (what onnxruntime.quantization.quantize_static writes by default):
every Conv's and MatMul's weights become int8 per output channel (symmetric) behind a DequantizeLinear, and
their float activation inputs pass through QuantizeLinear -> DequantizeLinear with uint8 per-tensor parameters
from calibration ranges. DIR holds one .npy per value (as `tessera run --output-dir` writes them) from a run of
the float model with every Conv/MatMul input added as a graph output:

  derive_corpus_variant.py calibration-model SOURCE.onnx CALIB.onnx --shape NAME=1x3x224x224 --inputs IN_DIR
  tessera run CALIB.onnx --input NAME=IN_DIR/NAME.npy --output-dir DIR

Only Debian's python3-onnx and numpy are needed; the result is deterministic for a given source and calibration.
"""
import argparse
import os
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

FLOAT_ONLY_INPUTS = {"Resize": {1, 2}, "Upsample": {1}}


def to_fp16(model):
    graph = model.graph
    keep_float = set()
    for node in graph.node:
        for i in FLOAT_ONLY_INPUTS.get(node.op_type, ()):
            if i < len(node.input) and node.input[i]:
                keep_float.add(node.input[i])
    # Values computed only to feed float32-only inputs (e.g. scales from Shape arithmetic) keep float32 too.
    producers = {o: n for n in graph.node for o in n.output}
    stack = list(keep_float)
    while stack:
        value = stack.pop()
        node = producers.get(value)
        if node is None or node.op_type in ("Shape", "Cast"):
            continue
        for i in node.input:
            if i and i not in keep_float:
                keep_float.add(i)
                stack.append(i)

    for init in graph.initializer:
        if init.data_type == TensorProto.FLOAT and init.name not in keep_float:
            init.CopyFrom(numpy_helper.from_array(numpy_helper.to_array(init).astype(np.float16), init.name))
    for node in graph.node:
        if node.op_type == "Constant" and node.output[0] not in keep_float:
            for attr in node.attribute:
                if attr.name == "value" and attr.t.data_type == TensorProto.FLOAT:
                    attr.t.CopyFrom(numpy_helper.from_array(numpy_helper.to_array(attr.t).astype(np.float16)))
        if node.op_type == "Cast" and node.output[0] not in keep_float:
            for attr in node.attribute:
                if attr.name == "to" and attr.i == TensorProto.FLOAT:
                    attr.i = TensorProto.FLOAT16
        if node.op_type in ("ConstantOfShape",) and node.output[0] not in keep_float:
            for attr in node.attribute:
                if attr.name == "value" and attr.t.data_type == TensorProto.FLOAT:
                    attr.t.CopyFrom(numpy_helper.from_array(numpy_helper.to_array(attr.t).astype(np.float16)))
    for vi in graph.value_info:
        if vi.type.tensor_type.elem_type == TensorProto.FLOAT and vi.name not in keep_float:
            vi.type.tensor_type.elem_type = TensorProto.FLOAT16

    # float32 graph inputs: Cast to float16 right after; float32 outputs: Cast from float16 right before.
    casts_in, renames = [], {}
    for inp in graph.input:
        if inp.type.tensor_type.elem_type == TensorProto.FLOAT and inp.name not in keep_float:
            half = inp.name + "_fp16"
            renames[inp.name] = half
            casts_in.append(helper.make_node("Cast", [inp.name], [half], to=TensorProto.FLOAT16, name=half + "_cast"))
    for node in graph.node:
        for i, name in enumerate(node.input):
            if name in renames:
                node.input[i] = renames[name]
    casts_out = []
    for out in graph.output:
        if out.type.tensor_type.elem_type == TensorProto.FLOAT:
            half = out.name + "_fp16"
            for node in graph.node:
                for i, name in enumerate(node.output):
                    if name == out.name:
                        node.output[i] = half
                for i, name in enumerate(node.input):
                    if name == out.name:
                        node.input[i] = half
            casts_out.append(helper.make_node("Cast", [half], [out.name], to=TensorProto.FLOAT, name=out.name + "_cast"))
    nodes = casts_in + list(graph.node) + casts_out
    del graph.node[:]
    graph.node.extend(nodes)
    del graph.value_info[:]  # stale after the retyping; loaders infer them again
    return model


def quantizable(graph):
    """(node, weight input index) of every Conv / MatMul / Gemm with a float32 constant weight."""
    inits = {i.name: i for i in graph.initializer}
    found = []
    for node in graph.node:
        if node.op_type in ("Conv", "MatMul", "Gemm") and len(node.input) > 1:
            w = inits.get(node.input[1])
            if w is not None and w.data_type == TensorProto.FLOAT and len(w.dims) >= 2:
                found.append(node)
    return found


def calibration_outputs(model):
    return sorted({n.input[0] for n in quantizable(model.graph)})


def to_qdq(model, calibration_dir):
    graph = model.graph
    inits = {i.name: i for i in graph.initializer}
    new_inits, qdq_nodes, done = [], {}, {}
    for node in quantizable(graph):
        x = node.input[0]
        if x not in done:
            data = np.load(os.path.join(calibration_dir, x.replace("/", "_") + ".npy")).astype(np.float64)
            lo, hi = min(0.0, float(data.min())), max(0.0, float(data.max()))
            scale = np.float32((hi - lo) / 255.0 if hi > lo else 1.0)
            zero = np.uint8(np.clip(np.round(-lo / scale), 0, 255))
            base = x + "_qdq"
            new_inits += [numpy_helper.from_array(np.array(scale, np.float32), base + "_scale"),
                          numpy_helper.from_array(np.array(zero, np.uint8), base + "_zero_point")]
            qdq_nodes.setdefault(x, []).extend([
                helper.make_node("QuantizeLinear", [x, base + "_scale", base + "_zero_point"], [base + "_q"],
                                 name=base + "_quantize"),
                helper.make_node("DequantizeLinear", [base + "_q", base + "_scale", base + "_zero_point"],
                                 [base + "_dq"], name=base + "_dequantize")])
            done[x] = base + "_dq"
        node.input[0] = done[x]
        w_name = node.input[1]
        if w_name + "_dq" not in inits:
            w = numpy_helper.to_array(inits[w_name]).astype(np.float32)
            # Conv weights [out, in, ...]: axis 0; MatMul / Gemm(transB=0) weights [K, N]: axis 1.
            trans_b = any(a.name == "transB" and a.i for a in node.attribute)
            axis = 0 if node.op_type == "Conv" or (node.op_type == "Gemm" and trans_b) else 1
            moved = np.moveaxis(w, axis, 0).reshape(w.shape[axis], -1)
            scale = (np.abs(moved).max(axis=1) / 127.0).astype(np.float32)
            scale[scale == 0] = 1.0
            shape = [1] * w.ndim
            shape[axis] = -1
            q = np.clip(np.round(w / scale.reshape(shape)), -127, 127).astype(np.int8)
            new_inits += [numpy_helper.from_array(q, w_name + "_quantized"),
                          numpy_helper.from_array(scale, w_name + "_scale"),
                          numpy_helper.from_array(np.zeros_like(scale, dtype=np.int8), w_name + "_zero_point")]
            qdq_nodes.setdefault(None, []).append(
                helper.make_node("DequantizeLinear", [w_name + "_quantized", w_name + "_scale", w_name + "_zero_point"],
                                 [w_name + "_dq"], axis=axis, name=w_name + "_dequantize"))
            inits[w_name + "_dq"] = None
        node.input[1] = w_name + "_dq"
    # Place each activation's Q/DQ right after its producer (graph inputs' at the front), weights' at the front.
    producers = {o: n.name or id(n) for n in graph.node for o in n.output}
    ordered = list(qdq_nodes.get(None, []))
    for value, nodes in qdq_nodes.items():
        if value is not None and value not in producers:
            ordered += nodes
    for node in graph.node:
        ordered.append(node)
        for o in node.output:
            ordered += qdq_nodes.get(o, [])
    del graph.node[:]
    graph.node.extend(ordered)
    used = {i for n in graph.node for i in n.input}
    kept = [i for i in graph.initializer if i.name in used]
    del graph.initializer[:]
    graph.initializer.extend(kept + [i for i in new_inits if i.name in used])
    if not any(o.domain in ("", "ai.onnx") and o.version >= 13 for o in model.opset_import):
        sys.exit("qdq: per-channel DequantizeLinear needs opset >= 13")
    return model


def write_calibration_model(model, out, shapes, input_dir):
    """The source with every Conv/MatMul input as a graph output, and random inputs (uniform [-1, 1), seed 0, the
    bench's distribution) of the given shapes as .npy files in input_dir."""
    inferred = onnx.shape_inference.infer_shapes(model)
    types = {v.name: v.type for v in list(inferred.graph.value_info) + list(inferred.graph.input)}
    outputs = {o.name for o in model.graph.output}
    for name in calibration_outputs(model):
        if name in outputs:
            continue
        vi = onnx.ValueInfoProto()
        vi.name = name
        if name in types:
            vi.type.CopyFrom(types[name])
        else:
            vi.type.tensor_type.elem_type = TensorProto.FLOAT
        model.graph.output.append(vi)
    onnx.save(model, out)
    rng = np.random.default_rng(0)
    os.makedirs(input_dir, exist_ok=True)
    for inp in model.graph.input:
        if inp.name not in shapes:
            continue
        np.save(os.path.join(input_dir, inp.name + ".npy"),
                rng.uniform(-1, 1, shapes[inp.name]).astype(np.float32))


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("kind", choices=["fp16", "qdq", "calibration-model"])
    parser.add_argument("source")
    parser.add_argument("out", nargs="?")
    parser.add_argument("--calibration", help="qdq: the folder of calibration values")
    parser.add_argument("--shape", action="append", default=[], help="calibration-model: NAME=AxBx.. of an input")
    parser.add_argument("--inputs", help="calibration-model: folder for the input .npy files")
    args = parser.parse_args()
    model = onnx.load(args.source)
    if args.kind == "calibration-model":
        shapes = {k: [int(d) for d in v.split("x")] for k, v in (s.split("=", 1) for s in args.shape)}
        write_calibration_model(model, args.out, shapes, args.inputs)
        return
    if args.kind == "fp16":
        model = to_fp16(model)
    else:
        if not args.calibration:
            sys.exit("qdq needs --calibration DIR")
        model = to_qdq(model, args.calibration)
    onnx.save(model, args.out)


if __name__ == "__main__":
    main()
