"""onnxruntime's `disabled_optimizers` argument of InferenceSession: Tessera pass names and onnxruntime transformer
names (translated to the Tessera pass doing that work) turn passes off for that session; names without a
counterpart are ignored with a warning, as onnxruntime ignores names it does not have. The optimized model that
optimized_model_filepath writes shows which passes ran."""
import warnings

import numpy as np
import onnx
import pytest

import tessera

import onnx_models


def optimized_ops(tmp_path, **kwargs):
    options = tessera.SessionOptions()
    options.optimized_model_filepath = str(tmp_path / "optimized.onnx")
    session = tessera.InferenceSession(onnx_models.silu(), options, providers=["CPUExecutionProvider"], **kwargs)
    x = np.linspace(-3, 3, 16, dtype=np.float32).reshape(2, 8)
    (y,) = session.run(None, {"X": x})
    np.testing.assert_allclose(y, x / (1 + np.exp(-x)), rtol=1e-5, atol=1e-6)
    return [n.op_type for n in onnx.load(options.optimized_model_filepath).graph.node], options


def test_silu_is_fused_by_default(tmp_path):
    ops, _ = optimized_ops(tmp_path)
    assert ops == ["QuickGelu"]


@pytest.mark.parametrize("name", ["silu_fusion", "QuickGeluFusion"])
def test_a_tessera_or_onnxruntime_name_disables_the_pass(tmp_path, name):
    ops, options = optimized_ops(tmp_path, disabled_optimizers=[name])
    assert ops == ["Sigmoid", "Mul"]
    # The caller's SessionOptions are not changed.
    with pytest.raises(Exception, match="session.disabled_optimizers"):
        options.get_session_config_entry("session.disabled_optimizers")


def test_names_without_a_counterpart_are_ignored_with_a_warning(tmp_path):
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        ops, _ = optimized_ops(tmp_path, disabled_optimizers={"EliminateDropout"})
    assert ops == ["QuickGelu"]
    assert any("EliminateDropout" in str(w.message) for w in caught)


def test_adds_to_what_the_session_options_disable(tmp_path):
    options = tessera.SessionOptions()
    options.add_session_config_entry("session.disabled_optimizers", "gelu_fusion")
    options.optimized_model_filepath = str(tmp_path / "optimized.onnx")
    tessera.InferenceSession(onnx_models.silu(), options, providers=["CPUExecutionProvider"],
                             disabled_optimizers=["silu_fusion"])
    assert [n.op_type for n in onnx.load(options.optimized_model_filepath).graph.node] == ["Sigmoid", "Mul"]
    assert options.get_session_config_entry("session.disabled_optimizers") == "gelu_fusion"
