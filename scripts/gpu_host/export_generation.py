"""Export GPT-2 (124M, random weights of seed 0) for generation loops, and PyTorch's greedy tokens.

Run it on the GPU host:   python3 scripts/gpu_host/export_generation.py OUTDIR [MAX_LENGTH]   (default 144)

Writes, into OUTDIR:
  gpt2_decode.onnx, gpt2_decode_fp16.onnx   one decoding step over a static key/value cache (GenerationLoop's form,
      include/tessera/generation_loop.h): inputs input_ids [1, 1] int64, position [1] int64 (tokens already cached)
      and past_<layer>_key / past_<layer>_value [1, 12, MAX_LENGTH, 64]; outputs next_token [1, 1] int64 (ArgMax of
      the logits, on the device), next_position [1] int64 and present_<layer>_key / _value, the caches with this
      token's row written at `position` (ScatterElements). Rows after `position` are masked out of the attention, so
      every step has the same shapes (the mask is row `position` of a constant [MAX_LENGTH, MAX_LENGTH] table).
  gpt2_decode_blend.onnx, gpt2_decode_blend_fp16.onnx  the same step with the cache rows written by a blend
      (past * (1 - e_position) + new * e_position, a whole new cache per step) instead of ScatterElements, which
      ONNX Runtime 1.29's CUDA plugin EP crashes on: the file ONNX Runtime runs in bench/generation.
  gpt2_dynamic.onnx, gpt2_dynamic_fp16.onnx  the usual past/present export (Hugging Face's cache, dynamic lengths):
      inputs input_ids [1, S], attention_mask [1, P + S], past_<layer>_key / _value [1, 12, P, 64]; outputs logits
      [1, S, 50257] and the presents [1, 12, P + S, 64]. ONNX Runtime's documented way to generate with IO binding.
  generation_reference.json  the prompt (16 token ids) and PyTorch's greedy continuation of 128 tokens, computed with
      Hugging Face's model and cache in float32 on the GPU and on the CPU, and in float16 on the GPU; the same lists
      as tokens_prompt.txt, tokens_fp32_cpu.txt, tokens_fp32_cuda.txt, tokens_fp16_cuda.txt (space-separated ids).
The float16 exports use Hugging Face's eager attention (see export_models.py, use_eager_attention). The script checks
its exports with ONNX Runtime on the CPU: the static step's greedy tokens in float32 against PyTorch's, and the
dynamic model's logits against PyTorch's at two cache lengths.
"""
import json
import math
import os
import sys
import warnings

import numpy as np
import torch

warnings.filterwarnings("ignore")
PROMPT, NEW = 16, 128
out, MAX_LENGTH = None, 144


def make_model():
    """The benchmark's GPT-2: the default configuration with the random weights of seed 0 (no download)."""
    from transformers import GPT2Config, GPT2LMHeadModel
    torch.manual_seed(0)
    return GPT2LMHeadModel(GPT2Config()).eval()


def prompt_ids():
    return torch.randint(0, 50257, (1, PROMPT), generator=torch.Generator().manual_seed(1))


def use_eager_attention(hf_model):
    if hasattr(hf_model, "set_attn_implementation"):
        hf_model.set_attn_implementation("eager")
    else:
        hf_model.config._attn_implementation = "eager"


class StaticCacheStep(torch.nn.Module):
    """One GPT-2 decoding step over caches preallocated at max_length, built from the Hugging Face modules."""

    def __init__(self, hf, max_length, cache_update="scatter"):
        super().__init__()
        self.t, self.lm_head = hf.transformer, hf.lm_head
        self.cache_update = cache_update
        # "blend": present = past * (1 - e_p) + new * e_p with e_p row `position` of the identity, a whole new cache
        # per step without ScatterElements (ONNX Runtime 1.29's CUDA plugin EP crashes on ScatterElements).
        self.register_buffer("row_table", torch.eye(max_length), persistent=False)
        self.heads = hf.config.n_head
        self.head_size = hf.config.n_embd // hf.config.n_head
        # Row p: 0 for the cache rows <= p, -inf after. The mask of a step is one Gather of row `position` (a
        # comparison of int64 positions would run on ONNX Runtime's CPU EP, whose copies crash its CUDA plugin EP).
        visible = torch.arange(max_length)[None, :] <= torch.arange(max_length)[:, None]
        self.register_buffer("mask_table", torch.where(visible, 0.0, float("-inf")), persistent=False)

    def forward(self, input_ids, position, *cache):
        t = self.t
        batch, width = input_ids.shape[0], self.heads * self.head_size
        h = t.wte(input_ids) + t.wpe(position)  # [batch, 1, 768]
        mask = self.mask_table[position]  # [1, max_length]
        index = position.view(1, 1, 1, 1).expand(batch, self.heads, 1, self.head_size)
        write = self.row_table[position].view(1, 1, -1, 1)  # [1, 1, max_length, 1]: 1 at row `position`
        h, presents = self.layers(h, mask, index, write, cache, 1)
        logits = self.lm_head(t.ln_f(h))
        return (logits.argmax(-1), position + 1, *presents)

    def layers(self, h, mask, index, write, cache, sequence):
        t = self.t
        batch, width = h.shape[0], self.heads * self.head_size
        keep = 1 - write
        presents = []
        for i, block in enumerate(t.h):
            qkv = block.attn.c_attn(block.ln_1(h))
            q, k, v = (x.view(batch, sequence, self.heads, self.head_size).transpose(1, 2)
                       for x in qkv.split(width, dim=2))
            if self.cache_update == "scatter":
                keys = cache[2 * i].scatter(2, index, k)
                values = cache[2 * i + 1].scatter(2, index, v)
            else:
                keys = cache[2 * i] * keep + k * write
                values = cache[2 * i + 1] * keep + v * write
            scores = torch.matmul(q, keys.transpose(-1, -2)) / math.sqrt(self.head_size) + mask
            attended = torch.matmul(scores.softmax(-1), values).transpose(1, 2).reshape(batch, sequence, width)
            h = h + block.attn.c_proj(attended)
            h = h + block.mlp(block.ln_2(h))
            presents += [keys, values]
        return h, presents


class StaticCachePrompt(StaticCacheStep):
    """The same step over input_ids [batch, S] (S symbolic in the export): the prompt's S tokens at positions
    position .. position + S - 1 written into the caches in one run, each seeing the rows up to its own position;
    next_token from the last token, next_position = position + S (GenerationLoopOptions::prompt_session)."""

    def forward(self, input_ids, position, *cache):
        t = self.t
        batch, sequence = input_ids.shape
        positions = position + torch.arange(sequence, device=position.device)  # [S]
        h = t.wte(input_ids) + t.wpe(positions)  # [batch, S, 768]
        mask = self.mask_table[positions]  # [S, max_length]: query i sees the rows <= positions[i]
        index = positions.view(1, 1, -1, 1).expand(batch, self.heads, sequence, self.head_size)
        write = self.row_table[positions].sum(0).view(1, 1, -1, 1)  # 1 at the rows written
        h, presents = self.layers(h, mask, index, write, cache, sequence)
        logits = self.lm_head(t.ln_f(h[:, -1:]))
        return (logits.argmax(-1), position + sequence, *presents)


class DynamicStep(torch.nn.Module):
    """Hugging Face's forward with a cache of any length, its past and present flattened into tensors."""

    def __init__(self, hf):
        super().__init__()
        self.m = hf

    def forward(self, input_ids, attention_mask, *past):
        from transformers.cache_utils import DynamicCache
        cache = DynamicCache()
        for i in range(self.m.config.n_layer):
            cache.update(past[2 * i], past[2 * i + 1], i)
        r = self.m(input_ids=input_ids, attention_mask=attention_mask, past_key_values=cache, use_cache=True)
        present = r.past_key_values
        pairs = [(l.keys, l.values) for l in present.layers] if hasattr(present, "layers") else list(
            zip(present.key_cache, present.value_cache))
        return (r.logits,) + tuple(x for pair in pairs for x in pair)


def cache_names(prefix, layers):
    return [f"{prefix}_{i}_{kind}" for i in range(layers) for kind in ("key", "value")]


def export(m, args, path, inames, onames, dynamic_axes=None):
    torch.onnx.export(m, args, path, input_names=inames, output_names=onames, opset_version=17, dynamo=False,
                      dynamic_axes=dynamic_axes)
    print("exported", path, os.path.getsize(path) >> 20, "MiB", flush=True)


def greedy_pytorch(hf, device, dtype):
    """Hugging Face's model and cache, greedy: NEW tokens after the prompt."""
    from transformers.cache_utils import DynamicCache
    m = hf.to(device=device, dtype=dtype)
    ids = prompt_ids().to(device)
    cache = DynamicCache()
    tokens = []
    with torch.no_grad():
        logits = m(input_ids=ids, past_key_values=cache, use_cache=True).logits
        for _ in range(NEW):
            token = logits[:, -1].argmax(-1, keepdim=True)
            tokens.append(int(token))
            logits = m(input_ids=token, past_key_values=cache, use_cache=True).logits
    return tokens


def main():
    hf = make_model()
    config = hf.config
    layers, heads, head_size = config.n_layer, config.n_head, config.n_embd // config.n_head
    reference = {"prompt": prompt_ids()[0].tolist(), "max_length": MAX_LENGTH}
    reference["fp32_cpu"] = greedy_pytorch(make_model(), "cpu", torch.float32)
    reference["fp32_cuda"] = greedy_pytorch(make_model(), "cuda", torch.float32)
    half = make_model()
    use_eager_attention(half)
    reference["fp16_cuda"] = greedy_pytorch(half, "cuda", torch.float16)
    print("PyTorch fp32 CPU and GPU tokens agree:", reference["fp32_cpu"] == reference["fp32_cuda"], flush=True)

    # The static step, float32 and float16.
    step_in = ["input_ids", "position"] + cache_names("past", layers)
    step_out = ["next_token", "next_position"] + cache_names("present", layers)
    token = torch.tensor([[reference["prompt"][0]]])
    position = torch.tensor([0])
    caches = [torch.zeros(1, heads, MAX_LENGTH, head_size) for _ in range(2 * layers)]
    with torch.no_grad():
        export(StaticCacheStep(hf, MAX_LENGTH).eval(), (token, position, *caches), f"{out}/gpt2_decode.onnx", step_in,
               step_out)
        export(StaticCacheStep(hf, MAX_LENGTH, "blend").eval(), (token, position, *caches),
               f"{out}/gpt2_decode_blend.onnx", step_in, step_out)
        use_eager_attention(half)
        args16 = (token.cuda(), position.cuda(), *[c.half().cuda() for c in caches])
        export(StaticCacheStep(half, MAX_LENGTH).eval().half().cuda(), args16, f"{out}/gpt2_decode_fp16.onnx", step_in,
               step_out)
        export(StaticCacheStep(half, MAX_LENGTH, "blend").eval().half().cuda(), args16,
               f"{out}/gpt2_decode_blend_fp16.onnx", step_in, step_out)
        # The prompt models: the same step over a symbolic number of tokens.
        prompt = torch.tensor([reference["prompt"][:4]])
        prompt_axes = {"input_ids": {1: "sequence"}}
        export(StaticCachePrompt(hf, MAX_LENGTH).eval(), (prompt, position, *caches), f"{out}/gpt2_prompt.onnx",
               step_in, step_out, prompt_axes)
        export(StaticCachePrompt(half, MAX_LENGTH).eval().half().cuda(), (prompt.cuda(), *args16[1:]),
               f"{out}/gpt2_prompt_fp16.onnx", step_in, step_out, prompt_axes)

    # The dynamic past/present model, float32 and float16.
    dyn_in = ["input_ids", "attention_mask"] + cache_names("past", layers)
    dyn_out = ["logits"] + cache_names("present", layers)
    axes = {"input_ids": {1: "sequence"}, "attention_mask": {1: "total"}, "logits": {1: "sequence"}}
    for name in cache_names("past", layers):
        axes[name] = {2: "past"}
    for name in cache_names("present", layers):
        axes[name] = {2: "total"}
    past = [torch.randn(1, heads, 4, head_size) for _ in range(2 * layers)]
    ids = torch.tensor([[11, 22]])
    mask = torch.ones(1, 6, dtype=torch.int64)
    with torch.no_grad():
        export(DynamicStep(make_model()), (ids, mask, *past), f"{out}/gpt2_dynamic.onnx", dyn_in, dyn_out, axes)
        export(DynamicStep(half), (ids.cuda(), mask.cuda(), *[p.half().cuda() for p in past]),
               f"{out}/gpt2_dynamic_fp16.onnx", dyn_in, dyn_out, axes)
    with open(f"{out}/generation_reference.json", "w") as f:
        json.dump(reference, f)
    for key in ("prompt", "fp32_cpu", "fp32_cuda", "fp16_cuda"):  # plain token lists for the C++ benches
        with open(f"{out}/tokens_{key}.txt", "w") as f:
            f.write(" ".join(str(t) for t in reference[key]) + "\n")
    check_with_onnxruntime(reference, layers, heads, head_size)


def check_with_onnxruntime(reference, layers, heads, head_size):
    import onnxruntime as ort
    # The static steps, greedy, float32: must give PyTorch's tokens.
    for name in ("gpt2_decode", "gpt2_decode_blend"):
        s = ort.InferenceSession(f"{out}/{name}.onnx", providers=["CPUExecutionProvider"])
        caches = [np.zeros((1, heads, MAX_LENGTH, head_size), np.float32) for _ in range(2 * layers)]
        names = [i.name for i in s.get_inputs()]
        prompt, tokens, token = reference["prompt"], [], None
        for t in range(PROMPT + NEW - 1):
            token = prompt[t] if t < PROMPT else token
            r = s.run(None, dict(zip(names, [np.array([[token]]), np.array([t])] + caches)))
            token, caches = int(r[0][0, 0]), list(r[2:])
            if t >= PROMPT - 1:
                tokens.append(token)
        print(f"{name} on ONNX Runtime (CPU) gives PyTorch's fp32 tokens:", tokens == reference["fp32_cpu"],
              "first difference at",
              next((i for i, (a, b) in enumerate(zip(tokens, reference["fp32_cpu"])) if a != b), None), flush=True)
    # The prompt model: the whole prompt in one run, then the step; must give PyTorch's tokens too.
    p = ort.InferenceSession(f"{out}/gpt2_prompt.onnx", providers=["CPUExecutionProvider"])
    s = ort.InferenceSession(f"{out}/gpt2_decode.onnx", providers=["CPUExecutionProvider"])
    names = [i.name for i in s.get_inputs()]
    caches = [np.zeros((1, heads, MAX_LENGTH, head_size), np.float32) for _ in range(2 * layers)]
    r = p.run(None, dict(zip(names, [np.array([reference["prompt"]]), np.array([0])] + caches)))
    tokens, caches = [int(r[0][0, 0])], list(r[2:])
    for t in range(PROMPT, PROMPT + NEW - 1):
        r = s.run(None, dict(zip(names, [np.array([[tokens[-1]]]), np.array([t])] + caches)))
        tokens.append(int(r[0][0, 0]))
        caches = list(r[2:])
    print("gpt2_prompt + gpt2_decode on ONNX Runtime (CPU) give PyTorch's fp32 tokens:",
          tokens == reference["fp32_cpu"], flush=True)
    # The dynamic model at two cache lengths against PyTorch's logits.
    d = ort.InferenceSession(f"{out}/gpt2_dynamic.onnx", providers=["CPUExecutionProvider"])
    hf = make_model()
    for past_length, seq in ((0, PROMPT), (37, 1)):
        past = [np.random.RandomState(past_length + i).randn(1, heads, past_length, head_size).astype(np.float32)
                for i in range(2 * layers)]
        ids = np.random.RandomState(3).randint(0, 50257, (1, seq)).astype(np.int64)
        mask = np.ones((1, past_length + seq), np.int64)
        names = [i.name for i in d.get_inputs()]
        logits = d.run(["logits"], dict(zip(names, [ids, mask] + past)))[0]
        with torch.no_grad():
            expected = DynamicStep(hf)(torch.from_numpy(ids), torch.from_numpy(mask),
                                       *[torch.from_numpy(p) for p in past])[0].numpy()
        print(f"dynamic model, past {past_length}, {seq} tokens: max |ORT - PyTorch| logits",
              float(np.abs(logits - expected).max()), flush=True)


if __name__ == "__main__":
    out = sys.argv[1]
    MAX_LENGTH = int(sys.argv[2]) if len(sys.argv) > 2 else MAX_LENGTH
    os.makedirs(out, exist_ok=True)
    main()
