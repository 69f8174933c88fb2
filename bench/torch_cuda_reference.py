"""PyTorch reference latencies on the GPU host, measured the way `tessera bench` measures its CUDA-graph row:
one CUDA graph of the whole forward pass, replayed; the median of host wall times of replay + synchronize.

    python3 bench/torch_cuda_reference.py [--runs 300] [--models resnet50 resnet50_fp16 bert_base_s128]

Issue 3 quotes PyTorch 2.11 with a CUDA graph at 0.915 ms for ResNet-50; running this beside `tessera bench`
in the same session on the same machine turns that into a side-by-side comparison (clocks and hosts vary).
Random weights (seed 0), eval mode, batch 1, PyTorch's default cuDNN settings (TF32 for convolutions on)."""

import argparse
import statistics
import time

import torch


def vision(name, half):
    import torchvision
    torch.manual_seed(0)
    model = getattr(torchvision.models, name)().eval().cuda()
    x = torch.randn(1, 3, 224, 224, device="cuda")
    if half:
        model, x = model.half(), x.half()
    return model, (x,)


def bert_base(half):
    from transformers import BertConfig, BertModel
    torch.manual_seed(0)
    model = BertModel(BertConfig(), add_pooling_layer=False).eval().cuda()
    ids = torch.randint(0, 30000, (1, 128), device="cuda")
    mask = torch.ones(1, 128, dtype=torch.int64, device="cuda")
    if half:
        model = model.half()
    return model, (ids, mask)


MODELS = {
    "resnet50": lambda: vision("resnet50", False),
    "resnet50_fp16": lambda: vision("resnet50", True),
    "bert_base_s128": lambda: bert_base(False),
    "bert_base_s128_fp16": lambda: bert_base(True),
    "mobilenet_v2": lambda: vision("mobilenet_v2", False),
    "mobilenet_v2_fp16": lambda: vision("mobilenet_v2", True),
}


def graph_latency_ms(model, inputs, runs):
    stream = torch.cuda.Stream()
    with torch.no_grad():
        stream.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(stream):
            for _ in range(3):
                model(*inputs)
        torch.cuda.current_stream().wait_stream(stream)
        graph = torch.cuda.CUDAGraph()
        with torch.cuda.graph(graph):
            model(*inputs)
    for _ in range(20):
        graph.replay()
    torch.cuda.synchronize()
    times = []
    for _ in range(runs):
        start = time.perf_counter()
        graph.replay()
        torch.cuda.synchronize()
        times.append((time.perf_counter() - start) * 1e3)
    times.sort()
    return statistics.median(times), times[len(times) // 10], times[len(times) * 9 // 10]


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=300)
    parser.add_argument("--models", nargs="*", default=["resnet50", "resnet50_fp16"])
    args = parser.parse_args()
    print(f"torch {torch.__version__}, {torch.cuda.get_device_name()}, cudnn {torch.backends.cudnn.version()}")
    print(f"{'model':<22} {'median ms':>9} {'p10 ms':>7} {'p90 ms':>7}")
    for name in args.models:
        model, inputs = MODELS[name]()
        median, p10, p90 = graph_latency_ms(model, inputs, args.runs)
        print(f"{name:<22} {median:9.3f} {p10:7.3f} {p90:7.3f}")
        del model
        torch.cuda.empty_cache()


if __name__ == "__main__":
    main()
