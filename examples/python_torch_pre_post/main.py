#!/usr/bin/env python3
"""Pre- and post-processing in PyTorch around a Tessera run, ordered on one CUDA stream, no host wait between them.

    PYTHONPATH=build-gpu/python python3 examples/python_torch_pre_post/main.py resnet50.onnx

The session runs on PyTorch's stream (the CUDA EP's `user_compute_stream` provider option), tensors cross in both
directions through DLPack without copies, and RunOptions' "disable_synchronize_execution_providers" lets the run
return once its work is queued: torch's normalization before the run and its top-5 after it are ordered by the
stream alone. The result is checked against a plain `session.run` with numpy inputs.
"""
import sys
import time

import numpy as np
import torch

import tessera as ort


def main():
    if len(sys.argv) < 2:
        sys.exit("usage: main.py MODEL (an image classifier: input [1, 3, H, W] float)")
    stream = torch.cuda.Stream()
    session = ort.InferenceSession(
        sys.argv[1],
        providers=[("CUDAExecutionProvider", {"user_compute_stream": str(stream.cuda_stream)})])
    (inp,), (out,) = session.get_inputs(), session.get_outputs()
    height, width = inp.shape[2], inp.shape[3]
    mean = torch.tensor([0.485, 0.456, 0.406], device="cuda").view(3, 1, 1)
    std = torch.tensor([0.229, 0.224, 0.225], device="cuda").view(3, 1, 1)
    run_options = ort.RunOptions()
    run_options.add_run_config_entry("disable_synchronize_execution_providers", "1")
    binding = session.io_binding()
    for frame in range(3):
        with torch.cuda.stream(stream):
            start = time.perf_counter()
            # The "decoder": an 8-bit RGB frame made on the GPU.
            rgb = torch.randint(0, 256, (height, width, 3), dtype=torch.uint8, device="cuda",
                                generator=torch.Generator(device="cuda").manual_seed(frame))
            x = ((rgb.permute(2, 0, 1).float() / 255.0 - mean) / std).unsqueeze(0).contiguous()
            binding.bind_ortvalue_input(inp.name, ort.from_dlpack(x))
            binding.bind_output(out.name, "cuda")
            session.run_with_iobinding(binding, run_options)
            scores = torch.from_dlpack(binding.get_outputs()[0])  # the run's output, on the device, no copy
            top5 = torch.topk(scores, 5, dim=1).indices.to("cpu", non_blocking=True)
            queued_ms = (time.perf_counter() - start) * 1e3
        stream.synchronize()  # the only host wait: the application wants the answer now
        (reference,) = session.run([out.name], {inp.name: x.cpu().numpy()})
        expected = np.argsort(-reference[0], kind="stable")[:5]
        print(f"frame {frame}: top-5 {top5[0].tolist()} (host tensors: {expected.tolist()}), queued in {queued_ms:.2f} ms")
        if top5[0, 0].item() != expected[0]:
            sys.exit("the device pipeline disagrees with the host-tensor run")
    print("pre- and post-processing in torch agree with host tensors")


if __name__ == "__main__":
    main()
