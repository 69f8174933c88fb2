"""Writes tiny_decoder.onnx: a two-layer decoding step over a static key/value cache, in the form GenerationLoop takes
(include/tessera/generation_loop.h) and scripts/gpu_host/export_generation.py exports for GPT-2, small enough for CI.

    python3 examples/generation_loop/make_model.py [OUT.onnx]
    python3 examples/generation_loop/make_model.py --prompt [OUT.onnx]     # tiny_decoder_prompt.onnx

--prompt writes the same layers (the same weights) over input_ids [1, sequence], a symbolic number of tokens at
positions position .. position + sequence - 1, each seeing the cache rows up to its own position; next_token comes
from the last token and next_position is position + sequence: the prompt model that takes a whole prompt in one run
(GenerationLoop uses a step with a symbolic sequence axis as its own prompt model).

inputs   input_ids [1, 1] int64, position [1] int64, past_<l>_key / past_<l>_value [1, 2, 48, 8] float
outputs  next_token [1, 1] int64 (ArgMax), next_position [1] int64, present_<l>_key / present_<l>_value
Each layer: LayerNormalization, one Q/K/V product, the new key and value written into the caches at `position`
(ScatterElements), attention over the cache rows <= position, output product and residual, a GELU MLP.
"""
import os
import sys

PROMPT = "--prompt" in sys.argv[1:]
ARGS = [a for a in sys.argv[1:] if a != "--prompt"]

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

LAYERS, HEADS, HEAD, VOCAB, MAX = 2, 2, 8, 64, 48
EMBED = HEADS * HEAD
rng = np.random.RandomState(0)
nodes, inits = [], []


def init(name, array):
    inits.append(numpy_helper.from_array(np.asarray(array), name))
    return name


def node(op, inputs, outputs, **attrs):
    nodes.append(helper.make_node(op, inputs, outputs, name=outputs[0] + "_node", **attrs))
    return outputs[0]


def weight(name, shape, scale):
    return init(name, (rng.randn(*shape) * scale).astype(np.float32))


init("one", np.array([1], np.int64))
init("zero", np.array(0, np.float32))
init("minus_inf", np.array(-np.inf, np.float32))
init("key_positions", np.arange(MAX, dtype=np.int64))
init("split", np.array([EMBED] * 3, np.int64))
init("heads_shape", np.array([1, -1 if PROMPT else 1, HEADS, HEAD], np.int64))
init("merged_shape", np.array([1, -1 if PROMPT else 1, EMBED], np.int64))
init("index_shape", np.array([1, 1, -1 if PROMPT else 1, 1], np.int64))
init("index_expand", np.array([1, HEADS, 1, HEAD], np.int64))
init("scale", np.array(1 / np.sqrt(HEAD), np.float32))
init("ln_scale", np.ones(EMBED, np.float32))
init("ln_bias", np.zeros(EMBED, np.float32))
wte = weight("wte", (VOCAB, EMBED), 1.0)
init("wte_t", np.ascontiguousarray(numpy_helper.to_array(inits[-1]).T))
weight("wpe", (MAX, EMBED), 0.3)
positions = "position"
if PROMPT:  # positions = position + [0, sequence); query i sees the rows <= positions[i]
    init("axis_1", np.array(1, np.int64))
    init("start", np.array(0, np.int64))
    init("column", np.array([-1, 1], np.int64))
    node("Shape", ["input_ids"], ["ids_shape"])
    node("Gather", ["ids_shape", "axis_1"], ["sequence"])
    node("Range", ["start", "sequence", "axis_1"], ["offsets"])
    positions = node("Add", ["offsets", "position"], ["positions"])
    node("Reshape", [positions, "column"], ["query_positions"])
node("Gather", ["wte", "input_ids"], ["token_embedding"])
node("Gather", ["wpe", positions], ["position_embedding"])
h = node("Add", ["token_embedding", "position_embedding"], ["h0"])
node("LessOrEqual", ["key_positions", "query_positions" if PROMPT else "position"], ["visible"])
node("Where", ["visible", "zero", "minus_inf"], ["mask"])
node("Reshape", [positions, "index_shape"], ["position_4d"])
node("Expand", ["position_4d", "index_expand"], ["cache_index"])
for l in range(LAYERS):
    p = f"l{l}_"
    x = node("LayerNormalization", [h, "ln_scale", "ln_bias"], [p + "ln1"], axis=-1, epsilon=1e-5)
    qkv = node("MatMul", [x, weight(p + "w_qkv", (EMBED, 3 * EMBED), 0.3)], [p + "qkv"])
    node("Split", [qkv, "split"], [p + "q_flat", p + "k_flat", p + "v_flat"], axis=2)
    for part in "qkv":
        node("Reshape", [p + part + "_flat", "heads_shape"], [p + part + "_heads"])
        node("Transpose", [p + part + "_heads"], [p + part], perm=[0, 2, 1, 3])
    keys = node("ScatterElements", [f"past_{l}_key", "cache_index", p + "k"], [f"present_{l}_key"], axis=2)
    values = node("ScatterElements", [f"past_{l}_value", "cache_index", p + "v"], [f"present_{l}_value"], axis=2)
    node("Transpose", [keys], [p + "keys_t"], perm=[0, 1, 3, 2])
    node("MatMul", [p + "q", p + "keys_t"], [p + "scores_raw"])
    node("Mul", [p + "scores_raw", "scale"], [p + "scores_scaled"])
    node("Add", [p + "scores_scaled", "mask"], [p + "scores"])
    node("Softmax", [p + "scores"], [p + "probabilities"], axis=-1)
    node("MatMul", [p + "probabilities", values], [p + "attended"])
    node("Transpose", [p + "attended"], [p + "attended_t"], perm=[0, 2, 1, 3])
    node("Reshape", [p + "attended_t", "merged_shape"], [p + "merged"])
    node("MatMul", [p + "merged", weight(p + "w_out", (EMBED, EMBED), 0.3)], [p + "projected"])
    h = node("Add", [h, p + "projected"], [p + "h_attn"])
    x = node("LayerNormalization", [h, "ln_scale", "ln_bias"], [p + "ln2"], axis=-1, epsilon=1e-5)
    node("MatMul", [x, weight(p + "w_fc", (EMBED, 4 * EMBED), 0.3)], [p + "fc"])
    node("Relu", [p + "fc"], [p + "fc_act"])
    node("MatMul", [p + "fc_act", weight(p + "w_proj", (4 * EMBED, EMBED), 0.15)], [p + "mlp"])
    h = node("Add", [h, p + "mlp"], [p + "h"])
if PROMPT:  # the last token chooses the next one
    init("last", np.array([-1], np.int64))
    init("end", np.array([np.iinfo(np.int64).max], np.int64))
    h = node("Slice", [h, "last", "end", "one"], ["h_last"])
    node("Reshape", ["sequence", "one"], ["sequence_1d"])
node("MatMul", [h, "wte_t"], ["logits"])
node("ArgMax", ["logits"], ["next_token"], axis=2, keepdims=0)
node("Add", ["position", "sequence_1d" if PROMPT else "one"], ["next_position"])

cache = [1, HEADS, MAX, HEAD]
inputs = [helper.make_tensor_value_info("input_ids", TensorProto.INT64, [1, "sequence" if PROMPT else 1]),
          helper.make_tensor_value_info("position", TensorProto.INT64, [1])]
outputs = [helper.make_tensor_value_info("next_token", TensorProto.INT64, [1, 1]),
           helper.make_tensor_value_info("next_position", TensorProto.INT64, [1])]
for l in range(LAYERS):
    for kind in ("key", "value"):
        inputs.append(helper.make_tensor_value_info(f"past_{l}_{kind}", TensorProto.FLOAT, cache))
        outputs.append(helper.make_tensor_value_info(f"present_{l}_{kind}", TensorProto.FLOAT, cache))
graph = helper.make_graph(nodes, "tiny_decoder", inputs, outputs, inits)
model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], producer_name="tessera-example")
model.ir_version = 8
onnx.checker.check_model(model)
default = "tiny_decoder_prompt.onnx" if PROMPT else "tiny_decoder.onnx"
path = ARGS[0] if ARGS else os.path.join(os.path.dirname(os.path.abspath(__file__)), default)
onnx.save(model, path)
print("wrote", path, os.path.getsize(path), "bytes")
