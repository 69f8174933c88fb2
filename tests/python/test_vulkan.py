"""The Vulkan EP from Python: providers=["VulkanExecutionProvider", ...] as with any onnxruntime EP.

Each check runs in a subprocess with TESSERA_VULKAN_SOFTWARE_DEVICES=1, so that the software Vulkan device CI has
(Mesa's lavapipe) is listed there while the other tests keep their provider lists. Skipped where the package has no
Vulkan plugin or no Vulkan device exists."""

import os
import subprocess
import sys

import pytest

_HERE = os.path.dirname(os.path.abspath(__file__))

_SCRIPT = r"""
import numpy as np
import tessera as ort
import onnx_models

VULKAN, CPU = "VulkanExecutionProvider", "CPUExecutionProvider"
if VULKAN not in ort.get_available_providers():
    print("NO_VULKAN", ort.get_available_providers())
    raise SystemExit(0)
assert VULKAN in ort.get_all_providers()
devices = [d for d in ort.get_ep_devices() if d.ep_name == VULKAN]
assert devices and "vulkan_device_type" in devices[0].device.metadata, devices

rng = np.random.default_rng(0)
model = onnx_models.conv_image(channels=3)
session = ort.InferenceSession(model, providers=[VULKAN, CPU])
assert session.get_providers()[0] == VULKAN, session.get_providers()
reference = ort.InferenceSession(model, providers=[CPU])
feeds = {i.name: rng.standard_normal([d if isinstance(d, int) else 8 for d in i.shape], dtype=np.float32)
         for i in session.get_inputs()}
got = session.run(None, feeds)
want = reference.run(None, feeds)
for g, w in zip(got, want):
    np.testing.assert_allclose(g, w, rtol=1e-4, atol=1e-5)

a = rng.standard_normal((2, 3), dtype=np.float32)
add_relu = ort.InferenceSession(onnx_models.add_relu(), providers=[VULKAN, CPU])
names = [i.name for i in add_relu.get_inputs()]
s, y = add_relu.run(None, {names[0]: a, names[1]: a})
np.testing.assert_allclose(s, a + a, rtol=1e-6)
np.testing.assert_allclose(y, np.maximum(a + a, 0), rtol=1e-6)

try:
    ort.InferenceSession(model, providers=[(VULKAN, {"no_such_option": "1"}), CPU])
    raise AssertionError("an unknown provider option was accepted")
except Exception as error:  # the message names the option
    assert "no_such_option" in str(error), error
print("VULKAN_OK")
"""


def test_vulkan_provider_runs_models_like_the_cpu():
    env = dict(os.environ, TESSERA_VULKAN_SOFTWARE_DEVICES="1", PYTHONPATH=os.pathsep.join(p for p in sys.path if p))
    result = subprocess.run([sys.executable, "-c", _SCRIPT], cwd=_HERE, env=env, capture_output=True, text=True,
                            timeout=300)
    if "NO_VULKAN" in result.stdout:
        pytest.skip("no Vulkan EP device here: " + result.stdout.strip())
    assert result.returncode == 0, result.stdout + result.stderr
    assert "VULKAN_OK" in result.stdout, result.stdout + result.stderr
