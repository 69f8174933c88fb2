"""PyTorch eager's greedy generation with Hugging Face's GPT-2 and its cache, timed like tessera_generation_bench:
medians over RUNS of generating NEW tokens and 1 token after the 16-token prompt of scripts/gpu_host/export_generation.py
(the same random weights of seed 0), batch 1, on the GPU. The next token is picked on the device and stays there; the
host reads the tokens once at the end.

    python3 bench/generation/torch_generation.py fp32|fp16 [NEW] [RUNS]
"""
import os
import statistics
import sys
import time

import torch

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "scripts", "gpu_host"))
import export_generation as g  # noqa: E402

precision = sys.argv[1]
new = int(sys.argv[2]) if len(sys.argv) > 2 else 128
runs = int(sys.argv[3]) if len(sys.argv) > 3 else 10
dtype = torch.float16 if precision == "fp16" else torch.float32
model = g.make_model()
if dtype == torch.float16:
    g.use_eager_attention(model)
model = model.to(device="cuda", dtype=dtype)
prompt = g.prompt_ids().cuda()


def generate(n):
    from transformers.cache_utils import DynamicCache
    cache = DynamicCache()
    tokens = []
    with torch.no_grad():
        logits = model(input_ids=prompt, past_key_values=cache, use_cache=True).logits
        token = logits[:, -1].argmax(-1, keepdim=True)
        tokens.append(token)
        while len(tokens) < n:
            logits = model(input_ids=token, past_key_values=cache, use_cache=True).logits
            token = logits[:, -1].argmax(-1, keepdim=True)
            tokens.append(token)
    return [int(t) for t in torch.cat(tokens, 1)[0].tolist()]


def timed(n):
    torch.cuda.synchronize()
    start = time.perf_counter()
    tokens = generate(n)  # .tolist() waits for the device
    return (time.perf_counter() - start) * 1e3, tokens


first_ms, tokens = timed(new)
print(f"first_generate_ms {first_ms:.1f}")
full, one = [], []
for _ in range(runs):
    full.append(timed(new)[0])
    one.append(timed(1)[0])
t_full, t_one = statistics.median(full), statistics.median(one)
print(f"prompt_tokens {prompt.shape[1]}\nnew_tokens {len(tokens)}")
print(f"generate_ms {t_full:.3f}\ngenerate_one_ms {t_one:.3f}")
print(f"tokens_per_s {len(tokens) / (t_full / 1e3):.1f}")
print(f"decode_tokens_per_s {(len(tokens) - 1) / ((t_full - t_one) / 1e3):.1f}")
print(f"ms_per_decode_step {(t_full - t_one) / (len(tokens) - 1):.4f}")
print("tokens", " ".join(str(t) for t in tokens))
