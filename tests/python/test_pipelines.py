"""Device pipelines from Python: TilePipeline, and RunOptions.stream ordering runs with an OrtSyncStream."""

import json

import numpy as np
import pytest

from helpers import requires_testing_ep
import onnx_models
import tessera as ort


def _image(channels, height, width, seed=0):
    return np.random.default_rng(seed).standard_normal((1, channels, height, width)).astype(np.float32)


def test_tiles_with_a_halo_equal_one_run_on_the_cpu():
    session = ort.InferenceSession(onnx_models.conv_image(), providers=["CPUExecutionProvider"])
    image = _image(3, 70, 95)
    (whole,) = session.run(None, {"X": image})
    tiles = ort.TilePipeline(session, tile=(24, 32), halo=2)
    assert tiles.output_shape(image.shape) == (1, 3, 70, 95)
    np.testing.assert_allclose(tiles.run(image), whole, atol=1e-5)
    stats = tiles.stats
    assert stats["tiles"] == 3 * 3 and stats["window"] == (28, 36) and not stats["on_device"]
    no_context = ort.TilePipeline(session, tile=(24, 32), halo=0)
    assert np.abs(no_context.run(image) - whole).max() > 1e-3  # the seams show without a halo


@requires_testing_ep
def test_ring_on_the_simulated_device_traces_every_stream(tmp_path):
    session = ort.InferenceSession(onnx_models.pointwise_image(), providers=["TestingExecutionProvider"])
    image = _image(2, 50, 61, seed=1)
    expected = np.maximum(image, 0) * image + image
    trace = tmp_path / "tiles.json"
    tiles = ort.TilePipeline(session, tile=16, halo=2, ring_depth=3, blend="linear", trace_file=str(trace))
    np.testing.assert_allclose(tiles.run(image), expected, rtol=1e-6, atol=1e-6)
    assert tiles.stats["on_device"] and tiles.stats["tiles"] == 4 * 4
    tracks = {span[0] for span in tiles.trace}
    assert {"host", "upload", "compute", "download", "blend"} <= tracks
    names = {e["args"]["name"] for e in json.loads(trace.read_text())["traceEvents"] if e["ph"] == "M"}
    assert {"upload", "compute", "download"} <= names


def test_bad_arguments_raise_with_the_reason():
    session = ort.InferenceSession(onnx_models.pointwise_image(), providers=["CPUExecutionProvider"])
    with pytest.raises(ValueError, match="blend must be"):
        ort.TilePipeline(session, blend="feather")
    with pytest.raises(ort.InvalidArgument, match="ring_depth"):
        ort.TilePipeline(session, ring_depth=0)
    with pytest.raises(ort.InvalidArgument, match="no input 'image'"):
        ort.TilePipeline(session, input_name="image")
    tiles = ort.TilePipeline(session, tile=8)
    with pytest.raises(ort.InvalidArgument, match="takes float"):
        tiles.run(np.zeros((1, 2, 8, 8), np.int64))


@requires_testing_ep
def test_run_ordered_with_an_ortsyncstream_without_waiting():
    (device,) = [d for d in ort.get_ep_devices() if d.ep_name == "TestingExecutionProvider"]
    session = ort.InferenceSession(onnx_models.pointwise_image(), providers=["TestingExecutionProvider"])
    stream = device.create_sync_stream()
    host = _image(2, 6, 7, seed=2)
    x = ort.OrtValue.ortvalue_from_shape_and_type(host.shape, np.float32, "testing", 0)
    y = ort.OrtValue.ortvalue_from_shape_and_type(host.shape, np.float32, "testing", 0)
    back = ort.OrtValue.ortvalue_from_shape_and_type(host.shape, np.float32, "cpu", 0)
    binding = session.io_binding()
    binding.bind_ortvalue_input("X", x)
    binding.bind_ortvalue_output("Y", y)
    options = ort.RunOptions()
    options.stream = stream
    assert options.stream is stream
    options.add_run_config_entry("disable_synchronize_execution_providers", "1")
    for scale in (1.0, -2.0):  # the application writes x, the run reads it, the application reads y: one stream
        ort.copy_tensors([ort.OrtValue.ortvalue_from_numpy(scale * host)], [x], stream)
        session.run_with_iobinding(binding, options)
        ort.copy_tensors([y], [back], stream)
        stream.synchronize()
        v = scale * host
        np.testing.assert_array_equal(back.numpy(), np.maximum(v, 0) * v + v)
    options.stream = None
    assert options.stream is None
