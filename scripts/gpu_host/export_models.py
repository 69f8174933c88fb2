"""Export the GPU benchmark models with PyTorch (random weights, seed 0, opset 17, legacy exporter).

These are the models behind the ONNX Runtime / PyTorch reference numbers quoted in issue 3 (H100,
batch 1); the export is that of the project's shared bench/export_models.py. Run it on the GPU host:

    python3 scripts/gpu_host/export_models.py OUTDIR [resnet50 bert mobilenet_v2 gpt2]   (default: all four)

Writes resnet50.onnx, resnet50_fp16.onnx, resnet50_fp16_prefolded.onnx (see export_vision), bert_base_s128.onnx,
bert_base_s128_fp16.onnx, mobilenet_v2.onnx, mobilenet_v2_fp16.onnx, mobilenet_v2_fp16_prefolded.onnx,
gpt2_past16.onnx and gpt2_past16_fp16.onnx (GPT-2 decoding one token after 16 cached ones, with past and present
key/values) and, beside each,
NAME.ref/ with the inputs (input_<name>.npy) and PyTorch's output (output.npy) computed in float64 on the
CPU from the exported weights (for the fp16 models: the float16 weights and inputs, upcast; output 0 only), which
tests/cuda/cuda_models_test.cc compares the CUDA EP with.
The float16 BERT and GPT-2 use Hugging Face's eager attention (see use_eager_attention): with the default SDPA
implementation the exported float16 file computes mostly in float32, and ONNX Runtime rejected it.
"""
import copy
import os
import sys
import warnings

import numpy as np
import torch

warnings.filterwarnings("ignore")
out = sys.argv[1]
families = sys.argv[2:] or ["resnet50", "bert", "mobilenet_v2", "gpt2"]
os.makedirs(out, exist_ok=True)
torch.manual_seed(0)


def export(m, args, path, inames, onames):
    torch.onnx.export(m, args, path, input_names=inames, output_names=onames, opset_version=17, dynamo=False)
    print("exported", path, os.path.getsize(path) >> 20, "MiB", flush=True)


def use_eager_attention(hf_model):
    """Hugging Face's eager attention (MatMul, Div, Add of a mask in the model's dtype, Softmax, MatMul) for the
    float16 exports. With the default "sdpa" implementation the legacy exporter writes the Boolean mask as
    Where(mask, 0.0, -inf) in float32 and casts the float16 scores up to meet it; its type promotion then stores
    every later weight in float32, so the "float16" file computed most of the network in float32 (seen in the
    tenth session: 70 of BERT's 96 MatMuls read float32 weights)."""
    if hasattr(hf_model, "set_attn_implementation"):
        hf_model.set_attn_implementation("eager")
    else:
        hf_model.config._attn_implementation = "eager"


def report_precision(path):
    """Prints how many MatMul/Gemm weights of an exported file are float16 and float32: a float16 export must
    not compute in float32."""
    import onnx
    m = onnx.load(path, load_external_data=False)
    types = {i.name: i.data_type for i in m.graph.initializer}
    counts = {}
    for n in m.graph.node:
        if n.op_type in ("MatMul", "Gemm"):
            t = types.get(n.input[1])
            if t is not None:
                counts[t] = counts.get(t, 0) + 1
    print(path, "MatMul/Gemm weights by ONNX type (1 float32, 10 float16):", counts, flush=True)


def first(y):
    return y[0] if isinstance(y, tuple) else y  # a model with several outputs: the first is checked


def save_reference(m, args, path, inames):
    """PyTorch's output of `m` in float64 on the CPU; inputs saved as the model receives them. Also writes
    pytorch_error.txt: the relative L2 error of PyTorch's own output in the model's precision and on its device
    against that reference, the accuracy float16 arithmetic reaches on this model."""
    ref = path[: -len(".onnx")] + ".ref"
    os.makedirs(ref, exist_ok=True)
    for name, a in zip(inames, args):
        np.save(f"{ref}/input_{name}.npy", a.detach().cpu().numpy())
    m64 = copy.deepcopy(m).cpu().double()
    args64 = [a.cpu().double() if a.is_floating_point() else a.cpu() for a in args]
    with torch.no_grad():
        y = first(m64(*args64))
        own = first(m(*args)).double().cpu()
    np.save(f"{ref}/output.npy", y.numpy())
    error = (torch.linalg.norm(own - y) / torch.linalg.norm(y)).item()
    with open(f"{ref}/pytorch_error.txt", "w") as f:
        f.write(f"{error:.6e}\n")
    print("reference", ref, tuple(y.shape), "PyTorch's own relative error", error, flush=True)


import torchvision

x = torch.randn(1, 3, 224, 224)


def calibrate_batch_norm(model):
    """Sets the BatchNorm running statistics from random batches, as training on data would. With the initial
    statistics (mean 0, variance 1) random-weight MobileNetV2's activations shrink layer by layer to logits of
    ~4e-9, which float16 cannot hold (its output is all zeros, on any runtime)."""
    for m in model.modules():
        if isinstance(m, torch.nn.BatchNorm2d):
            m.reset_running_stats()
            m.momentum = None  # a cumulative average over the batches
    model.train()
    with torch.no_grad():
        for _ in range(4):
            model(torch.randn(8, 3, 224, 224))


def export_vision(name, model):
    """`model` (torchvision, random weights) in fp32 and fp16, batch 1, plus NAME_fp16_prefolded.

    The exporter folds each BatchNormalization into its Conv in the model's precision, so NAME_fp16.onnx holds
    weights rounded a few more times than the float16 model its reference is computed from. NAME_fp16_prefolded
    has the BatchNorms folded in float64 before the cast to float16: its file and its reference are the same
    network, and its error measures only the runtime's float16 arithmetic."""
    from torch.fx.experimental.optimization import fuse
    model = model.eval()
    x16 = x.half().cuda()
    with torch.no_grad():
        export(model, (x,), f"{out}/{name}.onnx", ["input"], ["logits"])
        save_reference(model, (x,), f"{out}/{name}.onnx", ["input"])
        prefolded = fuse(copy.deepcopy(model).double()).half().cuda()
        export(prefolded, (x16,), f"{out}/{name}_fp16_prefolded.onnx", ["input"], ["logits"])
        save_reference(prefolded, (x16,), f"{out}/{name}_fp16_prefolded.onnx", ["input"])
        export(model.half().cuda(), (x16,), f"{out}/{name}_fp16.onnx", ["input"], ["logits"])
        save_reference(model, (x16,), f"{out}/{name}_fp16.onnx", ["input"])


class Bert(torch.nn.Module):
    def __init__(self):
        super().__init__()
        from transformers import BertConfig, BertModel
        self.m = BertModel(BertConfig(), add_pooling_layer=False)

    def forward(self, input_ids, attention_mask):
        return self.m(input_ids=input_ids, attention_mask=attention_mask).last_hidden_state


def export_bert():
    b = Bert().eval()
    ids = torch.randint(0, 30000, (1, 128))
    mask = torch.ones(1, 128, dtype=torch.int64)
    names = ["input_ids", "attention_mask"]
    with torch.no_grad():
        export(b, (ids, mask), f"{out}/bert_base_s128.onnx", names, ["last_hidden_state"])
        save_reference(b, (ids, mask), f"{out}/bert_base_s128.onnx", names)
        use_eager_attention(b.m)
        export(b.half().cuda(), (ids.cuda(), mask.cuda()), f"{out}/bert_base_s128_fp16.onnx", names,
               ["last_hidden_state"])
        report_precision(f"{out}/bert_base_s128_fp16.onnx")
        save_reference(b, (ids.cuda(), mask.cuda()), f"{out}/bert_base_s128_fp16.onnx", names)


def export_bert_dynamic():
    """BERT-base with symbolic batch and sequence axes (as exporters write it for serving): the shape arithmetic of
    the export stays in the graph, which automatic CUDA graphs must capture per input shape."""
    b = Bert().eval()
    ids = torch.randint(0, 30000, (1, 128))
    mask = torch.ones(1, 128, dtype=torch.int64)
    names = ["input_ids", "attention_mask"]
    path = f"{out}/bert_base_dynamic.onnx"
    with torch.no_grad():
        torch.onnx.export(b, (ids, mask), path, input_names=names, output_names=["last_hidden_state"],
                          opset_version=17, dynamo=False,
                          dynamic_axes={n: {0: "batch", 1: "sequence"} for n in names + ["last_hidden_state"]})
        print("exported", path, os.path.getsize(path) >> 20, "MiB", flush=True)


PAST = 16


class Gpt2WithPast(torch.nn.Module):
    """GPT-2 (124M) decoding with a key/value cache, its past and present flattened into tensors."""

    def __init__(self):
        super().__init__()
        from transformers import GPT2Config, GPT2LMHeadModel
        self.m = GPT2LMHeadModel(GPT2Config())
        self.layers = self.m.config.n_layer

    def forward(self, input_ids, attention_mask, *past):
        from transformers.cache_utils import DynamicCache
        cache = DynamicCache()
        for i in range(self.layers):
            cache.update(past[2 * i], past[2 * i + 1], i)
        result = self.m(input_ids=input_ids, attention_mask=attention_mask, past_key_values=cache, use_cache=True)
        present = result.past_key_values
        if hasattr(present, "layers"):  # transformers 5
            pairs = [(layer.keys, layer.values) for layer in present.layers]
        else:
            pairs = list(zip(present.key_cache, present.value_cache))
        return (result.logits,) + tuple(t for pair in pairs for t in pair)


def export_gpt2():
    """Decoding one token after PAST cached ones: inputs input_ids [1, 1], attention_mask [1, PAST + 1] and
    past_<layer>_key / past_<layer>_value [1, 12, PAST, 64]; outputs logits [1, 1, 50257] and the present
    key/values [1, 12, PAST + 1, 64], which a caller feeds back as the next step's past."""
    g = Gpt2WithPast().eval()
    config = g.m.config
    kinds = [(i, kind) for i in range(config.n_layer) for kind in ("key", "value")]
    inames = ["input_ids", "attention_mask"] + [f"past_{i}_{kind}" for i, kind in kinds]
    onames = ["logits"] + [f"present_{i}_{kind}" for i, kind in kinds]
    token = torch.randint(0, 50000, (1, 1))
    mask = torch.ones(1, PAST + 1, dtype=torch.int64)
    past = [torch.randn(1, config.n_head, PAST, config.n_embd // config.n_head) for _ in kinds]
    path, path16 = f"{out}/gpt2_past{PAST}.onnx", f"{out}/gpt2_past{PAST}_fp16.onnx"
    with torch.no_grad():
        export(g, (token, mask, *past), path, inames, onames)
        save_reference(g, (token, mask, *past), path, inames)
        args16 = (token.cuda(), mask.cuda(), *[p.half().cuda() for p in past])
        use_eager_attention(g.m)
        export(g.half().cuda(), args16, path16, inames, onames)
        report_precision(path16)
        save_reference(g, args16, path16, inames)


if "resnet50" in families:
    export_vision("resnet50", torchvision.models.resnet50())
if "bert" in families:
    export_bert()
if "bert_dynamic" in families or "bert_base_dynamic" in families:
    export_bert_dynamic()
if "mobilenet_v2" in families:
    mobilenet = torchvision.models.mobilenet_v2()
    calibrate_batch_norm(mobilenet)
    export_vision("mobilenet_v2", mobilenet)
if "gpt2" in families:
    export_gpt2()
