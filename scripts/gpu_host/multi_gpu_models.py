"""Models for the multi-GPU bench (issue 19), on the GPU host: ResNet-50 (torchvision, random weights, seed 0,
opset 17) at a fixed batch of 8, and the same network split in two halves at the single tensor nearest its middle
that carries everything the second half needs (the output of a residual block), for the pipeline example.

    python3 scripts/gpu_host/multi_gpu_models.py OUTDIR    -> resnet50_b8.onnx, resnet50_b8_first.onnx,
                                                               resnet50_b8_second.onnx
"""
import os
import sys
import warnings

import onnx
import onnx.utils
import torch
import torchvision

warnings.filterwarnings("ignore")


def single_cut(model):
    """The produced tensor nearest the middle of the node list that is the only value crossing the cut."""
    graph = model.graph
    initializers = {i.name for i in graph.initializer}
    nodes = list(graph.node)
    best = None
    for k in range(1, len(nodes)):
        produced = {o for n in nodes[:k] for o in n.output}
        crossing = {i for n in nodes[k:] for i in n.input if i in produced and i not in initializers}
        crossing |= {o.name for o in graph.output if o.name in produced}
        if len(crossing) == 1:
            distance = abs(k - len(nodes) / 2)
            if best is None or distance < best[0]:
                best = (distance, next(iter(crossing)))
    if best is None:
        raise SystemExit("no single-tensor cut found")
    return best[1]


def main():
    out = sys.argv[1]
    os.makedirs(out, exist_ok=True)
    torch.manual_seed(0)
    model = torchvision.models.resnet50().eval()
    path = os.path.join(out, "resnet50_b8.onnx")
    torch.onnx.export(model, torch.randn(8, 3, 224, 224), path, input_names=["input"], output_names=["output"],
                      opset_version=17, dynamo=False)
    cut = single_cut(onnx.load(path))
    onnx.utils.extract_model(path, os.path.join(out, "resnet50_b8_first.onnx"), ["input"], [cut])
    onnx.utils.extract_model(path, os.path.join(out, "resnet50_b8_second.onnx"), [cut], ["output"])
    print("exported", path, "split at", cut, flush=True)


main()
