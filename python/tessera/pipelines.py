"""Device pipelines: a model over an image too large for one run, tile by tile, with copies and compute overlapped.

    import tessera
    session = tessera.InferenceSession("denoise.onnx", providers=["CUDAExecutionProvider"])
    tiles = tessera.TilePipeline(session, tile=1024, halo=8)
    restored = tiles.run(image)          # image: numpy [1, C, H, W]; restored: numpy, the model's output over it
    print(tiles.stats)                   # tiles, seconds, host staging / blending / waiting seconds

See include/tessera/tile_pipeline.h and docs/PIPELINES.md for the tiling, blending and ring.
"""

from . import _tessera


class TilePipeline:
    """Runs `session`'s model over the last two axes of an image in tiles of `tile` (an int or (height, width))
    with `halo` pixels of context per side.

    blend: "crop" (each output pixel from the tile whose core holds it; exact when the model's receptive-field
    radius is <= halo) or "linear" (ramps over the overlap; float32 outputs). ring_depth: tiles in flight on the
    device. host_threads: threads for staging windows and as many for blending. constant_inputs: other model inputs
    (name -> numpy array or OrtValue), the same for every tile. sequential / stages ("all", "copies_only",
    "compute_only") exist for measuring the overlap. trace_file: a Chrome trace of each run, one track per stream.
    """

    def __init__(self, session, tile=512, halo=0, ring_depth=4, blend="crop", input_name="", output_name="",
                 host_threads=4, constant_inputs=None, sequential=False, stages="all", trace_file=""):
        if isinstance(tile, int):
            tile = (tile, tile)
        native = getattr(session, "_sess", session)
        self._session = session  # the pipeline runs the session's model: keep it alive
        self._pipeline = _tessera._TilePipeline(
            native, tuple(tile), halo, ring_depth, blend, input_name or "", output_name or "", host_threads,
            dict(constant_inputs or {}), sequential, stages, trace_file or "")

    def run(self, image, output=None):
        """The model's output over the whole image: a numpy array in host memory, or `output` (an OrtValue of the
        output's type and shape, see output_shape) filled in place and returned.

        `image` is a numpy array or an OrtValue. An image (an output) in the device's pinned or device memory
        (OrtValue.ortvalue_from_numpy(array, "cuda_pinned", 0), "cuda", ...) is copied to (from) the device tile by
        tile as 2-D regions, with no host staging (blending) copy; stats says which path ran. Outputs in device
        memory need blend="crop"."""
        return self._pipeline.run(image, output)

    def output_shape(self, image_shape):
        """The output's shape for an image shape (runs the first tile once when it is not known yet)."""
        return tuple(self._pipeline.output_shape(list(image_shape)))

    @property
    def stats(self):
        """The last run: tiles, window, input_bytes, output_bytes, seconds, stage_seconds, blend_seconds,
        wait_seconds, on_device, direct_upload, direct_download."""
        return self._pipeline.stats()

    @property
    def trace(self):
        """The last run's spans (track, name, tile, start_us, end_us) when trace_file is set."""
        return self._pipeline.trace()


class GenerationLoop:
    """Greedy (or the model's own sampling) decoding whose key/value cache never leaves the device.

        session = tessera.InferenceSession("gpt2_decode_fp16.onnx", providers=[
            ("CUDAExecutionProvider", {"enable_cuda_graph": "1"})])
        loop = tessera.GenerationLoop(session)
        tokens = loop.generate([464, 2068, 318], 128)      # the 128 new token ids

    The model is one decoding step with fixed shapes (scripts/gpu_host/export_generation.py exports GPT-2's):
    inputs input_ids [batch, 1], position [1] and the caches past_* preallocated at the maximum length; outputs
    next_token [batch, 1], next_position [1] and present_*, each cache with this step's row written at `position`.
    The caches are bound as both past and present, so each step writes one row in place; with enable_cuda_graph=1
    every step replays one captured graph and only the token (8 bytes) reaches the host. `names` renames the
    inputs and outputs (keys input_ids, position, next_token, next_position, past_prefix, present_prefix).

    The prompt goes through `prompt_session` in one run when given (the same model over input_ids [batch, S]:
    the prompt's S tokens at positions position .. position + S - 1, next_token from the last one; a fixed S takes
    the prompt S tokens per run), or through `session` itself when its input_ids has a symbolic sequence axis;
    otherwise one token per step. See include/tessera/generation_loop.h and docs/PIPELINES.md.
    """

    def __init__(self, session, names=None, cache_length_axis=2, eos_token=-1, use_graphs=True,
                 prompt_session=None):
        native = getattr(session, "_sess", session)
        self._session, self._prompt_session = session, prompt_session
        prompt_native = None if prompt_session is None else getattr(prompt_session, "_sess", prompt_session)
        self._loop = _tessera._GenerationLoop(native, dict(names or {}), cache_length_axis, eos_token, use_graphs,
                                              prompt_native)

    def generate(self, prompt, max_new_tokens):
        """The new tokens after `prompt` (a list of ids; a list of such lists for a batch larger than 1): up to
        max_new_tokens, fewer when every sequence produced eos_token (which is then the last)."""
        prompts = list(prompt)
        batched = len(prompts) > 0 and not isinstance(prompts[0], int) and hasattr(prompts[0], "__len__")
        result = self._loop.generate([list(map(int, p)) for p in prompts] if batched else [list(map(int, prompts))],
                                     int(max_new_tokens))
        return result if batched else result[0]

    @property
    def max_length(self):
        """How many tokens (prompt and new) the caches hold."""
        return self._loop.max_length

    @property
    def batch(self):
        return self._loop.batch

    @property
    def stats(self):
        """The last generate: prompt_tokens, new_tokens, steps (runs), prompt_runs (of the prompt model),
        graph_replays, total_ms."""
        return self._loop.stats()
