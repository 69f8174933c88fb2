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

    def run(self, image):
        """The model's output over the whole image (a numpy array in host memory)."""
        return self._pipeline.run(image)

    def output_shape(self, image_shape):
        """The output's shape for an image shape (runs the first tile once when it is not known yet)."""
        return tuple(self._pipeline.output_shape(list(image_shape)))

    @property
    def stats(self):
        """The last run: tiles, window, input_bytes, output_bytes, seconds, stage_seconds, blend_seconds,
        wait_seconds, on_device."""
        return self._pipeline.stats()

    @property
    def trace(self):
        """The last run's spans (track, name, tile, start_us, end_us) when trace_file is set."""
        return self._pipeline.trace()
