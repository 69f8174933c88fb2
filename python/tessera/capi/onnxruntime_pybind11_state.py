"""The names onnxruntime.capi.onnxruntime_pybind11_state exports that scripts catch or use."""

from .._tessera import (  # noqa: F401
    Fail,
    InvalidArgument,
    InvalidGraph,
    InvalidProtobuf,
    NoSuchFile,
    NotImplemented,
    OrtValue,
    RunOptions,
    RuntimeException,
    SessionOptions,
)
