"""Compatibility with scripts that import from onnxruntime.capi."""
