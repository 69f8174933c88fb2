"""Device pipelines from Python: TilePipeline, and RunOptions.stream ordering runs with an OrtSyncStream."""

import json
import pathlib

import numpy as np
import pytest

from helpers import requires_cuda, requires_testing_ep
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


@requires_testing_ep
def test_pinned_and_device_images_are_copied_as_regions():
    session = ort.InferenceSession(onnx_models.pointwise_image(), providers=["TestingExecutionProvider"])
    image = _image(2, 45, 38, seed=2)
    expected = np.maximum(image, 0) * image + image
    tiles = ort.TilePipeline(session, tile=16, halo=2, ring_depth=3)
    np.testing.assert_array_equal(tiles.run(image), expected)
    assert not tiles.stats["direct_upload"] and not tiles.stats["direct_download"]
    for device in ("testing_pinned", "testing"):
        placed = ort.OrtValue.ortvalue_from_numpy(image, device, 0)
        out = ort.OrtValue.ortvalue_from_shape_and_type(list(expected.shape), np.float32, device, 0)
        assert tiles.run(placed, out) is out
        assert tiles.stats["direct_upload"] and tiles.stats["direct_download"], device
        np.testing.assert_array_equal(out.numpy(), expected)
        # A device image into a host result: uploaded as regions, blended on the host.
        np.testing.assert_array_equal(tiles.run(placed), expected)
        assert tiles.stats["direct_upload"] and not tiles.stats["direct_download"], device
    with pytest.raises(TypeError, match="output must be an OrtValue"):
        tiles.run(image, np.zeros_like(expected))


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


TINY_DECODER = str(pathlib.Path(__file__).resolve().parents[2] / "examples" / "generation_loop" / "tiny_decoder.onnx")
# The same layers over a symbolic number of tokens (make_model.py --prompt): a prompt model.
TINY_PROMPT = str(pathlib.Path(TINY_DECODER).with_name("tiny_decoder_prompt.onnx"))


def _step_by_step(session, prompt, new_tokens):
    """The decoding loop with session.run: presents fed back as pasts, next_token as the next input."""
    caches = {i.name: np.zeros(i.shape, np.float32) for i in session.get_inputs() if i.name.startswith("past_")}
    names = [o.name for o in session.get_outputs()]
    tokens, token = [], prompt[0]
    for t in range(len(prompt) + new_tokens - 1):
        token = prompt[t] if t < len(prompt) else token
        out = dict(zip(names, session.run(None, {"input_ids": np.array([[token]], np.int64),
                                                 "position": np.array([t], np.int64), **caches})))
        token = int(out["next_token"][0, 0])
        caches = {name: out["present_" + name[len("past_"):]] for name in caches}
        if t + 1 >= len(prompt):
            tokens.append(token)
    return tokens


@pytest.mark.parametrize("provider", ["CPUExecutionProvider", "TestingExecutionProvider"])
def test_generation_loop_gives_the_tokens_of_a_step_by_step_loop(provider):
    if provider not in ort.get_available_providers():
        pytest.skip(f"{provider} is not available in this build")
    session = ort.InferenceSession(TINY_DECODER, providers=[provider])
    prompt = [5, 17, 3, 40]
    loop = ort.GenerationLoop(session)
    assert loop.max_length == 48 and loop.batch == 1
    tokens = loop.generate(prompt, 20)
    assert tokens == _step_by_step(session, prompt, 20)
    assert loop.stats["steps"] == len(prompt) + 20 - 1 and loop.stats["new_tokens"] == 20
    eos = tokens[6]
    stopping = ort.GenerationLoop(session, eos_token=eos)
    assert stopping.generate(prompt, 20) == tokens[: tokens.index(eos) + 1]
    with pytest.raises(Exception, match="need 52 cache positions; the caches hold 48"):
        loop.generate(prompt, 49)


@pytest.mark.parametrize("provider", ["CPUExecutionProvider", "TestingExecutionProvider"])
def test_generation_loop_takes_the_prompt_in_one_run_of_a_prompt_model(provider):
    if provider not in ort.get_available_providers():
        pytest.skip(f"{provider} is not available in this build")
    step = ort.InferenceSession(TINY_DECODER, providers=[provider])
    prompt_model = ort.InferenceSession(TINY_PROMPT, providers=[provider])
    prompt = [5, 17, 3, 40, 9, 11]
    expected = _step_by_step(step, prompt, 20)
    loop = ort.GenerationLoop(step, prompt_session=prompt_model)
    assert loop.generate(prompt, 20) == expected
    assert loop.stats["prompt_runs"] == 1 and loop.stats["steps"] == 1 + 19
    # A step model with a symbolic sequence axis is its own prompt model.
    own = ort.GenerationLoop(prompt_model)
    assert own.generate(prompt, 20) == expected
    assert own.stats["prompt_runs"] == 1


@requires_cuda
def test_generation_loop_on_cuda_replays_a_graph_per_step():
    session = ort.InferenceSession(TINY_DECODER, providers=[("CUDAExecutionProvider",
                                                            {"enable_cuda_graph": "1", "use_tf32": "0"})])
    cpu = ort.InferenceSession(TINY_DECODER, providers=["CPUExecutionProvider"])
    loop = ort.GenerationLoop(session)
    prompt = [1, 2, 3]
    assert loop.generate(prompt, 30) == _step_by_step(cpu, prompt, 30)
    assert loop.stats["graph_replays"] == loop.stats["steps"] - 2


@requires_cuda
def test_generation_loop_on_cuda_takes_the_prompt_in_one_run_then_replays_graphs():
    session = ort.InferenceSession(TINY_DECODER, providers=[("CUDAExecutionProvider",
                                                            {"enable_cuda_graph": "1", "use_tf32": "0"})])
    prompt_model = ort.InferenceSession(TINY_PROMPT, providers=[("CUDAExecutionProvider", {"use_tf32": "0"})])
    cpu = ort.InferenceSession(TINY_DECODER, providers=["CPUExecutionProvider"])
    loop = ort.GenerationLoop(session, prompt_session=prompt_model)
    prompt = [4, 8, 15, 16, 23, 42]
    assert loop.generate(prompt, 30) == _step_by_step(cpu, prompt, 30)
    assert loop.stats["prompt_runs"] == 1 and loop.stats["steps"] == 30
    assert loop.stats["graph_replays"] == loop.stats["steps"] - 1 - 2
