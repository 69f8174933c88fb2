#!/usr/bin/env python3
"""One-node com.microsoft GroupQueryAttention models for checking Tessera's CPU kernel against ONNX Runtime.

    /usr/bin/python3 bench/ort_checks/group_query_attention_models.py DIR
    bash bench/ort_checks/group_query_attention.sh        (writes the models, compares every one)

Query / key / value / past are graph inputs (random data from compare_ort.mjs); seqlens_k, total_sequence_length
and the rotary caches are initializers, since their values must be consistent. Float16 cases keep float32 inputs
and outputs behind Casts (the bench feeds float32).
"""
import sys

import numpy as np
import onnx
from onnx import TensorProto as TP
from onnx import helper as h
from onnx import numpy_helper as nh


def make(out_dir, name, b, s, nq, nkv, head, past_rows, seqlens, total, packed=False, rotary=0, interleaved=False,
         window=-1, softcap=0.0, scale=None, fp16=False):
    t = TP.FLOAT16 if fp16 else TP.FLOAT
    np_t = np.float16 if fp16 else np.float32
    inputs, inits, names = [], [], []
    if packed:
        inputs.append(h.make_tensor_value_info("query", t, [b, s, (nq + 2 * nkv) * head]))
        names += ["query", "", ""]
    else:
        for n, width in (("query", nq * head), ("key", nkv * head), ("value", nkv * head)):
            inputs.append(h.make_tensor_value_info(n, t, [b, s, width]))
        names += ["query", "key", "value"]
    if past_rows is not None:
        for n in ("past_key", "past_value"):
            inputs.append(h.make_tensor_value_info(n, t, [b, nkv, past_rows, head]))
        names += ["past_key", "past_value"]
    else:
        names += ["", ""]
    inits += [nh.from_array(np.array(seqlens, np.int32), "seqlens_k"),
              nh.from_array(np.array(total, np.int32), "total_sequence_length")]
    names += ["seqlens_k", "total_sequence_length"]
    attrs = dict(num_heads=nq, kv_num_heads=nkv)
    if rotary:
        pos = np.arange(64)[:, None] / (10000 ** (np.arange(rotary // 2)[None, :] / (rotary // 2)))
        inits += [nh.from_array(np.cos(pos).astype(np_t), "cos"), nh.from_array(np.sin(pos).astype(np_t), "sin")]
        names += ["cos", "sin"]
        attrs["do_rotary"] = 1
        attrs["rotary_interleaved"] = int(interleaved)
    if window > 0:
        attrs["local_window_size"] = window
    if softcap:
        attrs["softcap"] = softcap
    if scale:
        attrs["scale"] = scale
    present = max(past_rows or 0, total)
    outs = [("output", [b, s, nq * head]), ("present_key", [b, nkv, present, head]),
            ("present_value", [b, nkv, present, head])]
    nodes = []
    if fp16:  # float32 I/O behind Casts
        for i in inputs:
            nodes.append(h.make_node("Cast", [i.name], [i.name + "_h"], to=TP.FLOAT16))
            i.type.tensor_type.elem_type = TP.FLOAT
        names = [n + "_h" if n in {i.name for i in inputs} else n for n in names]
    nodes.append(h.make_node("GroupQueryAttention", names, [o + ("_h" if fp16 else "") for o, _ in outs],
                             domain="com.microsoft", **attrs))
    if fp16:
        nodes += [h.make_node("Cast", [o + "_h"], [o], to=TP.FLOAT) for o, _ in outs]
    graph = h.make_graph(nodes, name, inputs, [h.make_tensor_value_info(o, TP.FLOAT if fp16 else t, d) for o, d in outs],
                         inits)
    model = h.make_model(graph, opset_imports=[h.make_opsetid("", 17), h.make_opsetid("com.microsoft", 1)], ir_version=8)
    onnx.save(model, f"{out_dir}/{name}.onnx")


def main(out_dir):
    make(out_dir, "prompt", 2, 5, 4, 2, 8, None, [4, 4], 5)
    make(out_dir, "prompt_padded", 2, 5, 4, 2, 8, None, [2, 4], 5)
    make(out_dir, "prompt_packed_rotary", 1, 6, 4, 1, 16, None, [5], 6, packed=True, rotary=16)
    make(out_dir, "decode_shared", 2, 1, 4, 2, 8, 16, [6, 9], 10)
    make(out_dir, "decode_past_exact", 1, 1, 6, 3, 8, 7, [7], 8)
    make(out_dir, "decode_rotary_interleaved", 2, 1, 4, 4, 32, 12, [3, 8], 9, rotary=16, interleaved=True)
    make(out_dir, "subsequent_prompt", 1, 3, 4, 2, 8, 10, [6], 7)
    make(out_dir, "window_softcap_scale", 1, 7, 2, 1, 8, None, [6], 7, window=3, softcap=2.0, scale=0.3)
    make(out_dir, "decode_window", 1, 1, 2, 2, 8, 12, [9], 10, window=4)
    make(out_dir, "fp16_decode_rotary", 2, 1, 8, 2, 32, 12, [5, 10], 11, fp16=True, rotary=16)
    make(out_dir, "fp16_prompt_window", 1, 9, 4, 2, 16, None, [8], 9, fp16=True, window=4)
    # Llama-shaped, for timing (compare_ort.mjs --threads 2 --budget 3): a 512-token prompt, a step over 1001 keys.
    make(out_dir, "perf_prompt512", 1, 512, 32, 8, 128, None, [511], 512)
    make(out_dir, "perf_decode", 1, 1, 32, 8, 128, 1024, [1000], 1001)


if __name__ == "__main__":
    main(sys.argv[1])
