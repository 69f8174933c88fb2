# Session 16: models as ONNX Runtime's transformer optimizer writes them (com.microsoft Attention,
# EmbedLayerNormalization, SkipLayerNormalization, BiasGelu/FastGelu, ...) run through Tessera's CPU and CUDA EPs
# against ONNX Runtime 1.30's CPU EP on the same inputs.
import collections, sys, time
import numpy as np
import onnx
import onnxruntime as ort
import tessera

src, dst, model_type, heads, hidden = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4]), int(sys.argv[5])
mha = len(sys.argv) > 6 and sys.argv[6] == "mha"
from onnxruntime.transformers.optimizer import optimize_model
from onnxruntime.transformers.fusion_options import FusionOptions
options = FusionOptions(model_type)
if mha: options.use_multi_head_attention = True
opt = optimize_model(src, model_type=model_type, num_heads=heads, hidden_size=hidden, opt_level=0, use_gpu=mha,
                     optimization_options=options)
opt.save_model_to_file(dst)
m = onnx.load(dst)
ops = collections.Counter((n.domain or "ai.onnx") + "::" + n.op_type for n in m.graph.node)
print("ops:", dict(ops))
rng = np.random.default_rng(0)
ref = ort.InferenceSession(dst, providers=["CPUExecutionProvider"])
feeds = {}
for i in ref.get_inputs():
    shape = [d if isinstance(d, int) else (2 if "batch" in str(d) else 64) for d in i.shape]
    if "int" in i.type:
        dt = np.int64 if "int64" in i.type else np.int32
        if "mask" in i.name:
            v = np.ones(shape)
            if len(shape) == 2 and shape[0] > 1: v[1, shape[1] * 5 // 8:] = 0  # right padding in the second row
        elif "token_type" in i.name or "segment" in i.name:
            v = np.zeros(shape)
        else:
            v = rng.integers(0, 1000, size=shape)
        feeds[i.name] = v.astype(dt)
    else:
        feeds[i.name] = rng.standard_normal(shape).astype(np.float32) * 0.1
    print("input", i.name, i.type, shape)
want = ref.run(None, feeds)
for providers in (["CPUExecutionProvider"], ["CUDAExecutionProvider", "CPUExecutionProvider"]):
    try:
        s = tessera.InferenceSession(dst, providers=providers)
        got = s.run(None, feeds)
        t0 = time.perf_counter()
        for _ in range(20): s.run(None, feeds)
        ms = (time.perf_counter() - t0) / 20 * 1e3
        diffs = [float(np.abs(g.astype(np.float64) - w).max() / max(np.abs(w).max(), 1e-30)) for g, w in zip(got, want)]
        print(providers[0], "max rel diff per output", ["%.2e" % d for d in diffs], "run %.2f ms" % ms)
    except Exception as e:
        print(providers[0], "FAILED:", str(e)[:600])
