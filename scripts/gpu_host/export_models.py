"""Export the GPU benchmark models with PyTorch (random weights, seed 0, opset 17, legacy exporter).

These are the models behind the ONNX Runtime / PyTorch reference numbers quoted in issue 3 (H100,
batch 1); the export is that of the project's shared bench/export_models.py. Run it on the GPU host:

    python3 scripts/gpu_host/export_models.py OUTDIR

Writes resnet50.onnx, resnet50_fp16.onnx, bert_base_s128.onnx, bert_base_s128_fp16.onnx and, beside each,
NAME.ref/ with the inputs (input_<name>.npy) and PyTorch's output (output.npy) computed in float64 on the
CPU from the exported weights (for the fp16 models: the float16 weights and inputs, upcast), which
tests/cuda/cuda_models_test.cc compares the CUDA EP with.
(ONNX Runtime rejects the fp16 BERT export: its LayerNormalization mixes float and float16 inputs.)
"""
import copy
import os
import sys
import warnings

import numpy as np
import torch

warnings.filterwarnings("ignore")
out = sys.argv[1]
os.makedirs(out, exist_ok=True)
torch.manual_seed(0)


def export(m, args, path, inames, onames):
    torch.onnx.export(m, args, path, input_names=inames, output_names=onames, opset_version=17, dynamo=False)
    print("exported", path, os.path.getsize(path) >> 20, "MiB", flush=True)


def save_reference(m, args, path, inames):
    """PyTorch's output of `m` in float64 on the CPU; inputs saved as the model receives them."""
    ref = path[: -len(".onnx")] + ".ref"
    os.makedirs(ref, exist_ok=True)
    for name, a in zip(inames, args):
        np.save(f"{ref}/input_{name}.npy", a.detach().cpu().numpy())
    m64 = copy.deepcopy(m).cpu().double()
    args64 = [a.cpu().double() if a.is_floating_point() else a.cpu() for a in args]
    with torch.no_grad():
        y = m64(*args64)
    np.save(f"{ref}/output.npy", y.numpy())
    print("reference", ref, tuple(y.shape), flush=True)


import torchvision

r = torchvision.models.resnet50().eval()
x = torch.randn(1, 3, 224, 224)
with torch.no_grad():
    export(r, (x,), f"{out}/resnet50.onnx", ["input"], ["logits"])
    save_reference(r, (x,), f"{out}/resnet50.onnx", ["input"])
    export(r.half().cuda(), (x.half().cuda(),), f"{out}/resnet50_fp16.onnx", ["input"], ["logits"])
    save_reference(r, (x.half().cuda(),), f"{out}/resnet50_fp16.onnx", ["input"])

from transformers import BertConfig, BertModel


class Bert(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.m = BertModel(BertConfig(), add_pooling_layer=False)

    def forward(self, input_ids, attention_mask):
        return self.m(input_ids=input_ids, attention_mask=attention_mask).last_hidden_state


b = Bert().eval()
ids = torch.randint(0, 30000, (1, 128))
mask = torch.ones(1, 128, dtype=torch.int64)
with torch.no_grad():
    export(b, (ids, mask), f"{out}/bert_base_s128.onnx", ["input_ids", "attention_mask"], ["last_hidden_state"])
    save_reference(b, (ids, mask), f"{out}/bert_base_s128.onnx", ["input_ids", "attention_mask"])
    export(b.half().cuda(), (ids.cuda(), mask.cuda()), f"{out}/bert_base_s128_fp16.onnx",
           ["input_ids", "attention_mask"], ["last_hidden_state"])
    save_reference(b, (ids.cuda(), mask.cuda()), f"{out}/bert_base_s128_fp16.onnx", ["input_ids", "attention_mask"])
