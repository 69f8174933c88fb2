"""Real models from the corpus (bench/corpus/models.tsv) against ONNX Runtime's outputs recorded on the same
inputs (tests/python/data/corpus/*.reference.json, written by bench/corpus/record_reference.mjs with
onnxruntime-node 1.30). The small models run here; scripts/test.sh fetches them (scripts/fetch_corpus.sh)."""
import json
import math
import pathlib

import numpy as np
import pytest

import tessera

REPO = pathlib.Path(__file__).resolve().parents[2]
REFERENCES = sorted((REPO / "tests/python/data/corpus").glob("*.reference.json"))


def make_inputs(spec):
    feeds = {}
    for name, meta in spec.items():
        shape = meta["shape"]
        count = math.prod(shape)
        if meta["type"] == "int64":
            feeds[name] = np.full(shape, int(meta["fill"] or 0), dtype=np.int64)
        elif meta["fill"] is not None:
            feeds[name] = np.full(shape, meta["fill"], dtype=np.float32)
        else:
            u = (1103515245 * np.arange(count, dtype=np.int64) + 12345 + 7919 * meta["index"]) % 2147483648
            feeds[name] = (u / 1073741824.0 - 1.0).astype(np.float32).reshape(shape)
    return feeds


@pytest.mark.parametrize("reference", REFERENCES, ids=lambda p: p.name.split(".")[0])
def test_matches_onnxruntime(reference):
    name = reference.name.split(".")[0]
    model = REPO / ".models/corpus" / f"{name}.onnx"
    if not model.exists():
        pytest.skip(f"{model} is not fetched (bash scripts/fetch_corpus.sh {name}; scripts/test.sh does it)")
    recorded = json.loads(reference.read_text())
    session = tessera.InferenceSession(str(model), providers=["CPUExecutionProvider"])
    names = list(recorded["outputs"])
    actual = session.run(names, make_inputs(recorded["inputs"]))
    for output, value in zip(names, actual):
        expected = np.array(recorded["outputs"][output]["values"], dtype=np.float64).reshape(
            recorded["outputs"][output]["shape"])
        assert value.shape == expected.shape, output
        scale = max(np.abs(expected).max(), 1e-30)
        relative = np.abs(value.astype(np.float64) - expected).max() / scale
        assert relative <= 1e-4, f"{name}: output {output} differs from ONNX Runtime by {relative:.2e} (relative)"
